"""Where a command's time went, and the least time its verdict needs: pure functions of its runs.

Each process of the script is cut into its start (to its first ``iter()``), its warm-up (to its
first measured window; the gaps between an in-process run's settings), its measured windows, and
its end (the stop, a stalled batch or an epoch's end waited for, the shutdown), and the
breakdown where one was timed inside it (a real+synthetic run's, at its switch): ``of_run``.
``account`` adds the runs up against the command's total and the measuring limit: one start of
the script and ``TIME_LIMIT_BATCHES`` steady batches of each mode compared at its own step time.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.window import NS, loader_batches, steady_steps
from fastload_cli.records import Mode, ModeSpec, RunResult, RunSummary, RunTime, TimeSpent

UNCOMPARED = (Mode.BREAKDOWN, Mode.SPLIT, Mode.IN_PROCESS)  # runs whose figures are no mode's to compare


def windows(runs: Sequence[RunResult], *, whole_epochs: bool = False) -> list[tuple[int, int]]:
    """The measured windows of ``runs`` (one run, or the settings an in-process run measured in
    turn), as (start, end) on the monotonic clock. ``whole_epochs``: the settings took turns an
    epoch each and are read over those whole epochs, start-ups, bursts and drains included
    (``metrics.training_throughput``): each window runs from its warm-up's last batch to its last."""
    found = []
    for run in runs:
        batches = loader_batches(run) if whole_epochs else []
        if len(batches) > run.warmup_batches > 0:
            found.append((batches[run.warmup_batches - 1].wait_end_ns, batches[-1].wait_end_ns))
            continue
        steps = steady_steps(run)
        if steps:
            found.append((steps[0].previous_end_ns, steps[-1].end_ns))
    return found


def of_run(run: RunResult, measured: Sequence[tuple[int, int]], *, again: bool = False) -> RunTime:
    """Where ``run`` spent its time, ``measured`` its windows (``windows``)."""
    wall = max(0, run.ended_ns - run.started_ns)
    breakdown = run.spec.mode is Mode.BREAKDOWN
    first = min((it.started_ns for it in run.iterators), default=None)
    if first is None or first < run.started_ns:  # no iter(): the whole run was the script's start
        return RunTime(start_s=wall / NS, warmup_s=0.0, measured_s=0.0, end_s=0.0, again=again, breakdown=breakdown)
    start = min(wall, first - run.started_ns)
    inside = [(max(a, first), min(b, run.ended_ns)) for a, b in measured if b > a]
    window = sum(max(0, b - a) for a, b in inside)
    end = run.ended_ns - max((b for _, b in inside), default=run.ended_ns) if inside else wall - start
    timing = 0 if breakdown else min(run.breakdown_ns, max(0, wall - start - window - end))
    warmup = max(0, wall - start - window - end - timing)
    return RunTime(
        start_s=start / NS,
        warmup_s=warmup / NS,
        measured_s=window / NS,
        end_s=end / NS,
        again=again,
        breakdown=breakdown,
        breakdown_s=timing / NS,
    )


def account(times: Sequence[RunTime], summaries: Sequence[RunSummary], total_s: float | None) -> TimeSpent:
    """The command's time: its runs' parts added up, and the measuring limit (``limit_s``)."""
    runs = [t for t in times if not t.breakdown]
    return TimeSpent(
        total_s=total_s,
        runs=len(times),
        starts_s=sum(t.start_s for t in runs),
        warmups_s=sum(t.warmup_s for t in runs),
        measured_s=sum(t.measured_s for t in runs),
        ends_s=sum(t.end_s for t in runs),
        again_s=sum(t.wall_s for t in runs if t.again),
        breakdown_s=sum(t.wall_s for t in times if t.breakdown) + sum(t.breakdown_s for t in runs),
        limit_s=limit_s(times, summaries),
    )


def limit_s(times: Sequence[RunTime], summaries: Sequence[RunSummary]) -> float | None:
    """One start of the script (the first run's) and ``TIME_LIMIT_BATCHES`` steady batches of each
    mode compared, at its own step time (its first run's median step); None before a run measured."""
    steps: dict[ModeSpec, float] = {}
    for s in summaries:
        if s.spec.mode not in UNCOMPARED and s.step_ms_p50 is not None:
            steps.setdefault(s.spec, s.step_ms_p50)
    if not times or not steps:
        return None
    return times[0].start_s + th.TIME_LIMIT_BATCHES * sum(steps.values()) / 1000
