"""Each bundled example, diagnosed for real, gives its planted verdict."""

from __future__ import annotations

import json

import pytest

from fastload_cli.examples import EXAMPLES
from tests.conftest import run_fastload

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    """`fastload diagnose` on every bundled example, once for the tests of this module."""
    found = {}
    for example in EXAMPLES:
        done = run_fastload("diagnose", str(example.path), "--max-batches", "20", "--json", "-", timeout=600)
        assert done.returncode == 0, done.stderr
        found[example.name] = json.loads(done.stdout)  # stdout is exactly one JSON document
    return found


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_gives_its_planted_verdict(example, reports: dict[str, dict]) -> None:
    report = reports[example.name]
    assert report["schema"] == "fastload.report/1"
    assert report["verdict"]["bottleneck"] == example.expected, report["verdict"]
    modes = [run["mode"] for run in report["runs"]]
    assert modes[:2] == ["real", "synthetic"]
    assert all(run["status"] == "ok" and run["batches"] > 0 for run in report["runs"])
    ceiling = report["verdict"]["speedup_ceiling"]
    for rec in report["recommendations"]:
        assert rec["evidence"], rec["id"]
        assert rec["expected_speedup"] is None or rec["expected_speedup"] <= ceiling


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
