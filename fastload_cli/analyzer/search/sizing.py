"""How many batches a setting's run needs: its warm-up (the start-up burst, or whole epochs) and
its measured window (a few rounds of every worker, or whole epochs where an epoch has no steady
window at the setting). Pure functions."""

from __future__ import annotations

from collections.abc import Sequence

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.window import epoch_batches, steady_window
from fastload_cli.records import LoaderInfo, Mode, ModeSpec


def sized(
    spec: ModeSpec, loader: LoaderInfo | None, warmup: int, max_batches: int, *, later: bool = False
) -> tuple[int, int]:
    """A sweep point's warm-up and measured batches: at start-up every worker delivers its first
    ``prefetch_factor`` batches at once, so those are warm-up; the window holds a few rounds of
    batches from all workers. Where an epoch is too short for a steady window at this setting,
    the window spans ``SWEEP_WHOLE_EPOCHS`` whole epochs, each one's start-up and drain included,
    after a warm-up of whole epochs (the burst is part of what such epochs cost), and the run
    takes the first batch of the epoch after them: by then the last one's end (its last step and
    its workers' shutdown, ``metrics._whole_epochs``) is behind it. ``later``: the warm-up is whole
    epochs whatever the setting (``step.after_first_epoch``)."""
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


def whole_epochs(spec: ModeSpec, loader: LoaderInfo | None) -> bool:
    """An epoch of ``loader`` is too short for a steady window at ``spec``'s setting (the start-up
    burst, a few rounds of batches, the drain): its sweep point is measured in whole epochs."""
    epoch = epoch_batches(loader)
    if not epoch:
        return False
    factor = spec.prefetch_factor or (loader.prefetch_factor if loader is not None else None)
    return bool(spec.workers) and not steady_window(spec.workers or 0, factor, epoch)


def in_turn(
    settings: Sequence[int], loader: LoaderInfo | None, warmup: int, max_batches: int
) -> tuple[int, tuple[tuple[int, int], ...]]:
    """An in-process run's warm-up, and each setting's batches in it: the first setting's warm-up and
    window as its own run would have them (``sized``); each later one's window after the
    start-up burst of its new workers, which start with nothing prefetched."""
    factor = (loader.prefetch_factor if loader is not None else None) or th.DEFAULT_PREFETCH_FACTOR
    own = [sized(ModeSpec(mode=Mode.WORKERS, workers=w), loader, warmup, max_batches) for w in settings]
    leads = [own[0][0], *(max(w * factor, 1) for w in settings[1:])]
    return leads[0], tuple((w, lead + window) for w, lead, (_, window) in zip(settings, leads, own, strict=True))
