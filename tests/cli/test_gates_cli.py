"""CI gates and `fastload compare` on the command line (hand-built reports, no training runs)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from fastload_cli.analyzer.compare import figures
from fastload_cli.analyzer.gates import Gates
from fastload_cli.cli import app
from fastload_cli.cli.gating import judge
from fastload_cli.cli.run import Output
from fastload_cli.errors import UsageError
from fastload_cli.records import Mode, ModeSpec, RunStatus
from fastload_cli.reporters import json_report
from tests.conftest import SCRIPTS
from tests.unit import builders as b
from tests.unit.test_gates import report, run

runner = CliRunner()
SCRIPT = str(SCRIPTS / "toy_train.py")


def write(path: Path, *runs, script: str = SCRIPT) -> str:
    path.write_text(json_report.document(report(*runs, script=script)))
    return str(path)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--fail-on", "slow", "'slow' is not a verdict"),
        ("--max-data-wait", "1.5", "not a fraction"),
        ("--max-data-wait", "lots", "--max-data-wait lots"),
        ("--baseline", "/nonexistent/r.json", "cannot read it"),
    ],
)
def test_a_bad_gate_is_a_usage_error_before_any_run(option: str, value: str, message: str) -> None:
    result = runner.invoke(app, ["diagnose", SCRIPT, option, value])
    assert result.exit_code == 2
    assert message in result.output


def test_a_baseline_of_another_script_is_refused_before_any_run(tmp_path: Path) -> None:
    other = write(tmp_path / "other.json", run(), script="other.py")
    result = runner.invoke(app, ["diagnose", SCRIPT, "--baseline", other])
    assert result.exit_code == 2
    assert "is a report of other.py" in result.output


def test_a_baseline_that_is_not_a_report_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    result = runner.invoke(app, ["sweep-workers", SCRIPT, "--baseline", str(path)])
    assert result.exit_code == 2
    assert "not a fastload report" in result.output


def test_a_failed_gate_exits_3_naming_the_figure_the_limit_and_the_report(capsys) -> None:
    out = Output(paths={"json": "report.json"}, gates=Gates(max_data_wait=0.2, min_throughput=50))
    with pytest.raises(typer.Exit) as stopped:
        judge(report(run(wait=0.35, throughput=100.0)), out)
    assert stopped.value.exit_code == 3
    err = capsys.readouterr().err
    assert "Gate failed: data wait 35% of the real run is above --max-data-wait 0.2" in err
    assert "(report: report.json)" in err
    assert "Gate passed: throughput" in err


def test_gates_that_pass_let_the_command_succeed() -> None:
    judge(report(run(wait=0.1)), Output(gates=Gates(max_data_wait=0.2)))  # no exit


def test_an_unmeasured_figure_under_a_gate_is_a_usage_error() -> None:
    failed = dataclasses.replace(b.summary("real", status=RunStatus.FAILED, batches=0), error="exited with status 1")
    with pytest.raises(UsageError, match="--min-throughput 10 cannot be judged"):
        judge(report(failed), Output(gates=Gates(min_throughput=10)))


def test_compare_shows_each_mode_before_and_after(tmp_path: Path) -> None:
    before = write(tmp_path / "before.json", run(throughput=100.0, wait=0.4), run("synthetic", throughput=300.0))
    after = write(tmp_path / "after.json", run(throughput=180.0, wait=0.1), run("synthetic", throughput=301.0))
    result = runner.invoke(app, ["compare", before, after])
    assert result.exit_code == 0, result.output
    assert "+80.0%" in result.output and "better" in result.output
    assert "within noise" in result.output  # synthetic moved by 0.3%, inside its ±4% noise
    done = runner.invoke(app, ["compare", before, after, "--json", "-"])
    doc = json.loads(done.stdout)
    assert [m["mode"] for m in doc["modes"]] == ["real", "synthetic"]
    beyond = {m["mode"]: m["changes"][0]["beyond_noise"] for m in doc["modes"]}
    assert beyond == {"real": True, "synthetic": False}


def test_compare_refuses_a_file_that_is_not_a_report(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not json")
    good = write(tmp_path / "r.json", run())
    result = runner.invoke(app, ["compare", good, str(path)])
    assert result.exit_code == 2
    assert "not a JSON document" in result.output


def test_figures_name_each_run_with_its_variant() -> None:
    tried = dataclasses.replace(b.summary("workers=4"), spec=ModeSpec(mode=Mode.WORKERS, workers=4, prefetch_factor=4))
    assert [m.mode for m in figures(report(tried)).modes] == ["workers=4 prefetch_factor=4"]


def test_a_format_whose_package_is_missing_fails_before_any_run(monkeypatch, tmp_path: Path) -> None:
    from fastload_cli.reporters import FORMATS

    html = FORMATS["html"]
    monkeypatch.setitem(FORMATS, "html", dataclasses.replace(html, requires=("no_such_module_here",)))
    result = runner.invoke(app, ["diagnose", SCRIPT, "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 1
    assert "needs no_such_module_here" in result.output and "fastload[html]" in result.output
    assert not (tmp_path / "r.html").exists()
