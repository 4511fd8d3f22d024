"""The timeline trace (Chrome trace-event JSON) of hand-built runs."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from fastload_cli.analyzer import analyze
from fastload_cli.analyzer.timelines import timeline
from fastload_cli.records import GpuSample
from fastload_cli.reporters import series, trace
from tests.unit import builders as b
from tests.unit.test_gates import report


@pytest.fixture(scope="module")
def runs():
    real = b.batches([100] + [30] * 19, 10)
    synthetic = b.batches([100] + [1] * 19, 10)
    return [
        b.run("real", real, samples=b.host_samples(real[-1].wait_end_ns, main_cores=0.4, worker_cores=(0.9, 0.8))),
        b.run("synthetic", synthetic, samples=b.host_samples(synthetic[-1].wait_end_ns)),
    ]


@pytest.fixture(scope="module")
def document(runs) -> dict:
    base = report(*analyze(runs).summaries)
    return json.loads(trace.document(dataclasses.replace(base, timelines=tuple(timeline(r) for r in runs))))


def slices(doc: dict, pid: int) -> Counter:
    return Counter(e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == pid)


def test_one_process_track_per_mode(document: dict) -> None:
    names = {e["pid"]: e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"}
    assert names == {1: "fastload: real", 2: "fastload: synthetic"}


def test_one_measured_wait_slice_per_measured_batch(runs, document: dict) -> None:
    summaries = analyze(runs).summaries
    for pid, (run, summary) in enumerate(zip(runs, summaries, strict=True), start=1):
        found = slices(document, pid)
        assert found[series.MEASURED] == summary.batches > 0
        assert found[series.WARMUP] == run.warmup_batches
        assert found[series.MEASURED] + found[series.WARMUP] + found[series.UNMEASURED] == len(run.batches)
        assert found["step"] == len(run.batches) - 1  # one epoch: a step between each two waits


def test_slices_are_in_microseconds_on_the_monotonic_clock(runs, document: dict) -> None:
    first = runs[0].batches[3]
    wait = next(e for e in document["traceEvents"] if e["ph"] == "X" and e["pid"] == 1 and e["args"].get("index") == 3)
    assert wait["ts"] == pytest.approx(first.wait_start_ns / 1000)
    assert wait["dur"] == pytest.approx(first.wait_ns / 1000)


def test_counters_fall_inside_their_run(runs, document: dict) -> None:
    counters = [e for e in document["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in counters} >= {"CPU % main (pid 100)", "CPU % worker (pid 200)", "RSS (MiB)"}
    for e in counters:
        run = runs[e["pid"] - 1]
        assert run.started_ns / 1000 <= e["ts"] <= run.ended_ns / 1000
    worker = [e["args"]["cpu"] for e in counters if e["pid"] == 1 and e["name"] == "CPU % worker (pid 200)"]
    assert worker and all(v == pytest.approx(90, abs=1) for v in worker)


def test_every_nvml_reading_of_the_run_is_a_counter_and_none_is_made_up(runs) -> None:
    real = runs[0]
    inside, late = real.ended_ns // 2, real.ended_ns + 1
    readings = (
        GpuSample(t_ns=inside, index=0, util_percent=87.0, memory_used_bytes=3 * 2**30, pcie_rx_bytes_per_s=12e9,
                  pcie_tx_bytes_per_s=None),
        GpuSample(t_ns=inside, index=1, util_percent=None, memory_used_bytes=None, pcie_rx_bytes_per_s=None,
                  pcie_tx_bytes_per_s=None),
        GpuSample(t_ns=late, index=0, util_percent=5.0, memory_used_bytes=1, pcie_rx_bytes_per_s=1.0,
                  pcie_tx_bytes_per_s=1.0),
    )  # fmt: skip
    sampled = dataclasses.replace(timeline(real), gpu_samples=readings)
    base = report(*analyze(runs[:1]).summaries)
    doc = json.loads(trace.document(dataclasses.replace(base, timelines=(sampled,))))
    gpu = {e["name"]: e["args"] for e in doc["traceEvents"] if e["ph"] == "C" and e["name"].startswith("GPU")}
    assert gpu == {
        "GPU 0 busy %": {"busy": 87.0},
        "GPU 0 memory used (MiB)": {"used": 3072.0},
        "GPU 0 PCIe (MB/s)": {"to device": 12000.0},  # NVML gave no reading from the device: none shown
    }
