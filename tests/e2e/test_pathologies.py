"""Pathologies on a real child: the batch each worker delivers and a digest of an IterableDataset's
samples reach the report, and the two fixes a pathology calls for are applied inside the unmodified
script (the script sees them). No timing is asserted: the fixes' gains are benchmarks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS, run_fastload

pytestmark = pytest.mark.slow
SCRIPT = str(SCRIPTS / "pathology_train.py")


def seen(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_workers_reading_one_stream_in_full_are_found_yielding_the_same_samples(tmp_path: Path) -> None:
    done = run_fastload(
        "diagnose", SCRIPT, "--modes", "real", "--max-batches", "20", "--json", "-", "-q",
        "--", "--seen", str(tmp_path / "seen.jsonl"), "--stream", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    kinds = [p["kind"] for p in report["pathologies"]]
    assert kinds[0] == "duplicate-samples", kinds
    assert report["pathologies"][0]["values"]["copies"] == pytest.approx(2.0, rel=0.15)


def test_try_applies_in_order_and_worker_threads_inside_the_script(tmp_path: Path) -> None:
    path = tmp_path / "seen.jsonl"
    fixes = ["--fix", "in-order", "--fix", "worker-threads=1"]
    done = run_fastload("try", SCRIPT, *fixes, "--max-batches", "12", "--json", "-", "-q", "--", "--seen", str(path))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    modes = [r["mode"] for r in report["runs"]]
    assert modes == ["real", "fix:in-order", "fix:worker-threads=1", "fix:in-order+worker-threads=1"]
    found = {f["name"]: f for f in report["fixes"]}
    assert found["in-order"]["measured"] and "in_order=False" in found["in-order"]["code"]
    assert "another order" in found["in-order"]["batches"]
    assert found["worker-threads=1"]["measured"] and "WorkerThreads(1)" in found["worker-threads=1"]["code"]
    # what each run of the script saw (a run disturbed by other processes is made again): its
    # loader's in_order, then its two workers' thread pools
    runs: list[tuple[bool, list[dict]]] = []
    for line in seen(path):
        if "in_order" in line:
            runs.append((line["in_order"], []))
        else:
            runs[-1][1].append(line)
    limited = [(order, workers) for order, workers in runs if all(set(w["pools"].values()) == {1} for w in workers)]
    as_is = [(order, workers) for order, workers in runs if (order, workers) not in limited]
    # worker-threads=1 alone and with in-order: every pool in both workers one thread
    assert {order for order, _ in limited} == {True, False}
    assert all(len(workers) == 2 for _, workers in limited)
    # the real run and in-order alone: numpy's pool as the machine sizes it, where it has several cores
    if (os.cpu_count() or 1) > 1:
        assert {order for order, _ in as_is} == {True, False}
