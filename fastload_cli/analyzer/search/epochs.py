"""The script's own setting against fewer or more workers, over whole epochs, as training pays for them.

A steady window leaves out each epoch's start: workers that do not persist start again every
epoch, their first batches arrive at once while the step runs beside that burst, and the epoch
ends draining. Over an epoch of a few seconds that can cost a tenth of it, which no steady window
shows, while 0 workers (loading in the main process) pays none of it. So where the loaders compete
with the step for the cores, advice to use fewer workers rests on whole epochs: the fastest
setting with fewer workers that the steady windows did not find slower, and 0 workers, are each
measured against the script's own in pairs, the order reversed in the next pair (``_order``: an
epoch of each in one run of the script, ``step``; or runs of their own over ``EPOCHS_MEASURED``
whole epochs after the first), and where that cannot tell the best of them from the script's own
yet leaves open a gain worth advising, in two pairs more, up to ``EPOCHS_MORE`` times. Their rates
over those epochs (start-ups, bursts, drains and steps, as training has them) decide: a setting with
fewer workers is advised only where its gain exceeds the larger of ``SWEEP_NOISE_FLOOR`` and a
one-sided bound on it: from the pairs, their order taken out (``paired``), or from how far the two
settings' runs differ (``gain_noise``). The bound leaves chance a 10% share, split between the
settings with fewer workers compared (``quantile``): the best of two is the best by chance more
often than one alone.

More workers take longer to start every epoch: where the steady windows found a setting with more
workers faster, on epochs as short, what training gets of it is its epoch at its steady pace after
its workers' start-up, which its run measured (``estimated``). Where even the least that leaves it
(the script's own start-up taken to cost nothing) clears the noise, it is advised by that estimate;
otherwise, where the start-ups could undo its gain, it is measured against the script's own in the
same pairs, and advised by what they measured, start-ups included.

Their points are the sweep's ``EPOCHS_VARIANT`` points, compared with each other alone. Pure
functions.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.analyzer.search.points import beats, fewest_near_best, per_setting, plain, throughput, usable
from fastload_cli.analyzer.window import epoch_batches, loader_batches, primary_loader
from fastload_cli.records import WHOLE_EPOCHS as EPOCHS_VARIANT
from fastload_cli.records import Mode, RunResult, SweepPoint

EPOCHS_MEASURED = 2  # whole epochs each setting's run measures, after a warm-up of whole epochs
# Rounds of two pairs more, at most, while the pairs cannot tell the settings apart. Each round buys
# power and, looked at once more, a little more chance of advice on none: scripts/simulate_pairs.py
# gives both.
EPOCHS_MORE = 4
EPOCHS_MAX_BATCHES = 64  # a longer epoch's start is a small share of it: its steady window says enough
ROUND = 4  # a round of pairs: the script's own and another setting, then the two reversed
NS = 1e9


@dataclass(frozen=True, slots=True)
class Decided:
    """The setting that did best over whole epochs, against the script's own."""

    workers: int
    gain: float  # its rate over the script's own
    bound: float  # how far above 1 chance alone could put the gain, by the runs (``gain_noise``)

    @property
    def noise(self) -> float:
        """What the gain must clear: ``bound``, floored (``noise.floored``)."""
        return noise.floored(self.bound)

    @property
    def told_apart(self) -> bool:
        """The gain clears its noise: advice stands on it."""
        return self.gain > 1 + self.noise

    @property
    def unresolved(self) -> bool:
        """The runs do not tell the setting apart from the script's own, and leave open a gain that
        would be advised (one above ``SWEEP_NOISE_FLOOR``): more runs could settle it."""
        return not self.told_apart and self.gain + self.bound > 1 + th.SWEEP_NOISE_FLOOR


@dataclass(frozen=True, slots=True)
class Estimate:
    """A setting's gain over the script's own over whole epochs that start their workers again,
    from their steady windows and each one's worker start-up (``estimated``)."""

    gain: float  # each epoch its batches at the steady pace after its workers' start-up, both settings
    low: float  # the least it could be: the script's own start-up taken to cost nothing

    def settles(self, spread: float) -> bool:
        """Its least gain, less the runs' noise (``spread``), still promises ``SWEEP_MIN_PROMISE``:
        no start-up could undo the advice, and pairs of whole epochs would not change it."""
        return self.low / (1 + spread) >= th.SWEEP_MIN_PROMISE


def estimated(own: SweepPoint, other: SweepPoint, limits: Limits) -> Estimate | None:
    """``other`` against ``own`` over epochs of ``limits.epoch_batches`` that start their workers
    again (no longer than ``EPOCHS_MAX_BATCHES``, where the start-up is a share that matters), each
    epoch its samples at the setting's steady rate after its start-up (``startup_s``: iter() to the
    first batch, as its run measured it); None without those figures, and for a setting whose
    epoch has no steady window (``Limits.too_many``): its reading spans epochs, start-ups included."""
    epoch, batch = limits.epoch_batches, limits.batch_size
    if limits.persistent_workers or not epoch or epoch > EPOCHS_MAX_BATCHES or not batch:
        return None
    if limits.too_many(other.workers) is not None or limits.too_many(own.workers) is not None:
        return None
    if own.startup_s is None or other.startup_s is None or not throughput(own) or not throughput(other):
        return None
    mine, theirs = epoch * batch / throughput(own), epoch * batch / throughput(other) + other.startup_s
    return Estimate(gain=(mine + own.startup_s) / theirs, low=mine / theirs)


def candidates(points: Sequence[SweepPoint], limits: Limits, current: int | None, *, down: bool) -> list[int]:
    """The settings to measure over whole epochs, the script's own first; none unless its workers
    start again every epoch and an epoch is short enough for its start to matter yet leaves a
    steady window at the script's setting. Where the loaders compete with the step (``down``): the
    fastest setting with fewer workers that the steady windows did not find slower than it, and 0
    workers whatever they found (a steady window leaves out exactly what 0 workers saves).
    Otherwise: settings with more workers found faster (``_more``), whose workers take longer to
    start every epoch than the script's own."""
    epoch = limits.epoch_batches
    if current is None or limits.persistent_workers or limits.grid is not None or not epoch:
        return []
    if epoch > EPOCHS_MAX_BATCHES or limits.too_many(current) is not None:
        return []
    measured = plain(points)
    own = measured.get(current)
    if own is None or not throughput(own):
        return []
    if not down:
        more = _more(measured, own, limits)
        return [current, *more] if more else []
    none = measured.get(0)
    if not current or none is None or not throughput(none):
        return []
    fewer = [p for w, p in measured.items() if 0 < w < current and throughput(p) and not beats(measured, own, p)]
    fastest = [max(fewer, key=throughput).workers] if fewer else []
    return [current, *fastest, 0]


def _more(measured: dict[int, SweepPoint], own: SweepPoint, limits: Limits) -> list[int]:
    """Settings with more workers than ``own`` worth measuring against it over whole epochs: the one
    the steady windows would advise (the fewest workers within ``SWEEP_PREFER_FEWER_WITHIN`` of the
    fastest) where it beats ``own`` beyond the noise and its start-ups could undo that
    (``Estimate.settles``); and the fastest of those whose epoch had no
    steady window, measured over whole epochs with their start-ups, where it read faster than
    ``own``'s steady window, which leaves its start-ups out (the two readings are not alike)."""
    ok = usable(measured.values())
    chosen = fewest_near_best(ok)
    found = [chosen.workers] if chosen.workers > own.workers and beats(measured, chosen, own) else []
    guess = estimated(own, chosen, limits) if found else None
    if guess is not None and guess.settles(noise.between_settings(chosen, own)):
        found = []  # its start-ups cannot undo its gain: advised by the estimate, no pairs
    whole = [p for p in ok if p.workers > own.workers and limits.too_many(p.workers) is not None]
    fastest = max(whole, key=throughput, default=None)
    if fastest is not None and throughput(fastest) > throughput(own) and fastest.workers not in found:
        found.append(fastest.workers)
    return found


def pending(points: Sequence[SweepPoint], limits: Limits, current: int | None, *, down: bool) -> list[int]:
    """The settings still to measure over whole epochs, in order (those of ``_order``, less the
    runs measured: their runs pooled), before their runs could change its course (what one run of
    the script can measure in turn, epoch by epoch); the first is the next."""
    found = candidates(points, limits, current, down=down)
    if not found or any(p.throughput_samples_per_s is None for p in points):
        return []  # a failed run ends the comparison, as it ends the search
    left = Counter(p.workers for p in points if p.variant == EPOCHS_VARIANT)
    rest = []
    for workers in _order(points, found, current, more=limits.more_epochs, finish=limits.finish_rounds):
        if left[workers]:
            left[workers] -= 1
        else:
            rest.append(workers)
    return rest


def held_back(points: Sequence[SweepPoint], limits: Limits, current: int | None, *, down: bool) -> bool:
    """The time budget held back a round of pairs the runs asked for (``Limits.more_epochs``)."""
    if limits.more_epochs:
        return False
    found = candidates(points, limits, current, down=down)
    if not found:
        return False
    return _order(points, found, current, more=False, finish=limits.finish_rounds) != _order(points, found, current)


def unmeasured(points: Sequence[SweepPoint]) -> bool:
    """No setting was measured over whole epochs."""
    return not any(p.variant == EPOCHS_VARIANT for p in points)


def _order(
    points: Sequence[SweepPoint], found: list[int], current: int | None, *, more: bool = True, finish: bool = True
) -> list[int]:
    """The settings compared over whole epochs, in order: for each of ``found`` with fewer workers, it and
    the script's own in pairs, each pair's order reversed in the next (own, it, it, own: a machine
    that slows down steadily slows both alike on average); where those runs cannot tell the best
    of fewer workers from the script's own yet leave open a gain worth advising
    (``Decided.unresolved``), ``EPOCHS_MORE`` rounds of it and the script's own more: a difference
    the runs told apart stands as measured, one inside their noise is measured again before it is
    advised or dropped; never a round not begun where the time budget holds no more (``more``),
    the first included: without a pair measured, none; and where it holds not even the rest of the
    round begun (``finish`` False), nothing past what was measured."""
    own = found[0]
    order = [w for fewer in found[1:] for w in (own, fewer, fewer, own)]
    whole = [p for p in points if p.variant == EPOCHS_VARIANT]
    if not more and (not whole or not finish):  # none begun, or the rest of those begun held: what was measured
        return order[: len(whole)]
    for _ in range(EPOCHS_MORE):
        if len(whole) < len(order):
            break
        seen = [p for p in points if p.variant != EPOCHS_VARIANT] + whole[: len(order)]
        best = decided(seen, current)
        if best is None or not best.unresolved or (not more and len(whole) <= len(order)):
            break
        order += [own, best.workers, best.workers, own]
    return order


def sizes(limits: Limits, warmup: int) -> tuple[int, int]:
    """Such a run's warm-up (whole epochs, at least one) and window (``EPOCHS_MEASURED`` epochs:
    each is timed from the last batch of the one before to its own last batch)."""
    epoch = limits.epoch_batches or 1
    return -(-max(warmup, 1) // epoch) * epoch, EPOCHS_MEASURED * epoch


def round_s(limits: Limits, warmup: int, epoch_s: float, start_s: float, *, one_run: bool) -> float:
    """What a round of pairs takes (``ROUND`` epochs, each ``epoch_s``, its start-up included):
    in one run of the script (``step``'s in turn at epochs), one start and the warm-up's whole
    epochs (``sizes``) besides; otherwise ``ROUND`` runs of their own, each with its start, its
    warm-up and ``EPOCHS_MEASURED`` epochs."""
    lead = sizes(limits, warmup)[0] // (limits.epoch_batches or 1)
    if one_run:
        return start_s + (lead + ROUND) * epoch_s
    return ROUND * (start_s + (lead + EPOCHS_MEASURED) * epoch_s)


def as_point(run: RunResult, found: SweepPoint) -> SweepPoint:
    """``found``, the point of a workers=N run, as an ``EPOCHS_VARIANT`` point where the run was
    sized in whole epochs (``sizes``; a setting's turn at epochs, ``in_process.runs_of``, one
    epoch after one): the rate over its whole epochs, and half the range of each epoch's
    rate, as a share of that rate, as its spread (no rate where it measured fewer whole epochs
    than asked, the script ending first). Not marked as measured after the first epoch: these
    points are compared with each other alone, never with the steady windows of that part."""
    epoch = epoch_batches(primary_loader(run))
    window = run.requested_batches - run.warmup_batches
    if run.spec.mode is not Mode.WORKERS or not epoch or run.warmup_batches % epoch or not run.warmup_batches:
        return found
    if window != (epoch if run.phases else EPOCHS_MEASURED * epoch):  # a setting's turn: one epoch
        return found
    rates, total = epoch_rates(run, epoch, window // epoch)
    whole = len(rates) >= window // epoch and total is not None
    spread = (max(rates) - min(rates)) / 2 / total if whole and total else None
    return replace(
        found,
        variant=EPOCHS_VARIANT,
        throughput_samples_per_s=total if whole else None,
        spread=spread,
        after_first_epoch=False,
    )


def epoch_rates(run: RunResult, epoch: int, count: int = EPOCHS_MEASURED) -> tuple[list[float], float | None]:
    """Each of the ``count`` whole epochs after the warm-up: its samples over the time from the
    previous epoch's last batch to its own (the step of that batch, the workers' shutdown and
    start-up, the burst, its steps); and the rate over all of them together."""
    batches = loader_batches(run)[: run.warmup_batches + count * epoch]
    epochs = [list(group) for _, group in itertools.groupby(batches, key=lambda b: b.iterator_id)]
    lead = run.warmup_batches // epoch  # the warm-up's epochs: the last of them starts the pairs
    rates, samples, seconds = [], 0, 0.0
    for before, this in itertools.pairwise(epochs[lead - 1 :] if lead else []):
        if len(this) != epoch or len(before) != epoch:
            continue
        span = (this[-1].wait_end_ns - before[-1].wait_end_ns) / NS
        delivered = sum(b.samples for b in this)
        if span > 0:
            rates.append(delivered / span)
            samples, seconds = samples + delivered, seconds + span
    return rates, samples / seconds if seconds > 0 else None


def decided(points: Sequence[SweepPoint], current: int | None) -> Decided | None:
    """The setting other than the script's own that did best over whole epochs (the fewest within
    ``SWEEP_PREFER_FEWER_WITHIN`` of the best), against the script's own measured alike, its bound
    shared among the settings so measured; None where they were not measured so."""
    found = {p.workers: p for p in usable(per_setting(points)) if p.variant == EPOCHS_VARIANT}
    own = found.get(current) if current is not None else None
    steady = plain(points)  # the settings the advice can name: measured in a steady window too
    others = [p for w, p in found.items() if w != current and w in steady]
    if own is None or not others or not throughput(own):
        return None
    chosen = fewest_near_best(others)
    runs = [p for p in points if p.variant == EPOCHS_VARIANT]
    pairs = noise.paired(runs, own.workers, chosen.workers, compared=len(others))
    if pairs is not None:
        return Decided(chosen.workers, *pairs)
    bound = noise.gain_noise(
        [throughput(p) for p in usable(runs) if p.workers == current],
        [throughput(p) for p in usable(runs) if p.workers == chosen.workers],
        compared=len(others),
    )
    if bound is None:  # one run of each: how far each run's epochs differ is all there is
        bound = max(own.spread or 0.0, chosen.spread or 0.0)
    return Decided(chosen.workers, throughput(chosen) / throughput(own), bound)
