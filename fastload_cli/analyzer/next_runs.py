"""What to run next, decided from what was measured so far: pure functions the session asks.

The session executes; these say whether a mode is worth running, whether ``diagnose`` follows
its modes with a num_workers sweep (and from which setting) and a breakdown, how many batches a
sweep point needs, and which prefetch_factor / pin_memory variants ``sweep-workers`` tries.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from fastload_cli.analyzer import (
    Analysis,
    current_workers,
    first_loader,
    guided,
    parts,
    prediction,
    sweep,
    sweep_limits_for,
    sweep_points,
)
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.metrics import epoch_batches, steady_window
from fastload_cli.analyzer.trials import cuda_available, refusal, to_verify
from fastload_cli.records import Bottleneck, FixSpec, LoaderInfo, Mode, ModeSpec, RunResult, RunSummary

NOT_INPUT_BOUND = "loading is not the limit"


def why_skip(spec: ModeSpec, done: Sequence[RunResult], drop_transforms: tuple[str, ...]) -> str | None:
    """Why a mode would measure nothing new, or None: no-aug (or cached-no-aug) without
    augmentation to remove."""
    if spec.mode not in (Mode.NO_AUG, Mode.CACHED_NO_AUG) or drop_transforms:
        return None
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    if real is not None and not any(lo.augmentations for lo in real.loaders):
        return "no random augmentation found in the datasets' transforms"
    return None


def why_not_sweep(analysis: Analysis) -> str | None:
    """Why measuring num_workers settings would not help, or None when it may.

    Workers that hand over batches cheaper to build than to hand over cost time by construction,
    a cost the comparison with free inputs barely resolves on a busy machine: fewer workers are
    measured whatever the verdict and however busy the cores are.
    """
    facts = analysis.facts
    if facts.restarts_dominate:
        return "the workers' start-up every epoch is the limit, and more workers only start more of them"
    if facts.cheap_batches is not None:
        return None
    if analysis.verdict.bottleneck not in (Bottleneck.CPU, Bottleneck.IO):
        return NOT_INPUT_BOUND
    if facts.cores_saturated:
        assert facts.real is not None and facts.real.system_cpu_busy_fraction is not None
        return f"the cores were {100 * facts.real.system_cpu_busy_fraction:.0f}% busy: more workers cannot help"
    return None


@dataclass(frozen=True, slots=True)
class AfterModes:
    """What ``diagnose`` runs once its modes are measured."""

    sweep: bool  # a num_workers sweep
    why: str  # the note that says why it sweeps, or why not ("" when nothing is worth saying)
    min_workers: int  # the sweep's climb starts here
    breakdown: bool  # time each loading step
    cached: bool = False  # a run with every sample decoded into memory: what storage+decode cost
    # The sweep starts from a prediction; not where handing batches over is the cost, which the
    # prediction (what one worker produces) does not model: the climb from 0 measures it.
    guided: bool = True


def after_modes(analysis: Analysis, *, may_sweep: bool, breakdown_asked: bool) -> AfterModes:
    """The sweep and the breakdown that follow ``diagnose``'s modes."""
    breakdown = breakdown_asked or analysis.verdict.bottleneck is Bottleneck.CPU
    cached = worth_caching(analysis)
    why_not = why_not_sweep(analysis) if may_sweep else NOT_INPUT_BOUND
    if why_not is not None:
        note = "" if why_not == NOT_INPUT_BOUND else f"No num_workers sweep: {why_not}."
        return AfterModes(sweep=False, why=note, min_workers=0, breakdown=breakdown, cached=cached)
    facts = analysis.facts
    cheap = facts.cheap_batches is not None
    why = (
        "Handing batches over from workers may cost more than building them"
        if cheap
        else "Loading is the limit and the cores are not all busy"
    )
    # Loading that waits on latency: fewer workers only put fewer reads in flight.
    io = analysis.verdict.bottleneck is Bottleneck.IO and not cheap
    start = (facts.num_workers or 0) if io else 0
    return AfterModes(
        sweep=True,
        why=f"{why}: measuring num_workers settings.",
        min_workers=start,
        breakdown=breakdown,
        cached=cached,
        guided=not cheap,
    )


def worth_caching(analysis: Analysis) -> bool:
    """Loading is the limit and its samples are read from a map-style dataset that is not already
    in memory: a cached run measures what storage and decoding cost (and what RAM caching gives)."""
    facts = analysis.facts
    loader = facts.loader
    return (
        analysis.verdict.bottleneck in (Bottleneck.CPU, Bottleneck.IO)
        and loader is not None
        and not loader.iterable_dataset
        and facts.cheap_batches is None
        and not facts.restarts_dominate
        and facts.cached is None
    )


def point_batches(
    spec: ModeSpec, loader: LoaderInfo | None, warmup: int, max_batches: int, *, later: bool = False
) -> tuple[int, int]:
    """A sweep point's warm-up and measured batches: at start-up every worker delivers its first
    ``prefetch_factor`` batches at once, so those are warm-up; the window holds a few rounds of
    batches from all workers. Where an epoch is too short for a steady window at this setting,
    the window spans ``SWEEP_WHOLE_EPOCHS`` whole epochs, each one's start-up and drain included,
    after a warm-up of whole epochs (the burst is part of what such epochs cost), and the run
    takes the first batch of the epoch after them: by then the last one's end (its last step and
    its workers' shutdown, ``metrics._whole_epochs``) is behind it. ``later``: the warm-up is whole
    epochs whatever the setting (``after_first_epoch``)."""
    workers = spec.workers or 0
    factor = spec.prefetch_factor or (loader.prefetch_factor if loader is not None else None)
    burst = workers * (factor or th.DEFAULT_PREFETCH_FACTOR)
    batches = max(max_batches, th.SWEEP_ROUNDS * workers)
    epoch, whole = epoch_batches(loader), whole_epochs(spec, loader)
    if not epoch or not (later or whole):
        return max(warmup, burst), batches
    lead = -(-max(warmup, 1) // epoch) * epoch
    if not whole:  # a steady window in the epoch after the warm-up
        return lead, batches
    return lead, max(th.SWEEP_WHOLE_EPOCHS, -(-batches // epoch)) * epoch + 1  # no steady window: whole epochs


def after_first_epoch(runs: Sequence[RunResult], summaries: Sequence[RunSummary], limits: sweep.Limits) -> bool:
    """The sweep measures its next settings after the script's first epoch, as it measures those
    whose epoch has no steady window (their warm-up is whole epochs): once it has measured one,
    or where the grid asked for or the prediction to verify holds one. The first epoch's workers
    can run slower than later epochs' (``parts.comparable``); settings are compared in one part."""
    loader = first_loader(runs)
    if not epoch_batches(loader):
        return False
    points = sweep_points(runs, summaries)
    if any(p.after_first_epoch for p in points):
        return True
    planned: Sequence[int] = limits.grid or ()
    current = current_workers(runs)
    curve = prediction(runs, summaries, limits) if limits.grid is None and limits.guided else None
    if curve is not None and current is not None:
        planned = guided.pending(points, sweep_limits_for(limits, runs), current, curve)
    return any(whole_epochs(ModeSpec(mode=Mode.WORKERS, workers=w), loader) for w in planned)


def whole_epochs(spec: ModeSpec, loader: LoaderInfo | None) -> bool:
    """An epoch of ``loader`` is too short for a steady window at ``spec``'s setting (the start-up
    burst, a few rounds of batches, the drain): its sweep point is measured in whole epochs."""
    epoch = epoch_batches(loader)
    if not epoch:
        return False
    factor = spec.prefetch_factor or (loader.prefetch_factor if loader is not None else None)
    return bool(spec.workers) and not steady_window(spec.workers or 0, factor, epoch)


def points_batches(
    settings: Sequence[int], loader: LoaderInfo | None, warmup: int, max_batches: int
) -> tuple[int, tuple[tuple[int, int], ...]]:
    """A points run's warm-up, and each setting's batches in it: the first setting's warm-up and
    window as its own run would have them (``point_batches``); each later one's window after the
    start-up burst of its new workers, which start with nothing prefetched."""
    factor = (loader.prefetch_factor if loader is not None else None) or th.DEFAULT_PREFETCH_FACTOR
    sized = [point_batches(ModeSpec(mode=Mode.WORKERS, workers=w), loader, warmup, max_batches) for w in settings]
    leads = [sized[0][0], *(max(w * factor, 1) for w in settings[1:])]
    return leads[0], tuple((w, lead + window) for w, lead, (_, window) in zip(settings, leads, sized, strict=True))


def next_setting(runs: Sequence[RunResult], summaries: Sequence[RunSummary], limits: sweep.Limits) -> sweep.NextSetting:
    """The num_workers setting the sweep measures next, from the settings measured so far."""
    points, current = sweep_points(runs, summaries), current_workers(runs)
    again = parts.again_after_first_epoch(points)
    if again:
        return sweep.NextSetting(again[0])
    curve = prediction(runs, summaries, limits) if limits.guided else None
    if curve is not None and current is not None:
        return guided.plan(points, sweep_limits_for(limits, runs), current, curve)
    return sweep.plan(points, sweep_limits_for(limits, runs), current)


def together(runs: Sequence[RunResult], summaries: Sequence[RunSummary], limits: sweep.Limits) -> tuple[int, ...]:
    """The settings the sweep asks for next that one run of the script can measure in turn
    (``runner/points.py``), in order; none where fewer than two can. The plan must know them all
    before measuring any (the grid, or the settings that verify a prediction), and each must have
    a steady window inside an epoch: the switch lands mid-epoch, so a setting measured over whole
    epochs keeps its own run, as do settings measured after the first epoch (``after_first_epoch``)
    and a loader whose workers persist across epochs."""
    loader = first_loader(runs)
    bounded = sweep_limits_for(limits, runs)
    if not limits.in_process or loader is None or loader.persistent_workers or not bounded.epoch_batches:
        return ()
    if after_first_epoch(runs, summaries, limits):  # a switch lands mid-epoch, whichever epoch it is
        return ()
    points, current = sweep_points(runs, summaries), current_workers(runs)
    if limits.grid is not None:
        measured = {p.workers for p in points if p.variant is None}
        asked = (*limits.grid, *([current] if current is not None else []))
        wanted = [w for w in dict.fromkeys(asked) if w not in measured]
    else:
        curve = prediction(runs, summaries, limits)
        if curve is None or current is None:
            return ()
        wanted = guided.pending(points, bounded, current, curve)
    if not wanted or wanted[0] != next_setting(runs, summaries, limits).workers:
        return ()
    fit = tuple(itertools.takewhile(lambda w: bounded.too_many(w) is None, wanted))
    return fit if len(fit) > 1 else ()


@dataclass(frozen=True, slots=True)
class Variants:
    """The prefetch_factor / pin_memory variants to measure at the setting the sweep chose."""

    specs: tuple[ModeSpec, ...]
    notes: tuple[str, ...]  # what was asked for but is not measured, and why


def variants(
    runs: Sequence[RunResult],
    summaries: Sequence[RunSummary],
    limits: sweep.Limits,
    prefetch_factors: tuple[int, ...],
    pin_both: bool,
) -> Variants:
    """``sweep-workers --prefetch-factor/--pin-memory``: the variants of the chosen setting."""
    loader = first_loader(runs)
    points = sweep_points(runs, summaries)
    result = sweep.conclude(points, current_workers(runs), sweep_limits_for(limits, runs), None)
    if loader is None or result is None or result.recommended_workers is None:
        return Variants(specs=(), notes=())
    best, notes = result.recommended_workers, []
    own_factor = loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR
    factors = [f for f in prefetch_factors if f != own_factor]
    if best == 0 and factors:
        notes.append("--prefetch-factor: skipped, the best setting has no workers to prefetch.")
        factors = []
    specs = [ModeSpec(mode=Mode.WORKERS, workers=best, prefetch_factor=f) for f in factors]
    if pin_both and cuda_available(runs):
        specs.append(ModeSpec(mode=Mode.WORKERS, workers=best, pin_memory=not loader.pin_memory))
    elif pin_both:
        notes.append(
            "--pin-memory both: skipped, CUDA is not available (pinned memory only speeds up copies to a GPU)."
        )
    return Variants(specs=tuple(specs), notes=tuple(notes))


def fix_runs(fixes: Sequence[FixSpec], done: Sequence[RunResult]) -> Variants:
    """``try``: a run per fix that applies to the measured loader, then all of those together;
    a note per fix that does not, with the reason (it is reported, never measured)."""
    loader, cuda = first_loader(done), cuda_available(done)
    applied, notes = [], []
    for fix in fixes:
        why = refusal(fixes, fix, loader, cuda)
        if why is None:
            applied.append(fix.text)
        else:
            notes.append(f"--fix {fix.text}: not measured, {why}.")
    specs = [ModeSpec(mode=Mode.FIX, fixes=(text,)) for text in applied]
    if len(applied) > 1:
        specs.append(ModeSpec(mode=Mode.FIX, fixes=tuple(applied)))
    return Variants(specs=tuple(specs), notes=tuple(notes))


def verifications(analysis: Analysis, done: Sequence[RunResult]) -> tuple[ModeSpec, ...]:
    """``diagnose``: a run with the fix applied for each recommendation fastload can apply itself."""
    cuda = cuda_available(done)
    ids = [rec.id for rec in analysis.recommendations if not rec.measured]
    fixes = to_verify(analysis.verdict, ids, analysis.facts.loader, cuda, done)
    return tuple(ModeSpec(mode=Mode.FIX, fixes=(fix.text,)) for fix in fixes)
