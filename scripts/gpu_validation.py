#!/usr/bin/env python3
"""fastload's GPU claims checked on a CUDA machine, in one call of under ten minutes.

    python scripts/gpu_validation.py --out DIR [--budget-s 540] [--only STEP,...] [--zoo-repeats 3]
                                      [--zoo-cases a,b] [--dry-run]

The steps, most telling first, so that a run its budget cuts short still says the most (a step
left out for lack of time is named as such; ``--only`` runs it in a second call):

  gpu-tests        the tests marked gpu: tests/e2e/test_gpu.py and the CUDA prefetcher's unit test
  truth            scripts/bench_gpu_truth.py: the transfer case in plain runs, as written, pinned, more workers
  gpu-zoo          scripts/bench_accuracy.py on the four GPU cases, 3 repeats (--zoo-repeats), reports kept
  transfer-fixes   fastload try on the gpu-transfer case, --fix pin-memory --fix cuda-prefetch
  prefetchers      scripts/bench_prefetch.py: fastload's CudaPrefetcher against apex's data_prefetcher
  example-NAME     fastload diagnose of each bundled example, training on the GPU (--device cuda)

Into DIR go a log per step, each step's reports and traces, and summary.json and summary.md: the
device, driver, CUDA, torch and date, every command with its exit status and time, and what each
step found (verdicts, NVML's readings, the fixes' gains, the prefetchers' throughput).

It needs only what the GPU machine's image holds (torch, torchvision, typer, rich, psutil,
nvidia-ml-py, pytest, pytest-timeout, hypothesis); anything missing is named before a step runs.
On the device machine, which brings back at most eight files, from the repository's root:

    python3 scripts/gpu_validation.py --out /tmp/gpu; tar czf $OUT/gpu.tgz -C /tmp gpu; cp /tmp/gpu/summary.md $OUT/

--dry-run (the test suite runs it; no GPU needed): every command is checked to parse (fastload's
commands by fastload's own parser, the benchmarks by their --dry-run, the tests by pytest
collecting them) and every file it names to exist; nothing is measured.

Exit status: 0 when every step passed (dry: every command checked), 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpu_findings import findings, machine, summary_markdown

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted(p.stem for p in (ROOT / "fastload_cli" / "examples").glob("[!_]*.py"))
GPU_CASES = "gpu-transfer,gpu-tiny-kernels,gpu-large-model,gpu-input-bound"
NEEDED = ("torch", "torchvision", "typer", "rich", "psutil", "pynvml", "pytest", "pytest_timeout", "hypothesis")
DEFAULT_BUDGET_S = 540.0  # the device machine allows a command ten minutes
MIN_STEP_S = 15.0  # less time than this left: the step is not started


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    timeout_s: float


@dataclass
class Done:
    """One step's outcome: ``status`` is passed, checked (dry), failed (...), timed out or not run (...)."""

    step: str
    command: str
    status: str
    wall_s: float | None = None
    found: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "checked")


def fastload(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "fastload_cli", *args)


def plan(out: Path, zoo_repeats: int = 3, zoo_cases: str = GPU_CASES) -> list[Step]:
    """Every step, in the order they run; what they write goes under ``out``."""
    py = sys.executable
    tests = ("tests/e2e/test_gpu.py", "tests/unit/test_fixes.py")
    transfer = ("scripts/zoo/gpu_transfer.py", "--fix", "pin-memory", "--fix", "cuda-prefetch")
    zoo = ("--repeats", str(zoo_repeats), "--cases", zoo_cases, "--out", str(out / "gpu-zoo.json"))
    prefetch = ("--rounds", "3", "--out", str(out / "prefetchers.json"))
    on_gpu = ("-q", "--", "--device", "cuda")
    return [
        Step("gpu-tests", (py, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "-q", *tests), 180),
        Step("truth", (py, "scripts/bench_gpu_truth.py", "--out", str(out / "truth.json")), 120),
        Step("gpu-zoo", (py, "scripts/bench_accuracy.py", *zoo, "--reports", str(out / "zoo")), 100 * zoo_repeats),
        Step("transfer-fixes", fastload("try", *transfer, *outputs(out, "transfer-fixes"), "-q"), 150),
        Step("prefetchers", (py, "scripts/bench_prefetch.py", *prefetch), 150),
        *(
            Step(
                f"example-{n}",
                fastload("diagnose", f"fastload_cli/examples/{n}.py", *outputs(out, f"example-{n}"), *on_gpu),
                90,
            )
            for n in EXAMPLES
        ),
    ]


def outputs(out: Path, name: str) -> tuple[str, ...]:
    return ("--json", str(out / f"{name}.json"), "--trace", str(out / f"{name}.trace.json"))


def step_env() -> dict[str, str]:
    """This checkout's fastload_cli importable without installing it; output unbuffered for the logs."""
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    return dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1", COLUMNS="120")


def execute(step: Step, out: Path, deadline: float) -> Done:
    """Run ``step``, its output into DIR/NAME.log, stopped (its whole process group) at its time limit."""
    done = Done(step.name, shlex.join(step.argv), "not run: the budget was spent")
    if deadline - time.monotonic() < MIN_STEP_S:
        return done
    limit = min(step.timeout_s, deadline - time.monotonic())
    print(f"{step.name}: {done.command}", flush=True)
    started = time.monotonic()
    with (out / f"{step.name}.log").open("w") as log, group(step.argv, log) as process:
        try:
            code = process.wait(timeout=limit)
            done.status = "passed" if code == 0 else f"failed (exit {code})"
        except subprocess.TimeoutExpired:
            done.status = f"timed out after {limit:.0f} s"
    done.wall_s = round(time.monotonic() - started, 1)
    done.found = findings(step.name, out)
    print(f"{step.name}: {done.status} in {done.wall_s} s", flush=True)
    return done


@contextlib.contextmanager
def group(argv: tuple[str, ...], log: Any) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` started in a process group of its own, which is killed whole on the way out (a time
    limit, Ctrl-C), so that no training run outlives the validation."""
    process = subprocess.Popen(
        argv, cwd=ROOT, env=step_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def dry_check(step: Step) -> Done:
    """Whether ``step`` would parse and start, with nothing measured."""
    done = Done(step.name, shlex.join(step.argv), "checked")
    missing = [a for a in step.argv[1:] if a.endswith(".py") and not a.startswith("-") and not (ROOT / a).is_file()]
    problem = f"missing files: {', '.join(missing)}" if missing else parse_problem(step.argv)
    if problem:
        done.status = f"failed ({problem})"
    print(f"{step.name}: {done.status}", flush=True)
    return done


def parse_problem(argv: tuple[str, ...]) -> str | None:
    """What is wrong with ``argv`` as its program would parse it, or None."""
    if argv[1:3] == ("-m", "fastload_cli"):
        return fastload_problem(argv[3:])
    probe = [*argv, "--collect-only"] if argv[1:3] == ("-m", "pytest") else [*argv, "--dry-run"]
    ran = subprocess.run(probe, cwd=ROOT, env=step_env(), capture_output=True, text=True, timeout=300)
    return None if ran.returncode == 0 else f"exit {ran.returncode}: {(ran.stderr or ran.stdout).strip()[-500:]}"


def fastload_problem(args: tuple[str, ...]) -> str | None:
    """fastload's own parser on ``args``: the command exists, every option and value is accepted.
    (Typer may bring its own copy of click, so its classes are reached through the command.)"""
    import typer.main

    sys.path.insert(0, str(ROOT))
    from fastload_cli.cli import app

    cli = typer.main.get_command(app)
    context = cli.context_class(cli, info_name="fastload")
    command = cli.get_command(context, args[0])  # type: ignore[attr-defined]
    if command is None:
        return f"fastload has no command {args[0]!r}"
    try:
        command.make_context(args[0], list(args[1:]), parent=context)
    except Exception as exc:  # click's usage errors, whichever click
        if not hasattr(exc, "format_message"):
            raise
        return f"fastload {args[0]}: {exc.format_message()}"
    return None


def missing_packages() -> list[str]:
    return [name for name in NEEDED if importlib.util.find_spec(name) is None]


def write_summary(out: Path, dry: bool, facts: dict[str, Any], done: list[Done]) -> None:
    document = {"dry_run": dry, "machine": facts, "steps": [asdict(d) for d in done]}
    (out / "summary.json").write_text(json.dumps(document, indent=2))
    (out / "summary.md").write_text(summary_markdown(document))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the folder for logs, reports and the summary (dry: optional)")
    parser.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S, help="stop starting steps after this")
    parser.add_argument("--only", help="comma-separated step names (default: all)")
    parser.add_argument("--zoo-repeats", type=int, default=3, help="diagnoses of each GPU zoo case (default 3)")
    parser.add_argument("--zoo-cases", default=GPU_CASES, help=f"the GPU zoo cases diagnosed (default {GPU_CASES})")
    parser.add_argument("--dry-run", action="store_true", help="check that every command parses and starts")
    args = parser.parse_args()
    if args.out is None and not args.dry_run:
        parser.error("--out is required, except with --dry-run")
    return args


def chosen(steps: list[Step], only: str | None) -> list[Step]:
    names = [s.name for s in steps]
    unknown = set((only or "").split(",")) - {"", *names}
    if unknown:
        raise SystemExit(f"unknown step(s): {', '.join(sorted(unknown))}; steps: {', '.join(names)}")
    return [s for s in steps if not only or s.name in only.split(",")]


def main() -> int:
    args = arguments()
    missing = missing_packages()
    if missing:
        print(f"missing Python packages: {', '.join(missing)}; carry them as wheels", file=sys.stderr)
        return 1
    facts = machine(ROOT)
    if not args.dry_run and not facts.get("cuda_available"):
        print("no CUDA GPU here (torch.cuda.is_available() is False); --dry-run checks the commands", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="fastload-gpu-validation-") as scratch:
        out = (args.out or Path(scratch)).resolve()  # a dry run without --out keeps nothing
        out.mkdir(parents=True, exist_ok=True)
        steps, done = chosen(plan(out, args.zoo_repeats, args.zoo_cases), args.only), []
        deadline = time.monotonic() + args.budget_s
        try:
            for step in steps:
                done.append(dry_check(step) if args.dry_run else execute(step, out, deadline))
        finally:
            if args.out is not None:
                write_summary(out, args.dry_run, facts, done)
                print(f"summary: {out / 'summary.md'}", flush=True)
    return 0 if len(done) == len(steps) and all(d.ok for d in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
