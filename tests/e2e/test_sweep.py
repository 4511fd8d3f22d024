"""sweep-workers, synthetic-compare and diagnose's own sweep, on real child runs."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import SCRIPTS, run_fastload

pytestmark = pytest.mark.slow
TOY = str(SCRIPTS / "toy_train.py")
# Loading sleeps 2 ms per sample (8 per batch) beside a 2 ms step: latency that workers hide.
LATENCY = ["--", "--load-ms", "2", "--step-ms", "2", "--workers", "1", "--size", "2048"]


def report_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_recommendations(report: dict) -> None:
    ceiling = report["verdict"]["speedup_ceiling"]
    for r in report["recommendations"]:
        assert r["evidence"], r["id"]
        if ceiling is not None and r["expected_speedup"] is not None:
            assert r["expected_speedup"] <= ceiling + 1e-9


def test_an_adaptive_sweep_measures_workers_settings_under_the_real_step() -> None:
    done = run_fastload("sweep-workers", TOY, "--max-workers", "4", "--max-batches", "12", "--json", "-", *LATENCY)
    report = report_of(done)
    assert report["schema"] == "fastload.report/1" and report["command"] == "sweep-workers"
    modes = [r["mode"] for r in report["runs"]]
    # the script's own setting first, then what the prediction from it asks for: reads of 2 ms per
    # sample on one worker against a 2 ms step predict more workers, the predicted best measured
    assert modes[0] == "real" and all(m.startswith("workers=") for m in modes[1:])
    sweep = report["sweep"]
    assert sweep["current_workers"] == 1
    assert sweep["predicted_best"] > 1 and f"workers={min(sweep['predicted_best'], 4)}" in modes
    assert len(sweep["predicted"]) > 5 and sweep["prediction_error"] is not None
    assert [p["workers"] for p in sweep["points"]] == sorted(p["workers"] for p in sweep["points"])
    for point in sweep["points"]:
        assert point["throughput_samples_per_s"] > 0
        assert point["rss_bytes"] > 0 and point["startup_s"] > 0
    assert sweep["recommended_workers"] in {p["workers"] for p in sweep["points"]}
    if sweep["significant"]:
        first = report["recommendations"][0]
        assert first["id"] in ("increase-num-workers", "reduce-num-workers") and first["measured"] is True
    check_recommendations(report)


def test_a_grid_sweep_measures_exactly_the_grid_and_the_scripts_own_setting() -> None:
    done = run_fastload("sweep-workers", TOY, "--workers", "0,2", "--max-batches", "8", "--json", "-", *LATENCY)
    report = report_of(done)
    assert sorted(r["mode"] for r in report["runs"]) == ["workers=0", "workers=1", "workers=2"]
    for run in report["runs"]:
        assert run["status"] == "ok" and run["batches"] >= 8


def test_in_process_a_grid_sweep_measures_its_settings_in_turn_in_one_run_of_the_script(tmp_path) -> None:
    # 0 workers first (fastload sees the loader), then 2, 3 and the script's own 1 in one run:
    # new workers take over mid-epoch, and each setting is reported as its own workers=N run
    started = tmp_path / "started"
    args = [*LATENCY, "--started", str(started)]
    grid = ["--workers", "0,2,3", "--max-batches", "8"]
    done = run_fastload("sweep-workers", TOY, *grid, "--in-process", "--json", "-", *args)
    report = report_of(done)
    assert sorted(r["mode"] for r in report["runs"]) == ["workers=0", "workers=1", "workers=2", "workers=3"]
    assert {r["mode"]: r["num_workers"] for r in report["runs"]} == {f"workers={n}": n for n in range(4)}
    for run in report["runs"]:
        assert run["status"] == "ok" and run["batches"] >= 8 and run["throughput_samples_per_s"] > 0
    # two starts (0 alone, then 2, 3 and 1 in turn), besides the runs fastload said it measures again
    assert len(started.read_text().splitlines()) - measured_again(done.stderr) == 2
    # by default the script starts once per setting
    started.unlink()
    done = run_fastload("sweep-workers", TOY, *grid, *args)
    assert done.returncode == 0, done.stderr
    assert len(started.read_text().splitlines()) - measured_again(done.stderr) == 4


def measured_again(stderr: str) -> int:
    """Runs fastload said it makes once more (a run other processes disturbed, a setting measured
    again after the first epoch or in whole epochs): each starts the script again."""
    return sum(1 for line in stderr.splitlines() if "running it again" in line or "measuring again" in line
               or "measuring whole epochs" in line)  # fmt: skip


def test_the_terminal_report_shows_the_sweep_table_chart_and_conclusion() -> None:
    done = run_fastload("sweep-workers", TOY, "--workers", "0,2", "--max-batches", "8", *LATENCY)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "num_workers sweep (the script's own: 1" in out
    assert "█" in out and "Returns end at" in out
    assert "Use num_workers=" in out or "Keep num_workers=1" in out


def test_synthetic_compare_reads_the_ceiling() -> None:
    done = run_fastload("synthetic-compare", TOY, "--max-batches", "12", "--json", "-", *LATENCY)
    report = report_of(done)
    assert report["command"] == "synthetic-compare"
    assert [r["mode"] for r in report["runs"]] == ["real", "synthetic"]  # no augmentation to remove
    assert report["reading"].startswith(("A free input pipeline", "Within noise"))
    assert report["sweep"] is None
    check_recommendations(report)


def test_diagnose_sweeps_when_loading_is_the_limit() -> None:
    done = run_fastload("diagnose", TOY, "--max-batches", "12", "--max-workers", "4", "--json", "-", *LATENCY)
    report = report_of(done)
    modes = [r["mode"] for r in report["runs"]]
    assert modes[:2] == ["real", "synthetic"]
    assert any(m.startswith("workers=") for m in modes), "an IO-bound run with idle cores gets a sweep"
    assert report["sweep"] is not None
    check_recommendations(report)


def test_diagnose_without_a_sweep() -> None:
    done = run_fastload("diagnose", TOY, "--max-batches", "12", "--no-sweep", "--json", "-", *LATENCY)
    report = report_of(done)
    assert not any(r["mode"].startswith("workers=") for r in report["runs"])
    assert report["sweep"] is None


def test_prefetch_factor_variants_run_at_the_chosen_setting_and_pin_memory_needs_cuda() -> None:
    done = run_fastload(
        "sweep-workers", TOY, "--workers", "2", "--prefetch-factor", "2,4", "--pin-memory", "both",
        "--max-batches", "8", "--json", "-", *LATENCY,
    )  # fmt: skip
    report = report_of(done)
    variants = [r["variant"] for r in report["runs"] if r["variant"]]
    assert variants == ["prefetch_factor=4"]  # 2 is the loader's own; no CUDA, so no pin_memory run
    assert "--pin-memory both: skipped, CUDA is not available" in done.stderr
    chosen = report["sweep"]["recommended_workers"]
    assert next(r for r in report["runs"] if r["variant"])["num_workers"] == chosen


def test_a_grid_setting_an_epoch_is_too_short_for_is_measured_with_a_caveat() -> None:
    # 80 samples in batches of 4: 20 per epoch; 5 workers prefetch 10 of them and drain as many
    short = ["--", "--load-ms", "2", "--step-ms", "2", "--workers", "1", "--size", "80"]
    done = run_fastload("sweep-workers", TOY, "--workers", "0,5", "--max-batches", "8", "--json", "-", *short)
    report = report_of(done)
    runs = {r["mode"]: r for r in report["runs"]}
    assert set(runs) == {"workers=0", "workers=1", "workers=5"}  # exactly as asked, and the script's own
    assert runs["workers=5"]["status"] == "ok" and runs["workers=5"]["batches"] > 0
    assert [p["workers"] for p in report["sweep"]["points"]] == [0, 1, 5]
    assert report["sweep"]["stopped"] is None
    assert any(c.startswith("workers=5: an epoch has 20 batches") for c in report["verdict"]["caveats"])
