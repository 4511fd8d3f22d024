"""Reports from elsewhere (`compare`, `merge`, `--baseline`): none can crash or fool fastload.

Each hostile document is refused as a usage error (exit 2) with one line naming the file (and the
field, where one is wrong), before anything reads it; none gives a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fastload_cli.cli import app, gating
from fastload_cli.reporters import json_report
from tests.conftest import SCRIPTS
from tests.unit.test_gates import report, run

runner = CliRunner()
SCRIPT = str(SCRIPTS / "toy_train.py")
Doc = dict[str, Any]


def good() -> Doc:
    return json.loads(json_report.document(report(run(), script=SCRIPT)))


def edited(change: Callable[[Doc], object]) -> str:
    document = good()
    change(document)
    return json.dumps(document)


def first_run(document: Doc) -> Doc:
    return document["runs"][0]


HOSTILE: dict[str, tuple[str | bytes, str]] = {  # name -> (the file's content, what the error names)
    "empty file": ("", "not a JSON document"),
    "not JSON": ("{", "not a JSON document"),
    "a list": ("[]", "not a fastload report"),
    "another schema": (edited(lambda d: d.update(schema="fastload.report/9")), "schema"),
    "runs missing": (edited(lambda d: d.pop("runs")), "runs: missing"),
    "runs an object": (edited(lambda d: d.update(runs={})), "runs: expected a list"),
    "a run that is a string": (edited(lambda d: d.update(runs=["x"])), "runs[0]: expected an object"),
    "a mode that is a number": (edited(lambda d: first_run(d).update(mode=5)), "runs[0].mode"),
    "an unknown status": (edited(lambda d: first_run(d).update(status="weird")), "runs[0].status"),
    "throughput a string": (
        edited(lambda d: first_run(d).update(throughput_samples_per_s="fast")),
        "runs[0].throughput_samples_per_s",
    ),
    "NaN": (edited(lambda d: first_run(d).update(throughput_samples_per_s=1.5)).replace("1.5", "NaN"), "NaN"),
    "Infinity": (edited(lambda d: first_run(d).update(throughput_spread=1.5)).replace("1.5", "Infinity"), "Infinity"),
    "1e999": (edited(lambda d: first_run(d).update(data_wait_fraction=1.5)).replace("1.5", "1e999"), "out of range"),
    "an integer of 5,000 digits": (
        edited(lambda d: first_run(d).update(batches=7)).replace('"batches": 7', '"batches": ' + "9" * 5000),
        "not a JSON document",
    ),
    "a huge integer": (edited(lambda d: first_run(d).update(rss_bytes=10**30)), "runs[0].rss_bytes"),
    "nested deeply": (edited(lambda d: d.update(environment="X")).replace('"X"', "[" * 100_000 + "]" * 100_000), ""),
    "verdict missing": (edited(lambda d: d.pop("verdict")), "verdict: missing"),
    "confidence true": (edited(lambda d: d["verdict"].update(confidence=True)), "verdict.confidence"),
    "script a number": (edited(lambda d: d.update(script=12)), "script"),
    "a bad rank inside a run": (edited(lambda d: first_run(d).update(ranks=[{"mode": []}])), "runs[0].ranks[0]"),
    "a label of 200,000 characters": (edited(lambda d: d["verdict"].update(label="x" * 200_000)), "verdict.label"),
    "not UTF-8": (b'{"schema": "\xff\xfe"}', "not a JSON document"),
}


def written(tmp_path: Path, content: str | bytes) -> str:
    path = tmp_path / "hostile.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


def refused(args: list[str], path: str, names: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert ("Traceback" not in result.output and result.exception is None) or isinstance(result.exception, SystemExit)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and path in errors[0] and names in errors[0], result.output


@pytest.mark.parametrize("name", HOSTILE)
def test_compare_refuses_a_hostile_report(tmp_path: Path, name: str) -> None:
    content, names = HOSTILE[name]
    fine = tmp_path / "fine.json"
    fine.write_text(json.dumps(good()))
    path = written(tmp_path, content)
    refused(["compare", path, str(fine)], path, names)


@pytest.mark.parametrize("name", HOSTILE)
def test_merge_refuses_a_hostile_report(tmp_path: Path, name: str) -> None:
    content, names = HOSTILE[name]
    path = written(tmp_path, content)
    refused(["merge", path], path, names)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_baseline_is_refused_before_any_run(tmp_path: Path, name: str) -> None:
    content, names = HOSTILE[name]
    path = written(tmp_path, content)
    refused(["diagnose", SCRIPT, "--baseline", path], path, names)


def test_a_report_larger_than_any_report_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gating, "MAX_REPORT_BYTES", 1000)
    path = written(tmp_path, json.dumps(good()))
    refused(["compare", path, path], path, "more than a report's 1,000")


def test_a_good_report_is_read(tmp_path: Path) -> None:  # the checks above refuse what is wrong, and only that
    path = written(tmp_path, json.dumps(good()))
    result = runner.invoke(app, ["compare", path, path])
    assert result.exit_code == 0, result.output


def test_a_report_of_a_sweep_is_read(tmp_path: Path) -> None:
    """A sweep's prediction holds pairs of a whole number and a rate: the check reads each item by
    its own type."""
    from tests.unit.test_report_sections import full_report

    path = written(tmp_path, json_report.document(full_report()))
    result = runner.invoke(app, ["compare", path, path])
    assert result.exit_code == 0, result.output
