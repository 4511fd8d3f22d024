"""The num_workers search without a prediction: a climb up a ladder of worker counts.

The search climbs a ladder of worker counts, 0, 1, 2, 4, 8, ..., while each rung is faster than
every setting below it by more than the noise. One worker never ends the climb: it only moves
loading beside the step, which gains nothing when the step is short, while more workers still
may. Nor does the core count: loading that waits on storage or network latency keeps scaling
past it. The climb ends after two rungs in a row that do not improve (one flat rung can be the
machine's noise, and the second shows the plateau past it), at ``max_workers``, at a rung
whose processes would not fit in the memory left (each worker's footprint is measured from the
settings already run), at a rung whose start-up burst would fill half an epoch, or at a rung
that failed. Then up to ``refine`` settings between the best point and its measured neighbours
are measured: below it first when the next setting up is as fast (a plateau), above it first
otherwise. The script's own setting is always measured, so every speedup is against it; when
the best setting is another, both are measured a second time before the sweep concludes where
the answer could turn on one run (``confirmation``), and so is each setting with fewer workers
that the best does not beat beyond the noise.

Pure functions: ``step.next_step`` asks ``plan`` when the search has no prediction to verify.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search.limits import Limits, over_budget
from fastload_cli.analyzer.search.points import dip, faster, plain, swings, throughput, usable
from fastload_cli.records import SweepPoint


@dataclass(frozen=True, slots=True)
class NextSetting:
    workers: int | None  # the next setting to measure; None: the sweep is complete
    stopped: str | None = None  # why the climb ended early, when a limit or a failure ended it
    whole_epochs: bool = False  # measured over whole epochs, against the script's own setting (``epochs``)


def ladder(max_workers: int) -> list[int]:
    """0, 1, 2, 4, 8, ... up to max_workers, which is always the last rung."""
    rungs = [0]
    while rungs[-1] < max_workers:
        rungs.append(min(max(1, 2 * rungs[-1]), max_workers))
    return rungs


def plan(points: Sequence[SweepPoint], limits: Limits, current: int | None) -> NextSetting:
    """The next setting to measure, given those measured so far."""
    measured = plain(points)
    if limits.grid is not None:  # measured exactly as asked; a window too short gets a caveat
        wanted = [*limits.grid, *([current] if current is not None else [])]
        return NextSetting(next((w for w in wanted if w not in measured), None))
    rung, stopped = climb(points, limits)
    if rung is not None:
        return NextSetting(rung)
    if current is not None and current not in measured:
        return NextSetting(current, stopped)
    refine = _refinement(measured, limits, current)
    return NextSetting(refine if refine is not None else confirmation(measured, limits, current), stopped)


def confirmation(
    measured: dict[int, SweepPoint], limits: Limits, current: int | None, settled: Collection[int] = ()
) -> int | None:
    """The best setting and the script's own, measured once more each when they differ by less
    than ``SWEEP_CONFIRM_BELOW``: the recommendation rests on their difference, and one run of each
    can be off by the machine's noise (never by a factor of two). Also at any difference where the
    best's gain appears only after a slower setting between them (``points.dip``), as noise does.
    Where the best is that much faster, a run whose own window varied by more than
    ``SWEEP_CONFIRM_SPREAD`` is measured once more, alone: a window whose rate swings that much (a
    stall every few batches) can be off by more than any machine's noise, and its second run says
    how far; the other run of the two is not in doubt and would not change the answer.
    Then each setting with fewer workers than the best that it does not beat beyond the noise,
    fewest first: the sweep prefers the fewest workers as fast as the best, and one unlucky run
    must not be what rules a cheaper setting out. None of ``settled``: settings whose comparison
    with the script's own rests on other runs (pairs of whole epochs)."""
    ok = usable(measured.values())
    own = measured[current].throughput_samples_per_s if current is not None and current in measured else None
    if not limits.confirm or not ok or current is None or not own:
        return None
    top = max(ok, key=throughput)
    if top.workers == current:
        return None
    base = measured[current]
    both = throughput(top) < own * th.SWEEP_CONFIRM_BELOW or dip(measured, top, base) is not None
    again = (top, base) if both else tuple(p for p in (top, base) if swings(p))
    if not again:
        return None
    close = sorted(p.workers for p in ok if p.workers < top.workers and not faster(top, p))
    return next((w for w in (*(p.workers for p in again), *close) if measured[w].runs < 2 and w not in settled), None)


def climb(points: Sequence[SweepPoint], limits: Limits) -> tuple[int | None, str | None]:
    """The next rung to climb to, or None and why the climb ended (None: it stopped improving)."""
    measured = plain(points)
    steps, limited = rungs(points, limits)
    flat = 0  # rungs in a row that were not faster than every setting below them
    for rung in steps:
        found = measured.get(rung)
        if found is None:
            return rung, None
        if found.throughput_samples_per_s is None:
            return None, f"the run with {rung} workers failed"
        below = usable(p for w, p in measured.items() if w < rung)
        flat = flat + 1 if rung > 1 and below and not faster(found, max(below, key=throughput)) else 0
        if flat >= th.SWEEP_PATIENCE:
            return None, limited if rung == steps[-1] else None  # the last rung a limit allowed: say which
    if flat:
        return None, limited if limited else None
    return None, limited or f"it reached --max-workers {limits.max_workers}"


def rungs(points: Sequence[SweepPoint], limits: Limits) -> tuple[list[int], str | None]:
    """The ladder as far as the limits allow, and the limit that cut it. Where a rung is over a
    limit, the largest setting under it that is not takes its place, as the last rung."""
    allowed: list[int] = []
    for rung in (r for r in ladder(limits.max_workers) if r >= limits.min_workers):
        why = _limited(points, rung, limits)
        if why is None:
            allowed.append(rung)
            continue
        below = allowed[-1] if allowed else -1
        last = next((w for w in range(rung - 1, below, -1) if _limited(points, w, limits) is None), None)
        return [*allowed, *([last] if last is not None else [])], why
    return allowed, None


def _limited(points: Sequence[SweepPoint], workers: int, limits: Limits) -> str | None:
    return limits.too_many(workers) or over_budget(points, workers, limits)


def _refinement(measured: dict[int, SweepPoint], limits: Limits, current: int | None) -> int | None:
    """A setting between the best point and a measured neighbour, while refinements are left."""
    rungs = set(ladder(limits.max_workers))
    if sum(1 for w in measured if w not in rungs and w != current) >= limits.refine:
        return None
    ok = usable(measured.values())
    if not ok:
        return None
    top = max(ok, key=throughput)
    best = top.workers
    lower = max((w for w in measured if w < best), default=None)
    upper = min((w for w in measured if w > best), default=None)
    sides = [(best, upper), (lower, best)]
    if upper is not None and not faster(top, measured[upper]):
        sides.reverse()  # a plateau above the best: the knee, and cheaper settings, lie below it
    for low, high in sides:
        if low is None or high is None or high - low < 2:
            continue
        middle = (low + high) // 2
        if middle not in measured and _limited(list(measured.values()), middle, limits) is None:
            return middle
    return None
