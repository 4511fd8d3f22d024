"""What scripts/gpu_validation.py reads back: the machine it ran on, what each step's files say
(verdicts, NVML's readings, the fixes' gains, the benchmarks' rows), and the summary page.

Every reading is tolerant: a file a step did not write is named as missing, never guessed at.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

TORCH_FACTS = (
    "import json, torch; c = torch.cuda.is_available(); print(json.dumps({'torch': torch.__version__, "
    "'cuda_runtime': torch.version.cuda, 'cuda_available': c, "
    "'devices': [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if c else []}))"
)
SMI_FIELDS = "name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max"


def machine(root: Path) -> dict[str, Any]:
    """Where and when the validation ran: date, device, driver, CUDA, torch, Python, CPUs, commit."""
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "host_cpus": os.cpu_count(),
        "commit": _commit(root),
        **_torch_facts(),
        "nvidia_smi": _nvidia_smi(),
    }


def _commit(root: Path) -> str:
    """HEAD, and whether the files differ from it: a copy of a working tree may carry an older
    ``.git`` than its files."""
    head = _output(["git", "-C", str(root), "rev-parse", "--short", "HEAD"])
    if head is None:
        return "unknown (no git here)"
    changed = _output(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return f"{head} (the files differ from it)" if changed else head


def _output(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _torch_facts() -> dict[str, Any]:
    text = _output([sys.executable, "-c", TORCH_FACTS])
    return json.loads(text.splitlines()[-1]) if text else {"torch": "unavailable: torch did not import"}


def _nvidia_smi() -> list[dict[str, str]] | str:
    if shutil.which("nvidia-smi") is None:
        return "unavailable: nvidia-smi is not on the PATH"
    text = _output(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader"])
    if text is None:
        return "unavailable: nvidia-smi failed"
    return [
        dict(zip(SMI_FIELDS.split(","), (v.strip() for v in line.split(",")), strict=False))
        for line in text.splitlines()
    ]


def findings(step: str, out: Path) -> dict[str, Any]:
    """What the files ``step`` wrote under ``out`` say."""
    if step == "gpu-tests":
        return {"pytest": _last_line(out / "gpu-tests.log")}
    if step == "prefetchers":
        return _prefetchers(out / "prefetchers.json")
    if step.startswith("zoo-"):
        return _zoo(out / f"{step}.json")
    if step == "truth":
        return _truth(out / "truth.json")
    found = _report(out / f"{step}.json")
    found["nvml"] = nvml_readings(out / f"{step}.trace.json")
    return found


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except OSError:
        return f"missing: {path.name}"
    return lines[-1] if lines else "no output"


def _report(path: Path) -> dict[str, Any]:
    """A fastload report's verdict, environment, real run and fixes."""
    report = _read(path)
    if not isinstance(report, dict):
        return {"report": f"missing: {path.name}"}
    verdict, env = report.get("verdict", {}), report.get("environment", {})
    real = next((r for r in report.get("runs", []) if r.get("mode") == "real"), {})
    found = {
        "verdict": f"{verdict.get('label')} (confidence {verdict.get('confidence')})",
        "evidence": verdict.get("evidence", []),
        "runs": {
            r.get("mode"): {k: r.get(k) for k in ("throughput_samples_per_s", "step_ms_p50", "gpu_util_percent")}
            for r in report.get("runs", [])
        },
        "nvml_status": env.get("nvml"),
        "gpus": [g.get("name") for g in env.get("gpus", [])],
        "real": {k: real.get(k) for k in ("throughput_samples_per_s", "data_wait_fraction", "gpu_util_percent")},
        "recommendations": [r.get("id") for r in report.get("recommendations", [])],
    }
    if report.get("fixes"):
        found["fixes"] = {f["name"]: _fix(f) for f in report["fixes"]}
    return found


def _fix(fix: dict[str, Any]) -> str:
    if not fix.get("applies"):
        return f"refused: {fix.get('reason')}"
    return f"x{fix.get('speedup')} (noise ±{fix.get('spread')}) {fix.get('reason')}"


def nvml_readings(trace: Path) -> dict[str, str] | str:
    """Each NVML counter of a trace, as ``min / median / max`` over the whole file."""
    document = _read(trace)
    if not isinstance(document, dict):
        return f"missing: {trace.name}"
    values: dict[str, list[float]] = {}
    for event in document.get("traceEvents", []):
        if event.get("ph") == "C" and str(event.get("name", "")).startswith("GPU"):
            for key, value in event.get("args", {}).items():
                values.setdefault(f"{event['name']} {key}", []).append(float(value))
    if not values:
        return "no NVML readings in the trace"
    return {k: f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}" for k, v in sorted(values.items())}


def _prefetchers(path: Path) -> dict[str, Any]:
    document = _read(path)
    if not isinstance(document, dict):
        return {"result": f"missing: {path.name}"}
    rates = document.get("images_per_s", {})
    return {f"{arm} images/s (median)": round(statistics.median(v), 1) for arm, v in rates.items() if v}


def _truth(path: Path) -> dict[str, Any]:
    document = _read(path)
    if not isinstance(document, list):
        return {"result": f"missing: {path.name}"}
    return {
        f"{row['case']} {arm}": f"{ratio:.2f}x the script as written"
        for row in document
        for arm, ratio in row.get("ratio_to_written", {}).items()
    }


def _zoo(path: Path) -> dict[str, Any]:
    document = _read(path)
    if not isinstance(document, dict):
        return {"result": f"missing: {path.name}"}
    return {
        row["case"]: f"expected {row['expected']}, got {','.join(row['got'])}: {row['agree']}/{row['repeats']}"
        for row in document.get("rows", [])
    }


def _blank(value: object) -> str:
    return "" if value is None else str(value)


def summary_markdown(document: dict[str, Any]) -> str:
    """The page a person reads first: the machine, a row per step, then what each step found."""
    lines = ["# fastload GPU validation" + (" (dry run: nothing measured)" if document["dry_run"] else ""), ""]
    lines += ["| | |", "| --- | --- |"]
    lines += [
        f"| {key} | {json.dumps(value) if not isinstance(value, str) else value} |"
        for key, value in document["machine"].items()
    ]
    lines += ["", "| call | step | status | time s | limit s |", "| --- | --- | --- | --- | --- |"]
    lines += [
        f"| {s.get('call', '')} | {s['step']} | {s['status']} | {_blank(s['wall_s'])} | {_blank(s.get('limit_s'))} |"
        for s in document["steps"]
    ]
    for step in document["steps"]:
        lines += ["", f"## {step['step']}", "", f"`{step['command']}`", ""]
        lines += [
            f"- {key}: {json.dumps(value) if not isinstance(value, str) else value}"
            for key, value in step["found"].items()
        ]
    return "\n".join(lines) + "\n"
