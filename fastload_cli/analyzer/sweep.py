"""num_workers sweeps: which setting to measure next, and what the measured settings say.

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
the best setting is another, both are measured a second time before the sweep concludes.

Pure functions: the session runs what ``plan`` asks for and hands back the measured points.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fastload_cli.analyzer import parts
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.metrics import epoch_batches, steady_window
from fastload_cli.analyzer.parts import throughput, usable
from fastload_cli.analyzer.predict import Curve, error
from fastload_cli.config import DEFAULT_MAX_WORKERS
from fastload_cli.formatting import capitalised, pct, size
from fastload_cli.records import LoaderInfo, RunSummary, SweepPoint, SweepResult


@dataclass(frozen=True, slots=True)
class Limits:
    max_workers: int = DEFAULT_MAX_WORKERS
    memory_budget_bytes: int | None = None  # what one setting's processes may use together
    grid: tuple[int, ...] | None = None  # measure exactly these settings (and the script's own)
    refine: int = th.SWEEP_REFINE_POINTS
    confirm: bool = True  # measure the best and the script's own setting twice when they differ
    epoch_batches: int | None = None  # batches per epoch of the loader being swept
    prefetch_factor: int = th.DEFAULT_PREFETCH_FACTOR
    min_workers: int = 0  # the climb starts here (for IO-bound loading, at the script's own setting)
    persistent_workers: bool = False  # the loader keeps its workers across epochs
    guided: bool = True  # start from the prediction (``predict``, ``guided``) once the own setting is measured
    in_process: bool = False  # settings in turn in one run of the script where the loader allows it

    def with_loader(self, loader: LoaderInfo | None) -> Limits:
        """These limits for the loader the sweep measures (its epoch length and prefetch_factor)."""
        if loader is None:
            return self
        return replace(
            self,
            epoch_batches=epoch_batches(loader),
            prefetch_factor=loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR,
            persistent_workers=loader.persistent_workers,
        )

    def too_many(self, workers: int) -> str | None:
        """Why ``workers`` cannot be measured with this loader, if it cannot: an epoch starts with
        ``workers * prefetch_factor`` batches arriving at once and ends draining as many, and
        between the two it must hold a few rounds of one batch per worker for a steady rate."""
        epoch = self.epoch_batches
        if epoch is None or not workers or steady_window(workers, self.prefetch_factor, epoch):
            return None
        need = max(th.MIN_STEADY_BATCHES, th.SWEEP_ROUNDS * workers)
        return (
            f"an epoch has {epoch} batches: {workers} workers would prefetch {workers * self.prefetch_factor} "
            f"of them at its start and drain as many at its end, leaving fewer than the {need} a steady "
            "window needs"
        )


@dataclass(frozen=True, slots=True)
class NextSetting:
    workers: int | None  # the next setting to measure; None: the sweep is complete
    stopped: str | None = None  # why the climb ended early, when a limit or a failure ended it


def point(summary: RunSummary) -> SweepPoint:
    """A measured setting, from its run's summary."""
    ok = summary.batches > 0 and summary.throughput_samples_per_s is not None
    return SweepPoint(
        workers=summary.num_workers or 0,
        mode=summary.mode,
        throughput_samples_per_s=summary.throughput_samples_per_s if ok else None,
        spread=summary.throughput_spread,
        data_wait_fraction=summary.data_wait_fraction,
        system_cpu_busy_fraction=summary.system_cpu_busy_fraction,
        loader_busy_fraction=summary.loader_busy_fraction,
        rss_bytes=summary.rss_bytes,
        startup_s=summary.startup_s,
        variant=summary.variant,
    )


def ladder(max_workers: int) -> list[int]:
    """0, 1, 2, 4, 8, ... up to max_workers, which is always the last rung."""
    rungs = [0]
    while rungs[-1] < max_workers:
        rungs.append(min(max(1, 2 * rungs[-1]), max_workers))
    return rungs


def noise(a: SweepPoint, b: SweepPoint) -> float:
    """The relative difference below which a and b cannot be told apart."""
    return max(th.SWEEP_NOISE_FLOOR, a.spread or 0.0, b.spread or 0.0)


def faster(a: SweepPoint, b: SweepPoint) -> bool:
    """a's throughput beats b's by more than the noise of either run."""
    if a.throughput_samples_per_s is None or b.throughput_samples_per_s is None:
        return False
    return a.throughput_samples_per_s > b.throughput_samples_per_s * (1 + noise(a, b))


def merge(points: Iterable[SweepPoint]) -> list[SweepPoint]:
    """One point per setting: a setting measured more than once gets its runs' mean throughput,
    and a spread that covers the difference between the runs as well as within each."""
    groups: dict[tuple[int, str | None], list[SweepPoint]] = {}
    for p in points:
        groups.setdefault((p.workers, p.variant), []).append(p)
    merged = []
    for group in groups.values():
        ok = usable(group)
        if len(group) == 1 or not ok:
            merged.append(group[-1])
            continue
        rates = [throughput(p) for p in ok]
        mean = sum(rates) / len(rates)
        between = (max(rates) - min(rates)) / 2 / mean if mean > 0 else 0.0
        within = max((p.spread for p in ok if p.spread is not None), default=0.0)
        merged.append(replace(ok[-1], throughput_samples_per_s=mean, spread=max(between, within), runs=len(ok)))
    return merged


def plain(points: Iterable[SweepPoint]) -> dict[int, SweepPoint]:
    """Points without prefetch_factor / pin_memory overrides, one per worker count."""
    return {p.workers: p for p in merge(points) if p.variant is None}


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


def confirmation(measured: dict[int, SweepPoint], limits: Limits, current: int | None) -> int | None:
    """The best setting and the script's own, measured once more each when they differ by less
    than ``SWEEP_CONFIRM_BELOW``: the recommendation rests on their difference, and one run of each
    can be off by the machine's noise (never by a factor of two)."""
    ok = usable(measured.values())
    own = measured[current].throughput_samples_per_s if current is not None and current in measured else None
    if not limits.confirm or not ok or current is None or not own:
        return None
    top = max(ok, key=throughput)
    if top.workers == current or throughput(top) >= own * th.SWEEP_CONFIRM_BELOW:
        return None
    return next((w for w in (top.workers, current) if measured[w].runs < 2), None)


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


def capped(workers: int, points: Sequence[SweepPoint], limits: Limits) -> tuple[int, str | None]:
    """``workers``, or the most under it that ``max_workers`` and the memory left allow, and why."""
    if workers > limits.max_workers:
        return limits.max_workers, f"it reached --max-workers {limits.max_workers}"
    for n in range(workers, 0, -1):
        why = over_budget(points, n, limits)
        if why is None:
            return n, None if n == workers else over_budget(points, workers, limits)
    return 0, None


def projected_rss(points: Sequence[SweepPoint], workers: int) -> int | None:
    """Process-tree RSS at ``workers``, extrapolated from the two largest settings measured.

    RSS counts pages a worker shares with the main process in each process, so this errs high.
    """
    known = sorted({p.workers: p.rss_bytes for p in points if p.rss_bytes and p.variant is None}.items())
    if len(known) < 2 or workers <= known[-1][0]:
        return None
    (w1, r1), (w2, r2) = known[-2], known[-1]
    per_worker = max(0.0, (r2 - r1) / (w2 - w1))
    return int(r2 + per_worker * (workers - w2))


def over_budget(points: Sequence[SweepPoint], workers: int, limits: Limits) -> str | None:
    need = projected_rss(points, workers)
    budget = limits.memory_budget_bytes
    if need is None or budget is None or need <= budget:
        return None
    return f"{workers} workers would need about {size(need)} of memory and {size(budget)} is free"


# --------------------------------------------------------------------------------------------
# What the points say
# --------------------------------------------------------------------------------------------


def conclude(
    points: Sequence[SweepPoint], current: int | None, limits: Limits, cpu_count: int | None, curve: Curve | None = None
) -> SweepResult | None:
    """The setting to use, its measured speedup over the script's own, and where returns end;
    with the prediction the search started from (``curve``), and how far off it was."""
    measured = plain(points)
    ok = usable(measured.values())
    if not ok:
        return None
    best = max(ok, key=throughput)
    near_best = [p for p in ok if throughput(p) >= throughput(best) * (1 - th.SWEEP_PREFER_FEWER_WITHIN)]
    chosen = min(near_best, key=lambda p: p.workers)
    knee = min((p for p in ok if not faster(best, p)), key=lambda p: p.workers)
    base = measured.get(current) if current is not None else None
    if base is not None and base.throughput_samples_per_s is None:
        base = None
    variant = _better_variant(points, chosen)
    top = variant or chosen
    significant = base is not None and faster(top, base)
    if base is not None and not significant:
        chosen, variant, top = base, None, base  # nothing measured beats the script's own setting
    stopped = _stopped(points, limits, curve)
    # A limit cut the search short while the most workers measured were as fast as any (within the
    # noise): returns had not ended yet, as far as anything measured shows.
    highest = measured[max(measured)]
    rising = stopped is not None and limits.grid is None and highest in ok and not faster(best, highest)
    result = SweepResult(
        points=tuple(sorted(merge(points), key=lambda p: (p.workers, p.variant or ""))),
        current_workers=current,
        best_workers=best.workers,
        recommended_workers=chosen.workers,
        recommended_variant=variant.variant if variant else None,
        speedup=throughput(top) / throughput(base) if base is not None and throughput(base) > 0 else None,
        noise=noise(top, base) if base is not None else th.SWEEP_NOISE_FLOOR,
        significant=significant,
        memory_cost_bytes=(
            top.rss_bytes - base.rss_bytes if base is not None and top.rss_bytes and base.rss_bytes else None
        ),
        diminishing_at=None if rising else knee.workers,
        reason=still_rising(highest, stopped) if rising and stopped else why_returns_end(knee, cpu_count, limits),
        stopped=stopped,
        caveats=(*whole_epochs(measured, limits), *parts.apart(measured)),
        **_predicted(curve, measured, current),
    )
    return replace(result, conclusion=conclusion(result), returns=returns(result))


def _stopped(points: Sequence[SweepPoint], limits: Limits, curve: Curve | None) -> str | None:
    """Why the search ended before returns were seen to end, when a limit ended it."""
    if limits.grid is not None:
        return None
    return capped(curve.best, points, limits)[1] if curve is not None else climb(points, limits)[1]


def _predicted(curve: Curve | None, measured: dict[int, SweepPoint], current: int | None) -> dict[str, Any]:
    """The prediction's curve and best setting, and its error at the settings measured to verify it."""
    if curve is None:
        return {}
    verified = [(w, throughput(p)) for w, p in measured.items() if w != current and p.throughput_samples_per_s]
    return {"predicted": curve.points, "predicted_best": curve.best, "prediction_error": error(curve, verified)}


def conclusion(result: SweepResult) -> str:
    """What the sweep says to do, in one sentence: the evidence, the report and the advice quote it."""
    if result.significant and result.speedup is not None:
        setting = f"num_workers={result.recommended_workers}"
        if result.recommended_variant:
            setting += f", {result.recommended_variant}"
        cost = result.memory_cost_bytes
        memory = f", {size(abs(cost))} {'more' if cost > 0 else 'less'} memory" if cost else ""
        return f"Use {setting}: measured {result.speedup:.2f}x the script's own setting{memory}."
    if result.speedup is not None:
        return f"Keep num_workers={result.current_workers}: no setting measured beats it by more than the noise."
    return f"The highest throughput was measured at {result.best_workers} workers."


def returns(result: SweepResult) -> str:
    """Where returns end and why, in one sentence."""
    if result.diminishing_at is None:
        return f"{capitalised(result.reason)}."
    return f"Returns end at {result.diminishing_at} workers: {result.reason}."


def _better_variant(points: Sequence[SweepPoint], plain: SweepPoint) -> SweepPoint | None:
    """A prefetch_factor / pin_memory variant of ``plain`` that was measurably faster than it."""
    variants = usable(p for p in merge(points) if p.variant is not None and p.workers == plain.workers)
    winner = max(variants, key=throughput, default=None)
    return winner if winner is not None and faster(winner, plain) else None


def whole_epochs(measured: dict[int, SweepPoint], limits: Limits) -> tuple[str, ...]:
    """Settings asked for on the command line whose epoch leaves no steady window: their window
    spans epoch boundaries, so their figures include start-ups and drains, unlike the others'."""
    if limits.grid is None:
        return ()
    return tuple(
        f"workers={w}: {why}; measured as asked, its window spans epochs, their start-ups and drains "
        "included, so it is not a steady-state rate like the other settings'"
        for w in sorted(measured)
        if w in limits.grid and (why := limits.too_many(w))
    )


def still_rising(highest: SweepPoint, stopped: str) -> str:
    return f"returns had not ended at {highest.workers} workers, the most the search could try: {stopped}"


def why_returns_end(knee: SweepPoint, cpu_count: int | None, limits: Limits | None = None) -> str:
    """Why more workers than ``knee`` did not help, from what was measured at the knee."""
    n = knee.workers
    busy, wait, loaders = knee.system_cpu_busy_fraction, knee.data_wait_fraction, knee.loader_busy_fraction
    if limits is not None and not limits.persistent_workers and limits.too_many(n) and knee.startup_s:
        return (
            f"epochs restart the workers: at {n} workers an epoch of {limits.epoch_batches} batches has no steady "
            f"state, and each one starts with {knee.startup_s:.2f} s of worker start-up before its first batch, "
            "which more workers lengthen (persistent_workers=True starts them once)"
        )
    if busy is not None and busy >= th.CPU_SATURATED:
        cores = f"the {cpu_count} CPUs" if cpu_count else "the CPUs"
        return f"cores saturated: {cores} were {pct(busy)} busy at {n} workers, so more workers only share them"
    if wait is not None and wait < th.WAIT_COMPUTE_BOUND:
        if n and loaders is not None and loaders <= th.LOADER_IDLE:
            return (
                f"IO latency hidden: {n} workers keep enough reads in flight (each busy only {pct(loaders)} "
                f"of the time) that the loop waits for data {pct(wait)} of the time; the step is now the limit"
            )
        return f"step-bound: at {n} workers the loop waits for data {pct(wait)} of the time; the step is the limit"
    detail = ", ".join(
        text
        for text in (
            f"the loop still waited {pct(wait)} of the time" if wait is not None else "",
            f"the CPUs were {pct(busy)} busy" if busy is not None else "",
        )
        if text
    )
    detail = detail or "no CPU or wait figures"
    return f"throughput stopped rising at {n} workers ({detail}); the cause was not measured"
