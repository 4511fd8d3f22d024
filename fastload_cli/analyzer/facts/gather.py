"""The facts, gathered in one place: from the measured runs and their summaries (``gather_facts``),
or from one run alone where it ended before a batch (``of_run``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from fastload_cli.analyzer import search
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.caveats import disturbed, replayed
from fastload_cli.analyzer.facts import Facts
from fastload_cli.analyzer.metrics import Span, percentile, workers_busy_fraction
from fastload_cli.analyzer.pooled import pooled
from fastload_cli.analyzer.window import NS, in_lockstep, primary_loader, primary_loader_id, steady_steps
from fastload_cli.records import CACHE_LOCATION, BatchInfo, Mode, RunResult, RunStatus, RunSummary, SweepResult


def of_run(run: RunResult) -> Facts:
    """What one run alone says, before any batch: its loader, the machine's cores, its ranks."""
    return Facts(real=None, loader=primary_loader(run), cpu_count=run.cpu_count, ranks_per_node=max(len(run.ranks), 1))


def _sweep(runs: Sequence[RunResult], summaries: Sequence[RunSummary], limits: search.Limits) -> SweepResult | None:
    if not any(r.spec.mode is Mode.WORKERS for r in runs):
        return None
    return search.result(search.state(runs, summaries, limits))


def startup_busy_fraction(run: RunResult, starts: list[Span]) -> float | None:
    """Share of the epochs' start-up time (``starts``: iter() to first batch) the workers were on a
    CPU or runnable, per worker: high when starting them is CPU work, low when it waits."""
    return workers_busy_fraction(run, starts, sum(end - start for start, end in starts) / NS)


def _first(
    runs: Sequence[RunResult], summaries: Sequence[RunSummary], mode: Mode
) -> tuple[RunResult, RunSummary] | None:
    """The first run of ``mode``, with its figures pooled with those of the runs that measured the
    same again and finished (a ceiling near its line is measured twice: ``plan.diagnose``)."""
    found = _measured(runs, summaries, mode)
    return (found[0], pooled(found[1])) if found else None


def _measured(
    runs: Sequence[RunResult], summaries: Sequence[RunSummary], mode: Mode
) -> tuple[RunResult, list[RunSummary]] | None:
    """The first run of ``mode``, and its summary with those of the runs that measured the same
    again and finished, in order."""
    found = [(r, s) for r, s in zip(runs, summaries, strict=True) if r.spec.mode is mode]
    if not found:
        return None
    run, summary = found[0]
    return run, [summary, *(s for r, s in found[1:] if r.spec == run.spec and r.status is RunStatus.OK)]


def _pairs(runs: Sequence[RunResult], summaries: Sequence[RunSummary]) -> tuple[tuple[RunSummary, RunSummary], ...]:
    """The real and synthetic runs side by side, in order, where each mode was measured again
    (``_first`` pools them): none otherwise."""
    real, synthetic = _measured(runs, summaries, Mode.REAL), _measured(runs, summaries, Mode.SYNTHETIC)
    found = tuple(zip(real[1], synthetic[1], strict=False)) if real and synthetic else ()
    return found if len(found) > 1 else ()


def _cached(run: RunResult) -> bool:
    """A loader's samples were decoded into memory while ``run`` measured."""
    return any(s.applied and s.location == CACHE_LOCATION for s in run.substitutions)


def gather_facts(
    runs: Sequence[RunResult], summaries: Sequence[RunSummary], limits: search.Limits | None = None
) -> Facts:
    real = _first(runs, summaries, Mode.REAL) or _own_setting(runs, summaries)
    synthetic = _first(runs, summaries, Mode.SYNTHETIC)
    if synthetic is not None and not replayed(synthetic[0]):
        synthetic = None  # it ran the real pipeline: no ceiling can be read from it
    on_device = _first(runs, summaries, Mode.SYNTHETIC_DEVICE)
    if on_device is not None and not replayed(on_device[0]):
        on_device = None  # its batch never reached the GPU: it measured the real pipeline
    no_aug = _first(runs, summaries, Mode.NO_AUG)
    cached, bare = _first(runs, summaries, Mode.CACHED), _first(runs, summaries, Mode.CACHED_NO_AUG)
    if cached is not None and not _cached(cached[0]):
        cached = None  # no loader could be cached: it measured the real pipeline
    if bare is not None and not _cached(bare[0]):
        bare = None  # no loader could be cached: it measured no-aug at most
    if no_aug is not None and not any(s.applied for s in no_aug[0].substitutions):
        no_aug = None  # nothing was replaced while it ran (undone, or impossible): it measured the real pipeline
    real_run = real[0] if real else None
    starts = startup_spans(real_run) if real_run else []
    loader, waits = (primary_loader(real_run), steady_waits_ms(real_run)) if real_run else (None, [])
    return Facts(
        pairs=_pairs(runs, summaries) if real and synthetic else (),
        real=real[1] if real else None,
        synthetic=synthetic[1] if synthetic else None,
        device_replay=on_device[1] if on_device else None,
        no_aug=no_aug[1] if no_aug else None,
        cached=cached[1] if cached else None,
        cached_no_aug=bare[1] if bare else None,
        loader=loader,
        cpu_count=real_run.cpu_count if real_run else None,
        cuda_in_use=any(r.env.cuda_in_use for r in runs),
        augmentations=tuple(a for lo in (real_run.loaders if real_run else ()) for a in lo.augmentations),
        substituted=tuple(s.original for s in (no_aug[0].substitutions if no_aug else ()) if s.applied),
        disturbed=any(disturbed(pair[1]) for pair in (real, synthetic, no_aug) if pair is not None),
        sweep=_sweep(runs, summaries, limits or search.Limits()),
        batch=batch_info(real_run) if real_run else None,
        epoch_startup_s=tuple((end - start) / 1e9 for start, end in starts),
        epoch_walls=epoch_walls(real_run) if real_run else (),
        between_epochs_s=between_epochs(real_run) if real_run else (),
        startup_busy=startup_busy_fraction(real_run, starts) if real_run else None,
        wait_ms_p50=percentile(waits, 0.5),
        wait_ms_p90=percentile(waits, 0.9),
        waits_in_lockstep=loader is not None and waits_in_lockstep(waits, loader.num_workers),
        memory_available_bytes=real_run.memory_available_bytes if real_run else None,
        ranks_per_node=max(len(real_run.ranks), 1) if real_run else 1,
    )


def batch_info(run: RunResult) -> BatchInfo | None:
    """The training loader's first batch: its tensors, bytes, and whether they were pinned."""
    loader_id = primary_loader_id(run)
    layout = next((lo for lo in run.layouts if lo.loader_id == loader_id), None)
    first = next((b for b in run.batches if b.loader_id == loader_id), None)
    if layout is None:
        return None
    nbytes = sum(leaf.nbytes for leaf in layout.leaves)
    samples = first.samples if first is not None else None
    pinned = [leaf.pinned for leaf in layout.leaves if leaf.device == "cpu"]
    return BatchInfo(
        python_type=layout.python_type,
        samples=samples,
        bytes_per_batch=nbytes,
        bytes_per_sample=nbytes / samples if samples else None,
        pinned=all(pinned) if pinned and None not in pinned else None,
        leaves=layout.leaves,
    )


def startup_spans(run: RunResult) -> list[tuple[int, int]]:
    """Each epoch's start-up as a time span (iter() to its first batch), for the training loader."""
    loader_id = primary_loader_id(run)
    first_batch: dict[int, int] = {}
    for b in run.batches:
        if b.loader_id == loader_id:
            first_batch.setdefault(b.iterator_id, b.wait_end_ns)
    return [
        (it.started_ns, first_batch[it.iterator_id])
        for it in run.iterators
        if it.loader_id == loader_id and it.iterator_id in first_batch
    ]


def epoch_walls(run: RunResult) -> tuple[tuple[float, int], ...]:
    """Each whole epoch of the training loader: its wall time and its batches. From its iter() to
    the next (start-up, steps, drain, and what the script did between); for the last, which no
    iter() followed, to its end (the loop's request past its last batch returned)."""
    loader_id = primary_loader_id(run)
    batches = Counter(b.iterator_id for b in run.batches if b.loader_id == loader_id)
    starts = sorted((it for it in run.iterators if it.loader_id == loader_id), key=lambda it: it.started_ns)
    ends = [later.started_ns for later in starts[1:]] + [it.ended_ns for it in starts[-1:]]
    return tuple(
        ((end - it.started_ns) / NS, batches[it.iterator_id])
        for it, end in zip(starts, ends, strict=True)
        if batches[it.iterator_id] and end is not None
    )


def between_epochs(run: RunResult) -> tuple[float, ...]:
    """What the script did between the training loader's epochs, each time: from the loop's
    request past an epoch's last batch (its workers shut down) to the next iter() (evaluation,
    checkpoints, logging)."""
    loader_id = primary_loader_id(run)
    starts = sorted((it for it in run.iterators if it.loader_id == loader_id), key=lambda it: it.started_ns)
    return tuple(
        (later.started_ns - it.ended_ns) / NS
        for it, later in pairwise(starts)
        if it.ended_ns is not None and later.started_ns >= it.ended_ns
    )


def steady_waits_ms(run: RunResult) -> list[float]:
    """The loop's wait for each batch of ``run``'s steady window, in ms, in order."""
    return [s.wait_ns / 1e6 for s in steady_steps(run)]


def waits_in_lockstep(waits: Sequence[float], workers: int) -> bool:
    """A real run's long waits (``waits``: its steady window's, in ms, ``steady_waits_ms``) recur
    a round of its ``workers``' batches apart (``in_lockstep``): workers that start together,
    finish together and fall short of the step every round. A long wait: at least
    ``WAIT_SPIKE_MIN_MS``, and the longest within a round either side of it (a round's stall,
    however much the other waits of the round vary)."""
    if workers < 2 or len(waits) < th.MIN_STEADY_BATCHES:
        return False
    stalls = [
        i
        for i, w in enumerate(waits)
        if w >= th.WAIT_SPIKE_MIN_MS
        and w > max(waits[max(0, i - workers + 1) : i], default=0.0)
        and w >= max(waits[i + 1 : i + workers], default=0.0)
    ]
    return in_lockstep(stalls, len(waits), workers)


def _own_setting(runs: Sequence[RunResult], summaries: Sequence[RunSummary]) -> tuple[RunResult, RunSummary] | None:
    """Without a real run, the workers=N run that kept the script's own num_workers stands in for it."""
    current = search.current_workers(runs)
    return next(
        (
            (r, s)
            for r, s in zip(runs, summaries, strict=True)
            if r.spec.mode is Mode.WORKERS and r.spec.variant is None and r.spec.workers == current
        ),
        None,
    )
