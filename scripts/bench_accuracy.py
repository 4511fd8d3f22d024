#!/usr/bin/env python3
"""How often `fastload diagnose` names the planted bottleneck, and how long it takes.

    python scripts/bench_accuracy.py [--repeats 3] [--cases a,b] [--out results.json] [--reports DIR] [--dry-run]
                                     [-- DIAGNOSE_OPTIONS]

Runs `fastload diagnose SCRIPT --json -` (default settings, or the options after --) on every
case of the zoo: the bundled examples and the scripts in scripts/zoo/, each with a planted truth
(a bottleneck, "hedged" for a case where input and step cost about the same, and for some the
recommendation that must be made), or a planted pathology (`pathologies` in the report), which
every other case must not raise. Prints one row per case (expected, got per repeat, agreement,
median time to verdict, and its ratio to the report's measuring limit) and writes the rows as
JSON. Exit status 1 when any repeat disagrees.
GPU cases run only where CUDA is available; the shared-memory case only where a mount namespace
can be made (it runs fastload with a 64 MB /dev/shm, as Docker gives).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchlib import ROOT, fastload, median_range, write_json

ZOO = ROOT / "scripts" / "zoo"
EXAMPLES = ROOT / "fastload_cli" / "examples"
FRAMEWORKS = ROOT / "tests" / "scripts" / "frameworks"  # framework scripts; their extra must be installed
HEDGED_CONFIDENCE = 0.5  # fastload's confidence for a verdict both signals leave in between


@dataclass(frozen=True)
class Case:
    name: str
    script: Path
    expected: str  # a bottleneck, "hedged", or "pathology:KIND" (the verdict is not judged)
    recommendations: tuple[str, ...] = ()  # one of these ids must be among the recommendations
    gpu: bool = False
    args: tuple[str, ...] = ()  # the script's own arguments ("{jpegs}": a folder of JPEGs made on first use)
    prefix: tuple[str, ...] = ()  # what fastload runs under: a smaller /dev/shm, a lower open-files limit
    options: tuple[str, ...] = ()  # diagnose options of its own

    @property
    def pathology(self) -> str | None:
        return self.expected.removeprefix("pathology:") if self.expected.startswith("pathology:") else None


# Docker's default /dev/shm: a mount namespace of fastload's own with a 64 MB tmpfs there.
SMALL_SHM = ("unshare", "-rm", "sh", "-c", 'mount -t tmpfs -o size=64m tmpfs /dev/shm && exec "$@"', "sh")
# The soft limit on open files many distributions start processes with.
FEW_FILES = ("prlimit", "--nofile=1024:1024")


# Fewer workers (measured by the sweep, or estimated without one), or one indexing per batch: on this
# case's TensorDataset both help, the second most (docs/benchmarks.md).
IN_MEMORY_FIXES = ("reduce-num-workers", "workers-are-overhead", "index-whole-batches")

CASES = (
    Case("augmentation-heavy", EXAMPLES / "augmentation_heavy.py", "cpu", ("reduce-augmentation-cost",)),
    Case("main-process-decode", EXAMPLES / "main_process_decode.py", "cpu"),
    Case("storage-latency", EXAMPLES / "storage_latency.py", "io", ("increase-num-workers",)),
    Case("cold-reads", ZOO / "cold_reads.py", "io"),
    Case("heavy-model", EXAMPLES / "heavy_model.py", "compute", ("step-is-the-limit",)),
    Case("in-memory-tensors", ZOO / "in_memory_tensors.py", "cpu", IN_MEMORY_FIXES),
    Case("worker-startup", ZOO / "worker_startup.py", "io", ("persistent-workers",)),
    Case("borderline", ZOO / "borderline.py", "hedged"),
    Case("slow-step", ZOO / "slow_step.py", "compute", ("step-is-the-limit",)),
    # Epochs of 6,250 batches (no verdict waits for one to end), and a GPU host's pace on any machine:
    # a 30 ms step the host only waits through, 40-batch epochs whose workers start again each time.
    Case("long-epochs-augmentation", ZOO / "long_epochs.py", "cpu", ("reduce-augmentation-cost",)),
    Case("long-epochs-latency", ZOO / "long_epochs.py", "io", ("increase-num-workers",), args=("--latency-ms", "4")),
    Case("gpu-paced", ZOO / "gpu_paced.py", "io", ("increase-num-workers",)),
    # Scripts in the frameworks' own idioms (tests/scripts/frameworks), each with a planted input cost:
    # heavy augmentation under Lightning, RandAugment on JPEGs of varied sizes under timm, an FFT per
    # sample behind accelerate, and FakeData images made and augmented beside a CNN on the same cores.
    Case("lightning-augment", FRAMEWORKS / "lightning_train.py", "cpu"),
    Case(
        "timm-jpegs", FRAMEWORKS / "timm_train.py", "cpu", args=("{jpegs}", "--epochs", "20", "--model", "test_resnet")
    ),
    Case("accelerate-fft", FRAMEWORKS / "accelerate_train.py", "cpu", args=("--epochs", "20")),
    Case("fakedata-contention", FRAMEWORKS / "imagenet_style.py", "cpu", args=("-j", "2", "-a", "tiny")),
    # Hugging Face's image-classification example's shape: set_transform, Trainer, 2 workers on 2 cores
    Case(
        "hf-image-classification",
        FRAMEWORKS / "hf_image_classification.py",
        "cpu",
        args=("{jpegs}", "--max-steps", "96"),
    ),
    # albumentations' Compose called with keywords on OpenCV-decoded JPEGs, one worker on 2 cores
    Case("albumentations-jpegs", FRAMEWORKS / "albumentations_train.py", "cpu", args=("{jpegs}", "--epochs", "20")),
    # torchvision's classification reference's shape: the pipeline kept in a preset object
    Case("reference-presets", ZOO / "reference_presets.py", "cpu", ("reduce-augmentation-cost",)),
    # Pathologies: each script's planted failure or slowdown must be among the report's pathologies.
    Case("slow-samples", ZOO / "slow_samples.py", "pathology:slow-samples", ("deliver-out-of-order",)),
    Case("duplicate-workers", ZOO / "duplicate_workers.py", "pathology:duplicate-samples"),
    Case("idle-workers", ZOO / "idle_workers.py", "pathology:idle-workers"),
    Case("memory-growth", ZOO / "memory_growth.py", "pathology:memory-growth"),
    Case(
        "thread-oversubscription",
        ZOO / "thread_oversubscription.py",
        "pathology:thread-oversubscription",
        ("one-thread-per-worker",),
    ),
    Case("small-shm", ZOO / "small_shm.py", "pathology:shared-memory", prefix=SMALL_SHM),
    Case(
        "many-tensors",
        ZOO / "many_tensors.py",
        "pathology:file-descriptors",
        prefix=FEW_FILES,
        options=("--timeout", "60"),  # out of descriptors, the script raises or hangs: a hung run ends sooner
    ),
    Case("gpu-transfer", ZOO / "gpu_transfer.py", "transfer", ("pin-memory",), gpu=True),
    Case("gpu-tiny-kernels", ZOO / "gpu_tiny_kernels.py", "host", gpu=True),
    Case("gpu-large-model", ZOO / "gpu_large_model.py", "compute", gpu=True),
    Case("gpu-input-bound", ZOO / "gpu_input_bound.py", "cpu", gpu=True),
)


def diagnose(case: Case, options: list[str]) -> tuple[dict, float]:
    script_args = [a.replace("{jpegs}", str(jpegs())) for a in case.args]
    ran = fastload("diagnose", str(case.script), *case.options, *options, script_args=script_args, prefix=case.prefix)
    if ran.report is None:
        print(f"fastload exited {ran.code} on {case.name}:\n{ran.stderr[-2000:]}", file=sys.stderr)
        hint = next((line for line in reversed(ran.stderr.splitlines()) if line.startswith("Hint:")), "")
        return {"failed": ran.code, "hint": hint, "verdict": {}, "recommendations": [], "runs": []}, ran.wall_s
    return ran.report, ran.wall_s


def jpegs() -> Path:
    """A folder of JPEGs of varied sizes, made once under ~/.cache/fastload-zoo."""
    root = Path.home() / ".cache" / "fastload-zoo" / "jpegs-4x256"
    if not (root / "train").is_dir():
        sys.path.insert(0, str(FRAMEWORKS))
        from make_jpegs import make

        make(root, per_class=256, classes=4)
    return root


def pathologies(report: dict) -> list[str]:
    """The pathologies a report names, or, where the script failed before its first batch (exit 1,
    no report), the one the error's hint names (``[kind]``)."""
    if "failed" in report:
        return re.findall(r"\[([a-z-]+)\]:", report.get("hint", ""))[:1]
    return [p["kind"] for p in report.get("pathologies", [])]


def got(report: dict, case: Case) -> str:
    if "failed" in report:
        named = pathologies(report)
        return f"pathology:{named[0]} (error)" if named else f"failed (exit {report['failed']})"
    if case.pathology is not None:
        return ("pathology:" + "+".join(pathologies(report))) if pathologies(report) else "no pathology"
    verdict = report["verdict"]
    if verdict["bottleneck"] == "inconclusive" or verdict["confidence"] <= HEDGED_CONFIDENCE:
        return "hedged"
    return verdict["bottleneck"]


def agrees(case: Case, report: dict) -> bool:
    """The planted truth found (the verdict, or the pathology among those the report raises or the
    error names that ended the run before its first batch), no pathology raised where none was
    planted, and one of the expected recommendations made."""
    ids = {r["id"] for r in report["recommendations"]}
    recommended = not case.recommendations or bool(ids & set(case.recommendations))
    if case.pathology is not None:
        return case.pathology in pathologies(report) and recommended
    return got(report, case) == case.expected and not pathologies(report) and recommended


def real_run(report: dict) -> dict:
    return next((r for r in report["runs"] if r["mode"] == "real"), {})


def cuda_available() -> bool:
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True
    )
    return probe.stdout.strip() == "True"


def measure(case: Case, repeats: int, options: list[str], kept: Path | None = None) -> dict:
    """``repeats`` diagnoses of ``case``, printed as one row and returned as its JSON row; each
    report written into ``kept`` as CASE-N.json, where given."""
    runs = [diagnose(case, options) for _ in range(repeats)]
    reports, walls = [report for report, _ in runs], [wall for _, wall in runs]
    for n, report in enumerate(reports if kept is not None else (), start=1):
        write_json(kept / f"{case.name}-{n}.json", report)
    verdicts = [got(report, case) for report in reports]
    agreed = sum(agrees(case, report) for report in reports)
    expected = case.expected + (f" + {' or '.join(case.recommendations)}" if case.recommendations else "")
    ratios = [r for r in (over_limit(report, wall) for report, wall in runs) if r is not None]
    ratio = f"  {statistics.median(ratios):.1f}x" if ratios else ""
    print(
        f"{case.name:<25}{expected:<58} {','.join(verdicts):<30} {agreed}/{len(runs):<5}{median_range(walls)}{ratio}",
        flush=True,
    )
    return {
        "case": case.name,
        "script": str(case.script.relative_to(ROOT)),
        "expected": case.expected,
        "expected_recommendations": list(case.recommendations),
        "got": verdicts,
        "label": [report["verdict"].get("label") for report in reports],
        "confidence": [report["verdict"].get("confidence") for report in reports],
        "speedup_ceiling": [report["verdict"].get("speedup_ceiling") for report in reports],
        "data_wait_fraction": [real_run(report).get("data_wait_fraction") for report in reports],
        "recommendations": [[r["id"] for r in report["recommendations"]] for report in reports],
        "pathologies": [pathologies(report) for report in reports],
        "agree": agreed,
        "repeats": len(runs),
        "time_to_verdict_s": [round(w, 1) for w in walls],
        "over_measuring_limit": [round(r, 1) for r in ratios],
    }


def over_limit(report: dict, wall_s: float) -> float | None:
    """The time to verdict over the report's measuring limit (``time_spent.limit_s``): one start of
    the script and ten steady batches of each mode compared."""
    limit = (report.get("time_spent") or {}).get("limit_s")
    return wall_s / limit if limit else None


def import_torch_s(times: int = 3) -> float:
    """The machine's pace: a fresh interpreter's ``import torch, torch._dynamo`` (what the warm
    starter imports), median of ``times``. Every diagnose pays it once, in its first start, and
    the rest of its time runs on the same cores: benchmarks taken an hour apart on a shared
    machine compare by it."""
    walls = []
    for _ in range(times):
        began = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch, torch._dynamo"], check=True)
        walls.append(time.monotonic() - began)
    return statistics.median(walls)


def runs_under(prefix: tuple[str, ...]) -> bool:
    """The machine can run a command under ``prefix`` (a mount namespace needs unprivileged user
    namespaces; containers often forbid them)."""
    if not prefix:
        return True
    try:
        return subprocess.run([*prefix, "true"], capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def chosen_cases(names: str | None, gpu: bool) -> list[Case]:
    """The cases ``--cases`` names (all by default), the GPU ones only where there is a GPU, those
    run under a prefix only where it can be made (each left out is said); an unknown name ends the
    benchmark rather than measuring fewer cases than asked."""
    unknown = set((names or "").split(",")) - {"", *(c.name for c in CASES)}
    if unknown:
        known = ", ".join(c.name for c in CASES)
        raise SystemExit(f"known cases: {known}; unknown case(s): {', '.join(sorted(unknown))}")
    named = [c for c in CASES if (not names or c.name in names.split(",")) and (gpu or not c.gpu)]
    for case in named:
        if not runs_under(case.prefix):
            print(f"skipped {case.name}: this machine cannot run `{' '.join(case.prefix[:2])}`", file=sys.stderr)
    return [c for c in named if runs_under(c.prefix)]


def main() -> int | str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reports", type=Path, help="a folder to keep every diagnose report in (CASE-N.json)")
    parser.add_argument("--dry-run", action="store_true", help="name the cases that would run, and run none")
    parser.add_argument("options", nargs="*", help="diagnose options, after --")
    args = parser.parse_args()
    if args.dry_run:
        cases = chosen_cases(args.cases, True)
        missing = [str(c.script) for c in cases if not c.script.is_file()]
        print("would run:", ", ".join(f"{c.name} ({c.script.relative_to(ROOT)})" for c in cases))
        return f"missing scripts: {', '.join(missing)}" if missing else 0
    gpu = cuda_available()
    chosen = chosen_cases(args.cases, gpu)
    header = f"{'case':<25}{'expected':<58} {'got':<30} {'agree':<7}time to verdict s, median (range)"
    print(f"{header}  x measuring limit, median", flush=True)
    if args.reports is not None:
        args.reports.mkdir(parents=True, exist_ok=True)
    pace = [import_torch_s()]
    rows = [measure(case, args.repeats, args.options, args.reports) for case in chosen]
    pace.append(import_torch_s())
    total = sum(r["agree"] for r in rows), sum(r["repeats"] for r in rows)
    print(f"agreement: {total[0]}/{total[1]}" + ("" if gpu else " (CPU cases; no CUDA here)"))
    timed = [r["time_to_verdict_s"] for r in rows if r["case"] != "slow-step"]  # its step alone takes a second
    if timed:
        middle, slowest = statistics.median(statistics.median(t) for t in timed), max(max(t) for t in timed)
        print(f"time to verdict besides slow-step: median of case medians {middle:.1f} s, slowest {slowest:.1f} s")
    limits = [statistics.median(r["over_measuring_limit"]) for r in rows if r["over_measuring_limit"]]
    if limits:
        print(f"time to verdict over the measuring limit: median case {statistics.median(limits):.1f}x")
    print(f"the machine's pace: importing torch took {pace[0]:.2f} s before the cases, {pace[1]:.2f} s after")
    write_json(args.out, {"repeats": args.repeats, "options": args.options, "import_torch_s": pace, "rows": rows})
    return 0 if total[0] == total[1] else 1


if __name__ == "__main__":
    raise SystemExit(main())
