"""What the search knows after a step: one record computed once from the runs measured so far.

Every question the search answers (what to measure next, how many batches, whether settings go
in turn in one run, what the measured settings say) reads this record, so the settings measured,
the script's own setting, the loader, the limits bounded for it and the prediction are each
worked out once per step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.metrics import step_slowdown
from fastload_cli.analyzer.search import epochs, parts, predict
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.analyzer.search.points import point
from fastload_cli.analyzer.search.predict import Curve
from fastload_cli.analyzer.window import epoch_batches, first_loader, primary_loader
from fastload_cli.config import DEFAULT_MAX_BATCHES, DEFAULT_MAX_WORKERS, DEFAULT_WARMUP
from fastload_cli.records import LoaderInfo, Mode, ModeSpec, RunResult, RunStatus, RunSummary, SweepPoint


@dataclass(frozen=True, slots=True, kw_only=True)
class Sizing:
    """What sizes the runs the search asks for: the command's warm-up and measured batches."""

    warmup: int = DEFAULT_WARMUP
    max_batches: int = DEFAULT_MAX_BATCHES
    job: bool = False  # a data-parallel job: its ranks cannot switch settings mid-epoch together


@dataclass(frozen=True, slots=True, kw_only=True)
class Planned:
    """A run's setting and the batches it was planned with."""

    spec: ModeSpec
    warmup: int
    batches: int


@dataclass(frozen=True, slots=True, kw_only=True)
class State:
    """The search after a step."""

    points: tuple[SweepPoint, ...]  # the settings measured so far, in one part of training (``parts``)
    current: int | None  # the script's own num_workers
    loader: LoaderInfo | None  # the training loader, as the first run that measured a batch saw it
    limits: Limits  # as asked, bounded for that loader
    prediction: Curve | None  # throughput against num_workers, where the search verifies a prediction
    cpu_count: int | None
    measured_any: bool  # a run measured a batch: the next run is not the command's first
    # the command's first run to measure, a setting planned before its loader was seen
    blind: Planned | None = None
    sizing: Sizing = field(default_factory=Sizing)
    in_process_short: bool = False  # an in-process run gave fewer settings their turn than it asked
    # The script's workers kept up but took the step's cores: fewer workers (down to 0) may be faster.
    loaders_compete: bool = False


def state(
    runs: Sequence[RunResult],
    summaries: Sequence[RunSummary],
    limits: Limits,
    sizing: Sizing | None = None,
    *,
    in_process_short: bool = False,
) -> State:
    """The search's state from the runs so far (a real run among them is the script's own setting)."""
    loader = first_loader(runs)
    first = next((r for r in runs if r.batches), None)
    bounded = limits.with_loader(loader).with_machine(first)
    current = current_workers(runs)
    return State(
        points=tuple(measured_points(runs, summaries)),
        current=current,
        loader=loader,
        limits=bounded,
        prediction=prediction(runs, summaries, bounded, current),
        cpu_count=first.cpu_count if first is not None else None,
        measured_any=first is not None,
        blind=_blind(runs),
        sizing=sizing or Sizing(),
        in_process_short=in_process_short,
        loaders_compete=loaders_compete(runs, summaries),
    )


def loaders_compete(runs: Sequence[RunResult], summaries: Sequence[RunSummary]) -> bool:
    """The real run's workers kept up (on a CPU less than ``LOADER_BUSY`` of the time) while the
    cores were full or the step ran slower beside them than with free inputs: loading costs the
    step CPU, and fewer workers, down to loading in the main process, may train faster."""
    everywhere = [(r, s) for r, s in zip(runs, summaries, strict=True) if not r.spec.ranks]
    found = {r.spec.mode: s for r, s in everywhere if r.spec.variant is None}
    real = found.get(Mode.REAL)
    if real is None or not real.num_workers:
        return False
    busy, system = real.loader_busy_fraction, real.system_cpu_busy_fraction
    if busy is None or busy >= th.LOADER_BUSY:
        return False
    slowdown = step_slowdown(real, found.get(Mode.SYNTHETIC))
    saturated = system is not None and system >= th.CPU_SATURATED
    return saturated or (slowdown is not None and slowdown >= th.CONTENTION_SIGNIFICANT)


def current_workers(runs: Sequence[RunResult]) -> int | None:
    """The script's own num_workers: as the real run saw it, or as a workers=N run overrode it."""
    for run in runs:
        loader = primary_loader(run) if run.batches else None
        if loader is None:
            continue
        if run.spec.mode is Mode.REAL:
            return loader.num_workers
        if loader.original_num_workers is not None:
            return loader.original_num_workers
    return None


def measured_points(runs: Sequence[RunResult], summaries: Sequence[RunSummary]) -> list[SweepPoint]:
    """The num_workers settings measured among ``runs``: the real run (the script's own setting)
    and every workers=N run, failed ones included (they end a climb)."""
    return parts.comparable(
        epochs.as_point(r, replace(point(s), after_first_epoch=measured_after_first_epoch(r)))
        for r, s in zip(runs, summaries, strict=True)
        if r.spec.mode in (Mode.REAL, Mode.WORKERS) and s.num_workers is not None
    )


def measured_after_first_epoch(run: RunResult) -> bool:
    """``run`` measured after the script's first epoch: its warm-up was one whole epoch or more."""
    epoch = epoch_batches(primary_loader(run)) if run.batches else None
    return epoch is not None and 0 < epoch <= run.warmup_batches


def prediction(
    runs: Sequence[RunResult], summaries: Sequence[RunSummary], limits: Limits, current: int | None
) -> Curve | None:
    """Throughput against num_workers as predicted from the script's own setting's run (and the
    synthetic run's rate, when one ran); None for a sweep of given settings, or before the
    script's own setting has measured a throughput. ``limits``: bounded for the loader."""
    if limits.grid is not None or not limits.guided:
        return None
    measured = [
        (r, s)
        for r, s in zip(runs, summaries, strict=True)
        if r.spec.mode in (Mode.REAL, Mode.WORKERS) and r.spec.variant is None and s.throughput_samples_per_s
    ]
    own = next((s for r, s in measured if s.num_workers == current), None)
    synthetic = next(
        (s for r, s in zip(runs, summaries, strict=True) if r.spec.mode is Mode.SYNTHETIC and not r.spec.ranks), None
    )
    run = next((r for r, _ in measured), None)
    cores = run.cpu_count // max(1, len(run.ranks)) if run is not None and run.cpu_count else None
    # Predicted past --max-workers too: where returns would end beyond it, the report says so.
    reach = max(limits.max_workers, DEFAULT_MAX_WORKERS)
    return predict.from_runs(own, synthetic, cores, reach, _epochs(first_loader(runs), limits, reach))


def _epochs(loader: LoaderInfo | None, limits: Limits, reach: int) -> predict.Epochs | None:
    """Settings the sweep measures over whole epochs (their epoch has no steady window), unless the
    workers persist across epochs and start once."""
    if loader is None or loader.persistent_workers or not limits.epoch_batches or not loader.batch_size:
        return None
    whole = next((n for n in range(1, reach + 1) if limits.too_many(n)), None)
    return predict.Epochs(limits.epoch_batches * loader.batch_size, whole) if whole is not None else None


def _blind(runs: Sequence[RunResult]) -> Planned | None:
    """The last run, where it was the command's first to measure a batch and a workers=N setting
    that ended well: it was planned before fastload had seen the loader."""
    first = next((i for i, r in enumerate(runs) if r.batches), None)
    if first is None or first != len(runs) - 1:
        return None
    run = runs[-1]
    if run.spec.mode is not Mode.WORKERS or run.status is not RunStatus.OK:
        return None
    return Planned(spec=run.spec, warmup=run.warmup_batches, batches=run.requested_batches - run.warmup_batches)
