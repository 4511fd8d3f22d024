"""Reporters: the JSON document's contract, and the terminal rendering (golden file)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from rich.console import Console

from fastload_cli.analyzer import analyze
from fastload_cli.records import Command, Environment, Report
from fastload_cli.reporters import json_report, terminal
from tests.unit import builders as b

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
RUN_KEYS = {
    "mode", "status", "num_workers", "batches", "samples", "wall_s", "throughput_samples_per_s",
    "throughput_batches_per_s", "data_wait_fraction", "step_ms_p50", "step_ms_p90", "startup_s",
    "main_cpu_percent", "workers_cpu_percent", "gpu_util_percent", "read_bytes_per_s", "error",
}  # fmt: skip


def sample_report() -> Report:
    real_batches = b.batches([100] + [30] * 19, 10)
    synthetic_batches = b.batches([100] + [1] * 19, 10)
    no_aug_batches = b.batches([100] + [12] * 19, 10)
    end = real_batches[-1].wait_end_ns
    samples = b.host_samples(end, main_cores=0.4, worker_cores=(0.9, 0.9), system_busy=0.95)
    aug = b.loader(augmentations=("ColorJitter()",))
    runs = [
        b.run("real", real_batches, loaders=[aug], samples=samples),
        b.run("synthetic", synthetic_batches, samples=b.host_samples(synthetic_batches[-1].wait_end_ns)),
        b.run("no-aug", no_aug_batches, samples=b.host_samples(no_aug_batches[-1].wait_end_ns)),
    ]
    analysis = analyze(runs)
    env = Environment(
        python="3.11.7", torch="2.14.1", cuda_available=False, gpus=(), cpu_count=2, nvml="unavailable: test"
    )
    return Report(
        command=Command.DIAGNOSE,
        script="train.py",
        script_args=("--epochs", "1"),
        fastload_version="0.1.0",
        environment=env,
        runs=analysis.summaries,
        verdict=analysis.verdict,
        recommendations=analysis.recommendations,
    )


def test_json_has_every_field_of_the_schema() -> None:
    doc = json.loads(json.dumps(json_report.render(sample_report())))
    assert list(doc)[:5] == ["schema", "fastload_version", "command", "script", "script_args"]
    assert doc["schema"] == "fastload.report/1"
    assert set(doc["environment"]) >= {"python", "torch", "cuda_available", "gpus", "cpu_count", "nvml"}
    for run in doc["runs"]:
        assert set(run) >= RUN_KEYS
    assert set(doc["verdict"]) >= {"bottleneck", "label", "confidence", "speedup_ceiling", "evidence", "caveats"}
    for rec in doc["recommendations"]:
        assert set(rec) >= {"id", "title", "detail", "expected_speedup", "measured"}
    assert doc["runs"][0]["gpu_util_percent"] is None  # not measured: null, never 0
    assert any("GPU" in c for c in doc["verdict"]["caveats"])


def render_text(report: Report) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False, record=True)
    console.print(terminal.render(report))
    return console.export_text()


def test_terminal_report_matches_the_golden_file() -> None:
    """Regenerate with FASTLOAD_UPDATE_GOLDEN=1 after an intended change, and review the diff."""
    text = render_text(sample_report())
    golden = GOLDEN / "diagnose_report.txt"
    if os.environ.get("FASTLOAD_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()
