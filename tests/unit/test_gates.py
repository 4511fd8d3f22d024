"""CI gates and before/after comparison, judged on hand-built reports."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fastload_cli.analyzer.compare import UnreadableReport, compare, figures, read_figures
from fastload_cli.analyzer.gates import Gates, GateStatus, evaluate, parse_fail_on, parse_fraction
from fastload_cli.records import Bottleneck, Command, Environment, Report, RunStatus, RunSummary, Verdict
from fastload_cli.reporters import comparison, json_report
from tests.unit import builders as b

ENV = Environment(python="3.11.7", torch="2.14.1", cuda_available=False, gpus=(), cpu_count=2, nvml="unavailable")


def report(*runs: RunSummary, bottleneck: Bottleneck = Bottleneck.CPU, script: str = "train.py") -> Report:
    verdict = Verdict(
        bottleneck=bottleneck, label=bottleneck.value, confidence=0.9, speedup_ceiling=2.0, evidence=(), caveats=()
    )
    return Report(
        command=Command.DIAGNOSE,
        script=script,
        script_args=(),
        fastload_version="0.1.0",
        environment=ENV,
        runs=runs,
        verdict=verdict,
        recommendations=(),
    )


def run(mode: str = "real", throughput: float = 100.0, wait: float = 0.3, spread: float | None = 0.02) -> RunSummary:
    return dataclasses.replace(b.summary(mode, throughput=throughput, wait=wait), throughput_spread=spread)


def statuses(results) -> list[GateStatus]:
    return [r.status for r in results]


# --- the verdict gate ---


def test_input_bound_means_the_input_verdicts() -> None:
    assert parse_fail_on("input-bound") == {Bottleneck.CPU, Bottleneck.IO, Bottleneck.TRANSFER, Bottleneck.HOST}
    assert parse_fail_on("cpu, io") == {Bottleneck.CPU, Bottleneck.IO}
    with pytest.raises(ValueError, match="'slow' is not a verdict"):
        parse_fail_on("cpu,slow")


@pytest.mark.parametrize(
    ("bottleneck", "expected"),
    [(Bottleneck.CPU, GateStatus.FAILED), (Bottleneck.IO, GateStatus.FAILED), (Bottleneck.COMPUTE, GateStatus.PASSED)],
)
def test_fail_on_input_bound(bottleneck: Bottleneck, expected: GateStatus) -> None:
    gates = Gates(fail_on=parse_fail_on("input-bound"), fail_on_text="input-bound")
    (result,) = evaluate(report(run(), bottleneck=bottleneck), gates)
    assert result.status is expected
    assert bottleneck.value in result.message


# --- the real run's figures ---


def test_max_data_wait_fails_above_and_passes_within() -> None:
    assert parse_fraction("20%") == pytest.approx(0.2)
    assert parse_fraction("0.2") == pytest.approx(0.2)
    with pytest.raises(ValueError):
        parse_fraction("1.5")
    failed = evaluate(report(run(wait=0.35)), Gates(max_data_wait=0.2))
    assert statuses(failed) == [GateStatus.FAILED]
    assert "35%" in failed[0].message and "0.2" in failed[0].message
    assert statuses(evaluate(report(run(wait=0.15)), Gates(max_data_wait=0.2))) == [GateStatus.PASSED]


def test_min_throughput_fails_below_and_passes_above() -> None:
    failed = evaluate(report(run(throughput=80.0)), Gates(min_throughput=100))
    assert statuses(failed) == [GateStatus.FAILED]
    assert "80.0 samples/s" in failed[0].message and "100" in failed[0].message
    assert statuses(evaluate(report(run(throughput=120.0)), Gates(min_throughput=100))) == [GateStatus.PASSED]


def test_a_gate_whose_figure_was_not_measured_is_never_a_pass() -> None:
    failed_run = dataclasses.replace(b.summary("real", status=RunStatus.FAILED, batches=0), error="exited with 1")
    for gates in (Gates(max_data_wait=0.2), Gates(min_throughput=1)):
        (result,) = evaluate(report(failed_run), gates)
        assert result.status is GateStatus.UNMEASURED
        assert "no steady batch" in result.message
    (result,) = evaluate(report(run("synthetic")), Gates(max_data_wait=0.2))
    assert result.status is GateStatus.UNMEASURED and "no real run" in result.message


# --- against a baseline ---


def baseline(*runs: RunSummary) -> Gates:
    return Gates(baseline=figures(report(*runs), "before.json"), max_regression=10)


def test_a_regression_beyond_the_limit_and_the_noise_fails() -> None:
    gates = baseline(run(throughput=100.0, spread=0.02))
    results = evaluate(report(run(throughput=80.0, spread=0.02)), gates)
    throughput = next(r for r in results if "throughput" in r.message)
    assert throughput.status is GateStatus.FAILED
    assert "worse by 20.0%" in throughput.message and "noise ±4.0%" in throughput.message


def test_a_drop_inside_the_runs_noise_is_not_a_regression() -> None:
    gates = baseline(run(throughput=100.0, spread=0.10))
    results = evaluate(report(run(throughput=85.0, spread=0.08)), gates)
    assert GateStatus.FAILED not in statuses(results)
    throughput = next(r for r in results if "throughput" in r.message)
    assert "inside the runs' noise" in throughput.message and "not a regression" in throughput.message


def test_a_rise_of_data_wait_in_points_fails() -> None:
    gates = baseline(run(wait=0.10, spread=0.01))
    results = evaluate(report(run(wait=0.30, spread=0.01)), gates)
    wait = next(r for r in results if "data wait" in r.message)
    assert wait.status is GateStatus.FAILED and "20.0 points" in wait.message


def test_an_improvement_passes() -> None:
    results = evaluate(report(run(throughput=150.0, wait=0.1)), baseline(run(throughput=100.0, wait=0.3)))
    assert set(statuses(results)) == {GateStatus.PASSED}


def test_a_baseline_without_a_mode_in_common_cannot_be_judged() -> None:
    (result,) = evaluate(report(run("real")), baseline(run("synthetic")))
    assert result.status is GateStatus.UNMEASURED


def test_a_baseline_whose_figures_are_all_missing_cannot_be_judged() -> None:
    # the mode is there, but not one figure both runs measured: never a pass for lack of one
    empty = dataclasses.replace(run(), throughput_samples_per_s=None, data_wait_fraction=None, step_ms_p50=None)
    (result,) = evaluate(report(run()), baseline(empty))
    assert result.status is GateStatus.UNMEASURED and "no throughput or data wait" in result.message


def test_noise_too_large_to_judge_a_regression_is_not_a_pass() -> None:
    # a 90% loss "inside the noise" of a baseline that claims a spread of 500%
    results = evaluate(report(run(throughput=10.0, spread=0.02)), baseline(run(throughput=100.0, spread=5.0)))
    throughput = next(r for r in results if "throughput" in r.message)
    assert throughput.status is GateStatus.UNMEASURED
    assert "beyond the ±50% a change can be judged against" in throughput.message


# --- reading reports and comparing them ---


def test_a_report_read_back_from_its_json_compares_equal_to_itself() -> None:
    original = report(run("real"), run("synthetic", throughput=250.0, wait=0.01))
    read = read_figures(json.loads(json_report.document(original)), "r.json")
    assert read.modes == figures(original).modes
    result = compare(read, figures(original))
    assert all(c.change == pytest.approx(0, abs=1e-3) for m in result.modes for c in m.changes if c.change is not None)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "not a fastload report"),
        ({"schema": "fastload.report/0"}, "this fastload reads fastload.report/1"),
        ({"schema": "fastload.report/1", "runs": []}, "not a complete"),
    ],
)
def test_an_unreadable_report_says_what_is_wrong(document, message: str) -> None:
    with pytest.raises(UnreadableReport, match=message):
        read_figures(document, "x.json")


def test_the_comparison_document_marks_changes_beyond_noise() -> None:
    result = compare(figures(report(run(throughput=100.0))), figures(report(run(throughput=140.0))))
    doc = json.loads(comparison.document(result))
    assert doc["schema"] == "fastload.compare/1" and doc["same_script"] is True
    (mode,) = doc["modes"]
    throughput = next(c for c in mode["changes"] if c["figure"] == "throughput")
    assert throughput["change"] == pytest.approx(0.4) and throughput["beyond_noise"] is True
