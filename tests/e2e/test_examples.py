"""Each bundled example, diagnosed for real, gives its planted verdict."""

from __future__ import annotations

import json

import pytest

from fastload_cli.examples import EXAMPLES
from tests.conftest import run_fastload

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_gives_its_planted_verdict(example) -> None:
    done = run_fastload("diagnose", str(example.path), "--max-batches", "20", "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # stdout is exactly one JSON document
    assert report["schema"] == "fastload.report/1"
    assert report["verdict"]["bottleneck"] == example.expected, report["verdict"]
    modes = [run["mode"] for run in report["runs"]]
    assert modes[:2] == ["real", "synthetic"]
    assert all(run["status"] == "ok" and run["batches"] > 0 for run in report["runs"])
    ceiling = report["verdict"]["speedup_ceiling"]
    for rec in report["recommendations"]:
        assert rec["expected_speedup"] is None or rec["expected_speedup"] <= ceiling


def test_augmentation_example_reports_what_no_aug_replaced() -> None:
    example = next(e for e in EXAMPLES if e.name == "augmentation")
    done = run_fastload("diagnose", str(example.path), "--modes", "real,no-aug", "--max-batches", "5", "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    replaced = [s["original"].split("(")[0] for s in report["substitutions"]]
    assert "ColorJitter" in replaced and "RandomResizedCrop" in replaced
    assert report["runs"][1]["mode"] == "no-aug" and report["runs"][1]["batches"] > 0
