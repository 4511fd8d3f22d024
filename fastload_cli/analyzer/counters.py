"""Counters sampled outside the child, read over a window. Cumulative ones (CPU seconds, bytes
read, the machine's CPU time): a difference of values interpolated at the window's edges, summed
over the window's spans. The GPU's busy %: the readings that describe the window, averaged. Pure
functions of the samples."""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fastload_cli.records import HostSample, ProcRole, ProcSample, RunResult

Span = tuple[int, int]  # (start_ns, end_ns)


class Cumulative:
    """A cumulative counter sampled at times ``t``; linear between samples, flat outside them."""

    def __init__(self, points: Iterable[tuple[int, float]]) -> None:
        pairs = sorted(points)
        self.t = [p[0] for p in pairs]
        self.v = [p[1] for p in pairs]

    def at(self, t_ns: int) -> float:
        i = bisect.bisect_left(self.t, t_ns)
        if i == 0:
            return self.v[0]
        if i == len(self.t):
            return self.v[-1]
        t0, t1, v0, v1 = self.t[i - 1], self.t[i], self.v[i - 1], self.v[i]
        return v0 + (v1 - v0) * (t_ns - t0) / (t1 - t0) if t1 > t0 else v1

    def over(self, window: list[Span]) -> float:
        return sum(self.at(end) - self.at(start) for start, end in window)


def proc_series(
    samples: tuple[HostSample, ...], role: ProcRole, value: Callable[[ProcSample], float | None]
) -> list[Cumulative] | None:
    """One series per process of ``role``; None when no such process had a readable value.

    A process has one role for its life: a DataLoader worker sampled before the child named it
    is a worker from its start. Its counters were 0 when it started, so a window before its
    first sample reads what it spent from its start, not nothing."""
    points: dict[int, list[tuple[int, float]]] = defaultdict(list)
    roles: dict[int, ProcRole] = {}
    started: dict[int, int] = {}
    for sample in samples:
        for proc in sample.procs:
            if proc.role is not ProcRole.OTHER or proc.pid not in roles:
                roles[proc.pid] = proc.role
            if proc.started_ns is not None:
                started[proc.pid] = proc.started_ns
            reading = value(proc)
            if reading is not None:
                points[proc.pid].append((sample.t_ns, reading))
    series = []
    for pid, found in points.items():
        if roles[pid] is role:
            first = min(found)[0]
            start = [(started[pid], 0.0)] if started.get(pid, first) < first else []
            series.append(Cumulative(start + found))
    return series or None


Reading = Callable[[ProcSample], float | None]


def role_delta(samples: tuple[HostSample, ...], role: ProcRole, window: list[Span], value: Reading) -> float | None:
    """How much ``value`` grew over the window, summed over the processes of ``role``."""
    series = proc_series(samples, role, value)
    return None if series is None else sum(s.over(window) for s in series)


def tree_delta(samples: tuple[HostSample, ...], window: list[Span], value: Reading) -> float | None:
    """The same, over the whole process tree."""
    found = [d for d in (role_delta(samples, role, window, value) for role in ProcRole) if d is not None]
    return sum(found) if found else None


def tree_cpu_s(samples: tuple[HostSample, ...], window: list[Span]) -> float | None:
    """CPU seconds the process tree used over the window, its exited processes' included.

    A process that exits leaves the samples at the value last read of it, short of what it used
    from then to its exit (a DataLoader worker shut down at an epoch's end, many at once), and
    its whole count moves to its parent's count of reaped children: ``_exits`` adds that part,
    the jump of those counts less what was read of the processes that left."""
    found = tree_delta(samples, window, lambda p: p.cpu_s)
    return None if found is None else found + _exits(samples).over(window)


def _exits(samples: tuple[HostSample, ...]) -> Cumulative:
    """At each sample: the tree's reaped children's CPU seconds, less the last reading of every
    process gone from the samples by then (what the per-process series already count)."""
    last: dict[int, float] = {}
    before: set[int] = set()
    gone = 0.0  # kept as processes leave and come back, not summed again at every sample
    points = []
    for sample in samples:
        present = {p.pid for p in sample.procs}
        gone += sum(last[pid] for pid in before - present) - sum(last[pid] for pid in present - before if pid in last)
        reaped = sum(p.reaped_cpu_s or 0.0 for p in sample.procs)
        points.append((sample.t_ns, reaped - gone))
        last.update((p.pid, p.cpu_s) for p in sample.procs)
        before = present
    return Cumulative(points or [(0, 0.0)])


def own_cpu_s(samples: tuple[HostSample, ...], window: list[Span]) -> float:
    """fastload's own CPU seconds over the window (its sampler, its reading of the events)."""
    read = [(s.t_ns, s.own_cpu_s) for s in samples if s.own_cpu_s is not None]
    return Cumulative(read).over(window) if read else 0.0


@dataclass(frozen=True, slots=True)
class SystemCpu:
    """CPU seconds of the whole machine over a window."""

    busy_s: float
    iowait_s: float | None  # None where the platform does not report it
    total_s: float  # busy + idle + iowait: all cores, the whole window
    steal_s: float | None = None  # of busy_s: a virtual machine's CPU time its host gave other guests


def system_cpu(samples: tuple[HostSample, ...], window: list[Span]) -> SystemCpu | None:
    if len(samples) < 2 or not window:
        return None
    busy = Cumulative((s.t_ns, s.system.busy_s) for s in samples).over(window)
    idle = Cumulative((s.t_ns, s.system.idle_s) for s in samples).over(window)
    has_iowait = all(s.system.iowait_s is not None for s in samples)
    iowait = Cumulative((s.t_ns, s.system.iowait_s or 0.0) for s in samples).over(window) if has_iowait else None
    total = busy + idle + (iowait or 0.0)
    has_steal = all(s.system.steal_s is not None for s in samples)
    steal = Cumulative((s.t_ns, s.system.steal_s or 0.0) for s in samples).over(window) if has_steal else None
    return SystemCpu(busy_s=busy, iowait_s=iowait, total_s=total, steal_s=steal) if total > 0 else None


def foreign_cpu_fraction(system: SystemCpu | None, samples: tuple[HostSample, ...], window: list[Span]) -> float | None:
    """Share of all CPU time on the machine over the window used by processes outside the run
    (``tree_cpu_s``) and fastload (``own_cpu_s``). A virtual machine's steal time is no process's
    (``steal_fraction``)."""
    run_cpu_s = tree_cpu_s(samples, window)
    if system is None or run_cpu_s is None:
        return None
    others = system.busy_s - (system.steal_s or 0.0) - run_cpu_s - own_cpu_s(samples, window)
    return min(1.0, max(0.0, others) / system.total_s)


def steal_fraction(system: SystemCpu | None) -> float | None:
    """Share of all CPU time over the window that a virtual machine's host gave its other guests
    or held back under the guest's CPU quota (steal): the run's cores were not whole cores. None
    where the platform does not report it."""
    if system is None or system.steal_s is None:
        return None
    return min(1.0, max(0.0, system.steal_s / system.total_s))


GPU_READING_PERIOD_NS = 1_000_000_000  # the longest period NVML's utilisation reading averages over


def gpu_util_percent(run: RunResult, window: list[Span]) -> float | None:
    """Device busy % averaged over the window, for the busiest visible device.

    NVML's reading describes the period before it (1/6 s to 1 s): a window shorter than the
    sampler's interval that holds no reading is read by the first one after its end, within
    ``GPU_READING_PERIOD_NS``, which covers it.
    """
    read = [g for g in run.gpu_samples if g.util_percent is not None]
    inside = [g for g in read if any(a <= g.t_ns <= b for a, b in window)]
    if not inside and window:
        end = window[-1][1]
        after = sorted((g for g in read if end < g.t_ns <= end + GPU_READING_PERIOD_NS), key=lambda g: g.t_ns)
        inside = [g for g in after if g.t_ns == after[0].t_ns]
    per_device: dict[int, list[float]] = defaultdict(list)
    for g in inside:
        per_device[g.index].append(g.util_percent or 0.0)
    return max((statistics.fmean(v) for v in per_device.values()), default=None)
