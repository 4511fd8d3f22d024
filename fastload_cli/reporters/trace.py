"""``Report`` -> a trace in the Chrome trace-event JSON format (Perfetto's UI, ``chrome://tracing``).

One process track per run (mode). On its training-loop thread: a slice per data wait, named for
what the report does with it (measured, warm-up, start-up or drain, another loader's), a slice per
step between two waits of an epoch, and each iterator's start-up. A phases thread marks the run
from start to stop, the warm-up and the measured window. Counter tracks: the CPU of the main
process and of each worker, the run's memory (RSS), its storage reads, and what NVML read of each
device (busy %, memory used, PCIe throughput each way) where it was sampled.

Timestamps are the shared monotonic clock in microseconds, so a run's batches and the samples the
parent took of its processes line up; samples outside a run's start and end are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fastload_cli.records import GpuSample, Report, Timeline
from fastload_cli.reporters import series

LOOP_TID, PHASES_TID = 1, 2
Event = dict[str, Any]


def document(report: Report) -> str:
    return json.dumps(trace(report), allow_nan=False) + "\n"


def trace(report: Report) -> dict[str, Any]:
    events: list[Event] = []
    for pid, timeline in enumerate(report.timelines, start=1):
        events.extend(_metadata(pid, timeline))
        events.extend(_loop(pid, timeline))
        events.extend(_phases(pid, timeline))
        events.extend(_counters(pid, timeline))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "producer": f"fastload {report.fastload_version}",
            "command": report.command.value,
            "script": report.script,
            "clock": "CLOCK_MONOTONIC, microseconds",
        },
    }


def _us(ns: int) -> float:
    return ns / 1000


def _slice(pid: int, tid: int, name: str, start_ns: int, end_ns: int, cat: str, **args: Any) -> Event:
    return {
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "name": name,
        "cat": cat,
        "ts": _us(start_ns),
        "dur": max(0.0, _us(end_ns - start_ns)),
        "args": args,
    }


def _metadata(pid: int, timeline: Timeline) -> Iterator[Event]:
    label = timeline.mode + (f" {timeline.variant}" if timeline.variant else "")
    yield {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"fastload: {label}"}}
    yield {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}
    yield {"ph": "M", "pid": pid, "tid": LOOP_TID, "name": "thread_name", "args": {"name": "training loop"}}
    yield {"ph": "M", "pid": pid, "tid": PHASES_TID, "name": "thread_name", "args": {"name": "phases"}}


def _loop(pid: int, timeline: Timeline) -> Iterator[Event]:
    for part in series.loop(timeline):
        batch = part.batch
        if part.name == series.STEP:
            yield _slice(pid, LOOP_TID, part.name, part.start_ns, part.end_ns, "step", before_batch=batch.index)
            continue
        yield _slice(
            pid,
            LOOP_TID,
            part.name,
            part.start_ns,
            part.end_ns,
            "wait",
            loader=batch.loader_id,
            epoch_iterator=batch.iterator_id,
            index=batch.index,
            samples=batch.samples,
            bytes=batch.nbytes,
            synthetic=batch.synthetic,
            measured=part.measured,
        )
    for it in timeline.iterators:
        name = "iterator start-up (workers reset)" if it.reused else "iterator start-up (workers spawn)"
        yield _slice(
            pid, LOOP_TID, name, it.started_ns, it.ready_ns, "startup", loader=it.loader_id, workers=len(it.worker_pids)
        )


def _phases(pid: int, timeline: Timeline) -> Iterator[Event]:
    yield _slice(pid, PHASES_TID, "run", timeline.started_ns, timeline.ended_ns, "phase", mode=timeline.mode)
    training = [b for b in timeline.batches if b.loader_id == timeline.loader_id]
    if timeline.warmup_batches and len(training) >= timeline.warmup_batches:
        end = training[timeline.warmup_batches - 1].wait_end_ns
        yield _slice(pid, PHASES_TID, "warm-up", timeline.started_ns, end, "phase", batches=timeline.warmup_batches)
    if timeline.measured:
        first, last = timeline.batches[timeline.measured[0]], timeline.batches[timeline.measured[-1]]
        yield _slice(
            pid, PHASES_TID, "measured", first.wait_start_ns, last.wait_end_ns, "phase", batches=len(timeline.measured)
        )


def _counter(pid: int, name: str, t_ns: int, **values: float) -> Event:
    return {"ph": "C", "pid": pid, "name": name, "ts": _us(t_ns), "args": values}


def _counters(pid: int, timeline: Timeline) -> Iterator[Event]:
    for point in series.process_cpu(timeline):
        yield _counter(pid, f"CPU % {point.series}", point.t_ns, cpu=point.value)
    for point in series.read_rate(timeline):
        yield _counter(pid, "storage reads (MB/s)", point.t_ns, read=point.value / 1e6)
    for point in series.memory(timeline):
        yield _counter(pid, "RSS (MiB)", point.t_ns, rss=point.value / 2**20)
    for sample in series.device_samples(timeline):
        yield from _device_counters(pid, sample)


def _device_counters(pid: int, sample: GpuSample) -> Iterator[Event]:
    """What NVML read of one device at one time, a counter per reading it has."""
    gpu, t_ns = f"GPU {sample.index}", sample.t_ns
    if sample.util_percent is not None:
        yield _counter(pid, f"{gpu} busy %", t_ns, busy=sample.util_percent)
    if sample.memory_used_bytes is not None:
        yield _counter(pid, f"{gpu} memory used (MiB)", t_ns, used=sample.memory_used_bytes / 2**20)
    pcie = {"to device": sample.pcie_rx_bytes_per_s, "from device": sample.pcie_tx_bytes_per_s}
    if any(v is not None for v in pcie.values()):
        yield _counter(pid, f"{gpu} PCIe (MB/s)", t_ns, **{k: v / 1e6 for k, v in pcie.items() if v is not None})
