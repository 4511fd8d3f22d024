"""Each bundled example, diagnosed for real, gives its planted verdict; the CI gate, the trace and
the HTML page of those same runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fastload_cli.examples import EXAMPLES
from tests.conftest import assert_verdict, disturbed_by_others, run_fastload

pytestmark = pytest.mark.slow
INPUT_BOUND = {"cpu", "io", "transfer", "host"}


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """`fastload diagnose --fail-on input-bound` on every bundled example, with the JSON report on
    stdout and the trace and the page in files, once for the tests of this module."""
    folder = tmp_path_factory.mktemp("examples")
    found = {}
    for example in EXAMPLES:
        files = ("--trace", str(folder / f"{example.name}.trace.json"), "--html", str(folder / f"{example.name}.html"))
        found[example.name] = run_fastload(
            "diagnose", str(example.path), "--max-batches", "20", "--json", "-", "--fail-on", "input-bound", *files,
            timeout=600,
        )  # fmt: skip
    return found


@pytest.fixture(scope="module")
def reports(diagnosed: dict[str, subprocess.CompletedProcess[str]]) -> dict[str, dict]:
    found = {}
    for name, done in diagnosed.items():
        assert done.returncode in (0, 3), done.stderr
        found[name] = json.loads(done.stdout)  # stdout is exactly one JSON document, gate or not
    return found


def written(done: subprocess.CompletedProcess[str], suffix: str) -> Path:
    return Path(next(a for a in done.args if str(a).endswith(suffix)))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_gives_its_planted_verdict(example, reports: dict[str, dict]) -> None:
    report = reports[example.name]
    assert report["schema"] == "fastload.report/1"
    assert_verdict(report, example.expected)
    modes = [run["mode"] for run in report["runs"]]
    assert modes[:2] == ["real", "synthetic"]
    assert all(run["status"] == "ok" and run["batches"] > 0 for run in report["runs"])
    ceiling = report["verdict"]["speedup_ceiling"]
    for rec in report["recommendations"]:
        assert rec["evidence"], rec["id"]
        assert rec["expected_speedup"] is None or (ceiling is not None and rec["expected_speedup"] <= ceiling)


def test_the_cpu_bound_example_names_its_most_expensive_transforms(reports: dict[str, dict]) -> None:
    breakdown = reports["augmentation"]["breakdown"]
    assert breakdown is not None and breakdown["unavailable"] is None
    steps = breakdown["steps"]
    names = [s["name"].split("(")[0] for s in steps]
    assert {"RandomResizedCrop", "ColorJitter", "GaussianBlur", "RandomRotation"} <= set(names)
    assert {s["kind"] for s in steps} == {"transform", "getitem", "collate"}
    assert sum(s["share"] for s in steps) == pytest.approx(1.0, abs=1e-3)
    assert [s["ms_per_sample"] for s in steps] == sorted((s["ms_per_sample"] for s in steps), reverse=True)
    # the augmentation transforms, not Normalize or ToTensor, are what costs
    assert names[0] in {"RandomResizedCrop", "ColorJitter", "GaussianBlur", "RandomRotation", "RandomErasing"}
    assert breakdown["threads"] == 1  # timed as the loader's workers run it


def test_recommendations_differ_with_the_bottleneck(reports: dict[str, dict]) -> None:
    ids = {name: {r["id"] for r in report["recommendations"]} for name, report in reports.items()}
    assert ids["augmentation"] != ids["heavy-model"]
    assert ids["augmentation"] != ids["storage-latency"]
    if assert_verdict(reports["heavy-model"], "compute"):  # the advice rests on the verdict
        assert "step-is-the-limit" in ids["heavy-model"]
        assert reports["heavy-model"]["breakdown"] is None  # not cpu-bound: no breakdown unless asked


def test_augmentation_example_reports_what_no_aug_replaced() -> None:
    example = next(e for e in EXAMPLES if e.name == "augmentation")
    done = run_fastload("diagnose", str(example.path), "--modes", "real,no-aug", "--max-batches", "5", "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    replaced = [s["original"].split("(")[0] for s in report["substitutions"]]
    assert "ColorJitter" in replaced and "RandomResizedCrop" in replaced
    assert report["runs"][1]["mode"] == "no-aug" and report["runs"][1]["batches"] > 0


# --------------------------------------------------------------------------------------------
# CI: the gate, the trace and the page of the same runs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_fail_on_input_bound_exits_3_on_input_bound_examples_and_0_otherwise(example, diagnosed, reports) -> None:
    done = diagnosed[example.name]
    verdict = reports[example.name]["verdict"]["bottleneck"]  # the JSON report is written either way
    if verdict in INPUT_BOUND:
        assert done.returncode == 3
        assert f"Gate failed: the verdict is {verdict}" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert "Gate failed" not in done.stderr
    if assert_verdict(reports[example.name], example.expected):  # the planted verdict, and so its gate
        expected = 3 if example.expected in INPUT_BOUND else 0  # augmentation: 3, heavy-model: 0
        assert done.returncode == expected


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_the_trace_has_a_track_per_mode_and_a_wait_per_measured_batch(example, diagnosed, reports) -> None:
    trace = json.loads(written(diagnosed[example.name], ".trace.json").read_text())
    events = trace["traceEvents"]
    tracks = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    runs = reports[example.name]["runs"]
    assert list(tracks.values()) == [f"fastload: {r['mode']}" for r in runs]
    for pid, run in zip(tracks, runs, strict=True):
        waits = [e for e in events if e["ph"] == "X" and e["pid"] == pid and e["name"] == "data wait"]
        assert len(waits) == run["batches"], run["mode"]
        (whole,) = [e for e in events if e["ph"] == "X" and e["pid"] == pid and e["name"] == "run"]
        start, end = whole["ts"], whole["ts"] + whole["dur"]
        assert all(start <= e["ts"] and e["ts"] + e["dur"] <= end for e in waits), run["mode"]
        counters = [e for e in events if e["ph"] == "C" and e["pid"] == pid]
        assert any(e["name"].startswith("CPU % main") for e in counters)
        assert any(e["name"].startswith("CPU % worker") for e in counters) == bool(run["num_workers"])
        assert all(start <= e["ts"] <= end for e in counters), run["mode"]


def test_the_page_renders_in_headless_chromium_with_every_mode(diagnosed, reports) -> None:
    from tests.browser import open_page

    for name, done in diagnosed.items():
        with open_page(written(done, ".html")) as page:
            assert page.errors == [], name
            modes = [r["mode"] + (f" {r['variant']}" if r.get("variant") else "") for r in reports[name]["runs"]]
            assert page.texts("table.modes th.mode") == modes
            assert page.count(".timeline .js-plotly-plot") == len(modes)
            sweep = reports[name]["sweep"]
            assert page.count("#chart-sweep") == (1 if sweep and sweep["points"] else 0), name
            breakdown = reports[name]["breakdown"]
            assert page.count("#chart-breakdown") == (1 if breakdown and breakdown["steps"] else 0), name
            assert reports[name]["verdict"]["label"] in page.text("#verdict h2")


def test_a_baseline_gate_compares_each_mode_with_the_earlier_report(reports, tmp_path: Path) -> None:
    example = next(e for e in EXAMPLES if e.name == "heavy-model")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(reports[example.name]))
    done = run_fastload(
        "diagnose", str(example.path), "--max-batches", "10", "--modes", "real,synthetic",
        "--json", str(tmp_path / "r.json"), "--baseline", str(baseline), "--max-regression", "30",
    )  # fmt: skip
    if "cannot be judged" in done.stderr:  # other processes made the runs vary more than a change can be told from
        assert done.returncode == 2 and "beyond the ±50% a change can be judged against" in done.stderr, done.stderr
        written = json.loads((tmp_path / "r.json").read_text())
        assert disturbed_by_others(written) or disturbed_by_others(reports[example.name]), done.stderr
        return
    judged = [line for line in done.stderr.splitlines() if line.startswith(("Gate passed:", "Gate failed:"))]
    for mode in ("real", "synthetic"):
        assert any(f": {mode}: throughput " in line for line in judged), done.stderr
        assert any(f": {mode}: data wait " in line for line in judged), done.stderr
    # whether this machine ran as fast as before is its business; the exit code must follow the lines
    assert done.returncode == (3 if any(line.startswith("Gate failed:") for line in judged) else 0), done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["runs"]  # written either way


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_every_example_trains_on_the_device_it_is_given(example) -> None:
    done = subprocess.run(
        [sys.executable, str(example.path), "--steps", "6", "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "throughput:" in done.stdout, done.stderr
    refused = subprocess.run([sys.executable, str(example.path), "--device", "nowhere"], capture_output=True, text=True)
    assert refused.returncode != 0 and "nowhere" in refused.stderr
