"""A run's samples as series over time, for the formats that draw them (the trace, the page).

Rates come from the difference of two consecutive samples (the parent samples cumulative CPU
seconds and bytes read), stamped at the later one; samples outside the run are left out.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from fastload_cli.records import BatchRecord, GpuSample, HostSample, ProcRole, Timeline

MEASURED = "data wait"
WARMUP = "data wait (warm-up)"
UNMEASURED = "data wait (epoch start-up or drain, not measured)"
STEP = "step"


@dataclass(frozen=True, slots=True)
class Point:
    series: str  # "main (pid 12)", "worker (pid 13)", "storage reads", "RSS"
    t_ns: int
    value: float  # % of one core for CPU, bytes/s for reads, bytes for RSS


@dataclass(frozen=True, slots=True)
class Slice:
    """A span of the training loop: a wait for a batch, or a step between two waits of an epoch."""

    name: str  # MEASURED, WARMUP, UNMEASURED, "data wait (loader N)", or STEP
    start_ns: int
    end_ns: int
    batch: BatchRecord  # the batch waited for; for a step, the batch that ends it
    measured: bool = False


def loop(timeline: Timeline) -> Iterator[Slice]:
    """Every wait, named for what the report does with it, and the training loader's steps."""
    measured = set(timeline.measured)
    training = 0  # the training loader's batches so far
    previous_end: dict[int, int] = {}  # iterator -> the end of its last wait
    for position, batch in enumerate(timeline.batches):
        if batch.loader_id != timeline.loader_id:
            yield Slice(f"data wait (loader {batch.loader_id})", batch.wait_start_ns, batch.wait_end_ns, batch)
            continue
        counted = position in measured
        name = MEASURED if counted else WARMUP if training < timeline.warmup_batches else UNMEASURED
        yield Slice(name, batch.wait_start_ns, batch.wait_end_ns, batch, measured=counted)
        before = previous_end.get(batch.iterator_id)
        if before is not None and batch.wait_start_ns > before:
            yield Slice(STEP, before, batch.wait_start_ns, batch)
        previous_end[batch.iterator_id] = batch.wait_end_ns
        training += 1


def inside(timeline: Timeline) -> list[HostSample]:
    return [s for s in timeline.host_samples if timeline.started_ns <= s.t_ns <= timeline.ended_ns]


def process_cpu(timeline: Timeline) -> Iterator[Point]:
    """CPU of the main process and of each DataLoader worker, % of one core."""
    for before, after in itertools.pairwise(inside(timeline)):
        seconds = (after.t_ns - before.t_ns) / 1e9
        earlier = {p.pid: p.cpu_s for p in before.procs}
        for proc in after.procs:
            if seconds > 0 and proc.pid in earlier and proc.role is not ProcRole.OTHER:
                cpu = 100 * max(0.0, proc.cpu_s - earlier[proc.pid]) / seconds
                yield Point(f"{proc.role.value} (pid {proc.pid})", after.t_ns, cpu)


def read_rate(timeline: Timeline) -> Iterator[Point]:
    """Bytes per second read from storage by the run's processes."""
    for before, after in itertools.pairwise(inside(timeline)):
        seconds = (after.t_ns - before.t_ns) / 1e9
        earlier = {p.pid: p.read_bytes for p in before.procs if p.read_bytes is not None}
        deltas = [p.read_bytes - earlier[p.pid] for p in after.procs if p.read_bytes is not None and p.pid in earlier]
        if seconds > 0 and deltas:
            yield Point("storage reads", after.t_ns, max(0, sum(deltas)) / seconds)


def memory(timeline: Timeline) -> Iterator[Point]:
    """The resident memory of the run's processes together."""
    for sample in inside(timeline):
        rss = [p.rss_bytes for p in sample.procs if p.rss_bytes is not None]
        if rss:
            yield Point("RSS", sample.t_ns, float(sum(rss)))


def device_samples(timeline: Timeline) -> Iterator[GpuSample]:
    """NVML's readings of every device taken while the run ran (a field NVML could not read is None)."""
    return (s for s in timeline.gpu_samples if timeline.started_ns <= s.t_ns <= timeline.ended_ns)
