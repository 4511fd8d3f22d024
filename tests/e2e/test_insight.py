"""The breakdown (its own run, or timed at the switch to the replays) and the py-spy profile,
on real child runs."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from fastload_cli.reporters.json_report import FLOAT_DIGITS
from tests.conftest import ROOT, SCRIPTS, run_fastload

pytestmark = pytest.mark.slow
PATTERNS = str(SCRIPTS / "patterns.py")


def report_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def diagnose(*args: str) -> dict:
    options = ("--modes", "real", "--max-batches", "12", "--fixed-batches", "--no-sweep")
    return report_of(run_fastload("diagnose", PATTERNS, *options, *args))


def test_the_breakdown_times_getitem_and_collate_and_leaves_the_runs_alone() -> None:
    report = diagnose("--breakdown", "--json", "-", "--", "--batch", "dict")
    found = report["breakdown"]
    assert found["items"] == 64 and found["threads"] == 1  # the loader has workers: one torch thread
    assert [s["kind"] for s in found["steps"]] == ["getitem", "collate"]
    assert sum(s["share"] for s in found["steps"]) == pytest.approx(1.0, abs=1e-3)
    assert [r["mode"] for r in report["runs"]] == ["real"]  # the breakdown run is not a mode
    assert report["batch"]["python_type"] == "dict" and report["batch"]["samples"] == 8


def test_the_breakdown_is_timed_at_the_switch_to_the_replays_without_a_start_of_its_own() -> None:
    options = ("--modes", "real,synthetic", "--max-batches", "12", "--no-sweep", "--breakdown", "--json", "-")
    report = report_of(run_fastload("diagnose", PATTERNS, *options))
    found = report["breakdown"]
    assert found["unavailable"] is None and found["items"] == 64 and found["threads"] == 1
    assert [s["kind"] for s in found["steps"]] == ["getitem", "collate"]
    modes = [r["mode"] for r in report["runs"]]
    assert modes[:2] == ["real", "synthetic"]  # a pair near the line is measured again
    spent = report["time_spent"]
    # one start a pair (and one more where the machine disturbed a run, measured again), none besides
    assert spent["runs"] <= modes.count("real") + (spent["again_s"] > 0) and spent["breakdown_s"] > 0


def test_an_iterable_dataset_has_no_breakdown_and_says_why() -> None:
    report = diagnose("--breakdown", "--json", "-", "--", "--pattern", "iterable")
    assert report["breakdown"]["steps"] == []
    assert "IterableDataset" in report["breakdown"]["unavailable"]


@pytest.mark.skipif(shutil.which("py-spy") is None, reason="py-spy is not installed")
def test_py_spy_profiles_the_workers_or_says_why_not() -> None:
    report = diagnose("--py-spy", "--json", "-")
    profile = report["profile"]
    if profile["unavailable"] is None:
        assert profile["role"] == "workers" and len(profile["pids"]) == 2 and profile["samples"] > 0
        rounding = len(profile["top"]) * 0.5 * 10**-FLOAT_DIGITS  # each share is rounded in the JSON
        assert sum(e["share"] for e in profile["top"]) <= 1.0 + rounding
    else:  # no permission to attach here: a caveat says so and the report is complete
        assert any("py-spy" in c for c in report["verdict"]["caveats"])
    assert report["runs"][0]["batches"] == 12


def test_augmentation_kept_in_a_preset_object_is_replaced_and_broken_down() -> None:
    # torchvision's classification reference keeps its pipeline in a preset object (in a module
    # beside the script) that the dataset calls: no-aug and the breakdown look inside it
    script = str(ROOT / "scripts" / "zoo" / "reference_presets.py")
    options = ("--modes", "real,no-aug", "--max-batches", "8", "--no-sweep", "--breakdown", "--json", "-")
    report = report_of(run_fastload("diagnose", script, *options, "--", "--samples", "512", "--epochs", "1"))
    replaced = {s["original"].split("(")[0]: s["location"] for s in report["substitutions"]}
    assert set(replaced) == {"RandomResizedCrop", "RandomHorizontalFlip", "AugMix", "RandomErasing"}
    assert replaced["AugMix"] == "dataset.transform.transforms[2]"
    assert [r["mode"] for r in report["runs"]] == ["real", "no-aug"] and report["runs"][1]["batches"] > 0
    timed = [s["name"].split("(")[0] for s in report["breakdown"]["steps"] if s["kind"] == "transform"]
    assert {"RandomResizedCrop", "AugMix", "Normalize", "RandomErasing"} <= set(timed)
    assert "ClassificationPresetTrain" not in timed
