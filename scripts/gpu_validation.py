#!/usr/bin/env python3
"""fastload's GPU claims checked on a CUDA machine, in two calls that fit its time.

    python scripts/gpu_validation.py --out DIR [--call 1|2] [--budget-s S] [--only STEP,...]
                                      [--zoo-repeats 1] [--zoo-cases a,b] [--dry-run]

The device machine gives about 15 minutes, its start included, and a command at most 10. The
first call (``--call 1``, at most 8 minutes) runs what decides the most; the second (``--call 2``,
at most 4, within 30 s of the first while the machine is warm) the rest. Each step has a time
limit sized from the first run's timings, and the steps of a call add up to its budget at most
(``CALL_BUDGET_S``); the most telling run first, so that a call cut short still says the most (a
step left out for lack of time is named as such; ``--only`` runs it later).

  call 1
  gpu-tests        the tests marked gpu: tests/e2e/test_gpu.py and the CUDA prefetcher's unit test
  zoo-CASE         scripts/bench_accuracy.py on each GPU zoo case, once (--zoo-repeats), reports kept
  truth            scripts/bench_gpu_truth.py: the transfer case in plain runs, as written, pinned,
                   8 workers, uint8
  reference-cuda   fastload diagnose of torchvision's classification reference's shape on the GPU
  call 2
  transfer-fixes   fastload try on the gpu-transfer case, --fix pin-memory --fix cuda-prefetch
  prefetchers      scripts/bench_prefetch.py: fastload's CudaPrefetcher against apex's data_prefetcher
  example-NAME     fastload diagnose of each bundled example, training on the GPU (--device cuda)

Into DIR go a log per step, each step's reports and traces, and summary.json and summary.md: the
device, driver, CUDA, torch and date, every command with its exit status and time, and what each
step found (verdicts, NVML's readings, the fixes' gains, the prefetchers' throughput). The summary
is written again after every step, so a call the machine cuts short keeps what it finished.

It needs only what the GPU machine's image holds (torch, torchvision, typer, rich, psutil,
nvidia-ml-py, pytest, pytest-timeout, hypothesis); anything missing is named before a step runs.
On the device machine, which brings back at most eight files, from the repository's root:

    python3 scripts/gpu_validation.py --call 1 --out /tmp/g1; tar czf $OUT/g1.tgz -C /tmp g1; cp /tmp/g1/summary.md $OUT
    python3 scripts/gpu_validation.py --call 2 --out /tmp/g2; tar czf $OUT/g2.tgz -C /tmp g2; cp /tmp/g2/summary.md $OUT

--dry-run (.ci/run runs it; no GPU needed): the steps of both calls, every command checked to parse
(fastload's commands by fastload's own parser, the benchmarks by their --dry-run, the tests by
pytest collecting them), every file it names to exist, and each call's limits against its budget;
nothing is measured.

Exit status: 0 when every step passed (dry: every command checked and both calls fit), 1
otherwise, 2 for bad arguments.
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
# The device machine gives a session about 15 minutes, its start included, and a command at most
# 10: the validation is two calls, the first of at most 8 minutes with what decides the most and a
# second of at most 4 within 30 s of it (the machine stays warm that long). Each call's budget
# leaves room for Python's start and the summary inside those minutes.
CALL_BUDGET_S = {1: 465.0, 2: 225.0}
MIN_STEP_S = 15.0  # less time than this left: the step is not started


@dataclass(frozen=True)
class Step:
    name: str
    argv: tuple[str, ...]
    timeout_s: float
    call: int = 1  # which of the two calls runs it


@dataclass
class Done:
    """One step's outcome: ``status`` is passed, checked (dry), failed (...), timed out or not run (...)."""

    step: str
    command: str
    status: str
    call: int = 1
    limit_s: float | None = None
    wall_s: float | None = None
    found: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "checked")


def fastload(*args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "fastload_cli", *args)


def plan(out: Path, zoo_repeats: int = 1, zoo_cases: str = GPU_CASES) -> list[Step]:
    """Every step, in the order they run, each with its call and its time limit; what they write
    goes under ``out``. The limits come from the first run's timings on an H100 (the GPU tests
    61 s, gpu-tiny-kernels 26 s, gpu-transfer about 70 s a diagnose) where there are any."""
    return [*first_call(out, zoo_repeats, zoo_cases), *second_call(out)]


def first_call(out: Path, zoo_repeats: int, zoo_cases: str) -> list[Step]:
    """What decides the most: the GPU tests, each GPU zoo case once, the transfer case's truth by
    plain runs, and torchvision's classification reference's shape training on the GPU."""
    py = sys.executable
    tests = ("tests/e2e/test_gpu.py", "tests/unit/test_fixes.py")
    truth = ("--cases", "gpu-transfer", "--rounds", "2", "--out", str(out / "truth.json"))
    reference = ("diagnose", "scripts/zoo/reference_presets.py", *outputs(out, "reference-cuda"), "-q")
    on_gpu = ("--", "-j", "4", "--device", "cuda", "--samples", "2048")
    return [
        Step("gpu-tests", (py, "-m", "pytest", "-m", "gpu", "-p", "no:cacheprovider", "-q", *tests), 80),
        *(zoo_step(out, case, zoo_repeats) for case in zoo_cases.split(",")),
        Step("truth", (py, "scripts/bench_gpu_truth.py", *truth), 90),
        Step("reference-cuda", fastload(*reference, *on_gpu), 60),
    ]


# Each GPU zoo case's limit per diagnose: gpu-transfer and gpu-tiny-kernels as measured, with room;
# the two that did not fit the first run's shared 100 s, a minute each.
ZOO_LIMIT_S = {"gpu-transfer": 70, "gpu-tiny-kernels": 40, "gpu-large-model": 60, "gpu-input-bound": 60}


def zoo_step(out: Path, case: str, repeats: int) -> Step:
    """One GPU zoo case diagnosed ``repeats`` times, its rows and reports written when it ends."""
    argv = (sys.executable, "scripts/bench_accuracy.py", "--repeats", str(repeats), "--cases", case)
    kept = ("--out", str(out / f"zoo-{case}.json"), "--reports", str(out / "zoo"))
    return Step(f"zoo-{case}", (*argv, *kept), ZOO_LIMIT_S.get(case, 60) * repeats)


def second_call(out: Path) -> list[Step]:
    """The rest, within 30 s of the first call while the machine is warm: the fixes tried on the
    transfer case, the prefetchers, and the bundled examples training on the GPU."""
    py = sys.executable
    transfer = ("scripts/zoo/gpu_transfer.py", "--fix", "pin-memory", "--fix", "cuda-prefetch", "--max-batches", "20")
    prefetch = ("--rounds", "2", "--steps", "100", "--out", str(out / "prefetchers.json"))
    on_gpu = ("-q", "--max-batches", "20", "--no-sweep", "--", "--device", "cuda")
    return [
        Step("transfer-fixes", fastload("try", *transfer, *outputs(out, "transfer-fixes"), "-q"), 55, call=2),
        Step("prefetchers", (py, "scripts/bench_prefetch.py", *prefetch), 70, call=2),
        *(
            Step(
                f"example-{n}",
                fastload("diagnose", f"fastload_cli/examples/{n}.py", *outputs(out, f"example-{n}"), *on_gpu),
                25,
                call=2,
            )
            for n in EXAMPLES
        ),
    ]


def fit(steps: list[Step]) -> dict[str, str]:
    """Each call's steps' limits added up, against its budget."""
    return {
        f"call {call}": f"{sum(s.timeout_s for s in steps if s.call == call):.0f} s of steps in {budget:.0f} s"
        for call, budget in CALL_BUDGET_S.items()
    }


def over_budget(steps: list[Step]) -> list[str]:
    """The calls whose steps' limits add up past the call's budget: the plan must fit the machine."""
    return [
        f"call {call}: its steps' limits add up to {total:.0f} s, over its {budget:.0f} s"
        for call, budget in CALL_BUDGET_S.items()
        if (total := sum(s.timeout_s for s in steps if s.call == call)) > budget
    ]


def outputs(out: Path, name: str) -> tuple[str, ...]:
    return ("--json", str(out / f"{name}.json"), "--trace", str(out / f"{name}.trace.json"))


def step_env() -> dict[str, str]:
    """This checkout's fastload_cli importable without installing it; output unbuffered for the logs."""
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    return dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1", COLUMNS="120")


def execute(step: Step, out: Path, deadline: float) -> Done:
    """Run ``step``, its output into DIR/NAME.log, stopped (its whole process group) at its time limit."""
    done = Done(
        step.name, shlex.join(step.argv), "not run: the budget was spent", call=step.call, limit_s=step.timeout_s
    )
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
    done = Done(step.name, shlex.join(step.argv), "checked", step.call, step.timeout_s)
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
    parser.add_argument("--call", type=int, choices=sorted(CALL_BUDGET_S), default=1, help="which call's steps to run")
    parser.add_argument("--budget-s", type=float, help="stop starting steps after this (default: the call's budget)")
    parser.add_argument("--only", help="comma-separated step names, of either call (default: the call's steps)")
    parser.add_argument("--zoo-repeats", type=int, default=1, help="diagnoses of each GPU zoo case (default 1)")
    parser.add_argument("--zoo-cases", default=GPU_CASES, help=f"the GPU zoo cases diagnosed (default {GPU_CASES})")
    parser.add_argument("--dry-run", action="store_true", help="check both calls: every command, every time limit")
    args = parser.parse_args()
    if args.out is None and not args.dry_run:
        parser.error("--out is required, except with --dry-run")
    return args


def chosen(steps: list[Step], only: str | None, call: int | None) -> list[Step]:
    """The steps ``--only`` names, else those of ``call`` (every step for None: the dry run)."""
    names = [s.name for s in steps]
    unknown = set((only or "").split(",")) - {"", *names}
    if unknown:
        raise SystemExit(f"unknown step(s): {', '.join(sorted(unknown))}; steps: {', '.join(names)}")
    if only:
        return [s for s in steps if s.name in only.split(",")]
    return [s for s in steps if call is None or s.call == call]


def run_steps(steps: list[Step], out: Path | None, deadline: float, facts: dict[str, Any], dry: bool) -> list[Done]:
    """Each step in turn; the summary written again after each, so that a call cut short (the
    machine's limit, a kill) keeps every finished step's results. SIGTERM ends the call as Ctrl-C
    does, the running step's process group with it."""
    done: list[Done] = []
    signal.signal(signal.SIGTERM, _terminated)  # the machine's time limit ends the running step's group too
    for step in steps:
        done.append(dry_check(step) if dry else execute(step, out or Path(), deadline))
        if out is not None:
            write_summary(out, dry, facts, done)
    return done


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


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
        every = plan(out, args.zoo_repeats, args.zoo_cases)
        facts, problems = {**facts, **fit(every)}, over_budget(every)
        for problem in problems:
            print(f"plan: {problem}", file=sys.stderr)
        steps = chosen(every, args.only, None if args.dry_run else args.call)
        budget = args.budget_s if args.budget_s is not None else CALL_BUDGET_S[args.call]
        done = run_steps(steps, args.out and out, time.monotonic() + budget, facts, args.dry_run)
        if args.out is not None:
            print(f"summary: {out / 'summary.md'}", flush=True)
    return 0 if not problems and len(done) == len(steps) and all(d.ok for d in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
