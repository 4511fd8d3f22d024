"""A num_workers sweep that starts from a prediction (``predict``) and verifies it.

The setting where predicted returns end is measured first. While the loop still waits for data
there beside idle cores, the search climbs: to as many workers as would make the rate the step
takes with free inputs at the rate per worker measured (at least half as many more), returns
inside the noise notwithstanding (two flat steps in a row end it). Then the one below the fastest
(do fewer workers do as well?), then, while the highest setting measured is the fastest beyond the
noise and short of the step's rate with free inputs, settings above it (over short epochs, where
throughput rises in steps, the first setting of each step instead): the search refines only where
the measurements disagree with the prediction. An epoch too short for a steady window never caps
it: such a setting is measured across whole epochs, each one's start-up and drain included, as
training experiences them.
Memory, ``max_workers``, an epoch's batches (``most_workers``), a failed run and
``PREDICT_MAX_SETTINGS`` end it. Then the best setting
and the script's own are confirmed as in ``climb``; where the loaders compete with the step, the
script's own setting and fewer workers that the steady windows did not find slower are measured
over whole epochs (``epochs``).

Pure functions: ``step.next_step`` asks ``plan`` once the script's own setting is measured.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search import epochs
from fastload_cli.analyzer.search.climb import NextSetting, confirmation
from fastload_cli.analyzer.search.limits import Limits, capped
from fastload_cli.analyzer.search.points import faster, plain, saturated, throughput, usable
from fastload_cli.analyzer.search.predict import Curve
from fastload_cli.records import SweepPoint


def plan(
    points: Sequence[SweepPoint], limits: Limits, current: int, curve: Curve, *, down: bool = False
) -> NextSetting:
    """Verify a prediction: the setting where predicted returns end, the one below it (do fewer
    workers do as well?), and the one above it while the measurements still rise; with ``down``
    (the script's workers compete with the step for the cores), no workers at all too. An epoch
    too short for a steady window never caps it (such settings are measured across whole epochs);
    memory, ``max_workers``, a failed run and ``PREDICT_MAX_SETTINGS`` do."""
    measured = plain(points)
    failed = next((w for w, p in sorted(measured.items()) if p.throughput_samples_per_s is None), None)
    if failed is not None:
        return NextSetting(confirmation(measured, limits, current), f"the run with {failed} workers failed")
    target, stopped = capped(curve.best, points, limits)
    tried = [w for w in measured if w != current]
    for workers in _around(target, measured, limits, curve, down):
        if workers not in measured and len(tried) < th.PREDICT_MAX_SETTINGS:
            return NextSetting(workers, stopped)
    whole = epochs.pending(points, limits, current, down=down)
    again = confirmation(measured, limits, current, settled=over_epochs(points, whole))
    if again is None and whole:
        return NextSetting(whole[0], stopped, whole_epochs=True)
    return NextSetting(again, stopped)


def over_epochs(points: Sequence[SweepPoint], pending: Sequence[int]) -> set[int]:
    """The settings compared with the script's own over whole epochs, measured or ``pending``
    (``epochs.pending``), the script's own among them: the advice rests on those pairs (each
    setting twice, the order reversed), and a second steady window of one would decide nothing."""
    return {p.workers for p in points if p.variant == epochs.EPOCHS_VARIANT} | set(pending)


def pending(
    points: Sequence[SweepPoint], limits: Limits, current: int, curve: Curve, *, down: bool = False
) -> list[int]:
    """The settings ``plan`` asks for, in order, before any of them could change its course: those
    of ``_around`` not measured yet, within ``PREDICT_MAX_SETTINGS``; none after a failed run.
    Before the predicted setting is measured, the one below it too: where one run of the script
    measures settings in turn, the pair costs hardly more than one, whichever way the climb goes."""
    measured = plain(points)
    if any(p.throughput_samples_per_s is None for p in measured.values()):
        return []
    target, _ = capped(curve.best, points, limits)
    left = th.PREDICT_MAX_SETTINGS - len([w for w in measured if w != current])
    planned = _around(target, measured, limits, curve, down)
    if planned == [max(target, limits.min_workers)] and planned[0] not in measured:
        planned = [*planned, *_below(planned[0], limits, down)]
    wanted = [w for w in dict.fromkeys(planned) if w not in measured]
    return wanted[: max(0, left)]


def _below(best: int, limits: Limits, down: bool) -> list[int]:
    """What verifies that ``best`` is where returns end: a quarter fewer workers (never under
    ``min_workers``), and with ``down`` no workers (where ``min_workers`` allows)."""
    lower = max(best - max(1, best // 4), limits.min_workers)
    return [*([lower] if lower < best else []), *_none(limits, down)]


def _none(limits: Limits, down: bool) -> list[int]:
    """No workers, where the script's workers compete with the step (``down``) and ``min_workers`` allows."""
    return [0] if down and limits.min_workers == 0 else []


def _around(
    target: int, measured: dict[int, SweepPoint], limits: Limits, curve: Curve, down: bool = False
) -> list[int]:
    """The settings that verify ``target``: itself; then, while the loop still waits for data at the
    highest setting measured beside idle cores (``_starved_top``), one above it (``_up``); once it
    does not, one below the fastest of those (a quarter fewer workers, never under ``min_workers``:
    do fewer do as well?) and, with ``down``, no workers (where ``min_workers`` allows); then, while the
    highest measured setting is the fastest beyond the noise (``_rising_top``) and the cores had room
    there (``points.saturated``: a rise on full cores is the workers' share of them growing at the
    step's expense), one above it.
    Over whole epochs, the steps of ``_steps`` instead; with ``down``, no workers right after the
    first of them: the steps above add workers to cores the step already shares, and a time budget
    that ends the search early has then measured the setting the competition points to."""
    target = max(target, limits.min_workers)
    if fewest_for_rounds(target, limits):
        first, *above = _steps(target, measured, limits)
        return [first, *_none(limits, down), *above]
    wanted = [target]
    while not down and (top := _starved_top(measured, wanted)) is not None and top < most_workers(limits):
        wanted.append(_up(measured[top], limits, curve.consumer_per_s))
    if not all(w in measured for w in wanted):
        return wanted
    fastest = max(usable(measured[w] for w in wanted), key=throughput, default=None)
    wanted += _below(fastest.workers if fastest is not None else target, limits, down)
    while (
        (top := _rising_top(measured, wanted)) is not None
        and top < most_workers(limits)
        and not _fed(measured[top], curve)
        and not saturated(measured[top])
    ):
        wanted.append(_up(measured[top], limits, curve.consumer_per_s))
    return wanted


def _fed(top: SweepPoint, curve: Curve) -> bool:
    """``top`` trains at the rate the step takes with free inputs (``Curve.consumer_per_s``), as far
    as the runs can tell: within ``SWEEP_PREFER_FEWER_WITHIN`` of it, or within the noise between the
    two (``top``'s spread and the synthetic run's, ``Curve.consumer_noise``, at least ``SWEEP_NOISE_FLOOR``),
    or faster. No setting above it can beat it by more: by less than ``SWEEP_PREFER_FEWER_WITHIN``
    the sweep names ``top`` (``fewest_near_best``), and by less than the noise no run could tell,
    nor promise it. A climb on from there measures nothing the advice could use, and over short
    epochs its settings may need whole epochs each: gpu_paced.py's 3 workers, 435 samples/s where
    its replays ran 450 (±10%), climbed to 4 (446, 455), measured 3 again and kept it, 2.5 s of a
    12 s diagnosis."""
    if curve.consumer_per_s is None:
        return False
    within = max(th.SWEEP_PREFER_FEWER_WITHIN, noise.floored(max(top.spread or 0.0, curve.consumer_noise)))
    return throughput(top) >= curve.consumer_per_s * (1 - within)


def _up(top: SweepPoint, limits: Limits, consumer: float | None) -> int:
    """The setting above ``top`` to measure: as many workers as would make the rate the step takes
    with free inputs (``consumer``) at ``top``'s measured rate per worker, at least half as many
    more, within ``most_workers``. A curve that bends (workers sharing memory bandwidth) falls short
    of that rate there, and the next step up measures again from that setting."""
    half = top.workers + max(1, top.workers // 2)
    rate = throughput(top)
    reach = math.ceil(top.workers * consumer / rate) if consumer and rate > 0 and top.workers else half
    return min(most_workers(limits), max(half, reach))


def most_workers(limits: Limits) -> int:
    """The most workers a climb measures: ``max_workers``, and no more than an epoch has batches
    where that is known. An epoch's batches are dealt to the workers in turn, so a worker past them
    never gets one, and where workers start again each epoch it only adds its start-up: cold_reads.py,
    24 batches an epoch, once climbed from 3 workers to 32, whose run took 6 s of a 15 s diagnose."""
    epoch = limits.epoch_batches
    return min(limits.max_workers, epoch) if epoch else limits.max_workers


def _steps(target: int, measured: dict[int, SweepPoint], limits: Limits) -> list[int]:
    """Over whole epochs, where throughput rises in steps (``fewest_for_rounds``): the first
    setting of ``target``'s step, the first of the step above it (one round fewer), and while the
    highest measured setting is the fastest (beyond the noise), the first of the step above that."""
    start = max(fewest_for_rounds(target, limits), limits.min_workers)
    wanted = [start, *_step_up(start, limits)]
    top = _rising_top(measured, wanted)
    return [*wanted, *_step_up(top, limits)] if top is not None else wanted


def _step_up(workers: int, limits: Limits) -> list[int]:
    """The fewest workers that load an epoch in one round fewer than ``workers`` do, within
    ``max_workers``; none where one round is already enough."""
    batches = limits.epoch_batches or 0
    rounds = math.ceil(batches / workers) if workers else 0
    up = math.ceil(batches / (rounds - 1)) if rounds > 1 else None
    return [up] if up is not None and up <= limits.max_workers else []


def _rising_top(measured: dict[int, SweepPoint], wanted: list[int]) -> int | None:
    """Once ``wanted`` is measured: the highest setting measured when it is also the fastest,
    beyond the noise (the measurements still rise), else None."""
    ok = usable(measured.values())
    if not ok or not all(w in measured for w in wanted):
        return None
    top = max(ok, key=throughput)
    others = [p for p in ok if p.workers < top.workers]
    rising = top.workers == max(measured) and (not others or faster(top, max(others, key=throughput)))
    return top.workers if rising else None


def _starved_top(measured: dict[int, SweepPoint], climbed: list[int]) -> int | None:
    """Once ``climbed`` is measured: its last setting, where the loop still waits for data there
    beside idle cores (``starved``) and no setting with fewer workers beats it beyond the noise:
    more workers can still feed the step. Returns inside the noise do not end such a climb at once (short
    epochs swing a setting's rate); two steps up in a row that gain nothing beyond it do (a limit
    the waits do not show: storage bandwidth, a lock)."""
    ok = usable(measured.values())
    if not ok or not all(w in measured for w in climbed):
        return None
    highest = measured[climbed[-1]]
    if highest.throughput_samples_per_s is None or not starved(highest):
        return None
    if any(faster(p, highest) for p in ok if p.workers < highest.workers):
        return None  # fewer workers did better: more of them do not help here
    flat = [not faster(measured[b], measured[a]) for a, b in pairwise(climbed)]
    return None if flat[-2:] == [True, True] else highest.workers


def starved(p: SweepPoint) -> bool:
    """At ``p``'s setting the loop still waited for data (``WAIT_COMPUTE_BOUND``) while the cores had
    room (under ``CPU_SATURATED``): more workers can still feed it."""
    wait, busy = p.data_wait_fraction, p.system_cpu_busy_fraction
    return wait is not None and wait >= th.WAIT_COMPUTE_BOUND and busy is not None and busy < th.CPU_SATURATED


def fewest_for_rounds(target: int, limits: Limits) -> int:
    """Where ``target`` is measured over whole epochs: the fewest workers that load an epoch in as
    many rounds as ``target`` does (0 otherwise).

    An epoch's batches are dealt to the workers in turn, so its loading takes
    ``ceil(batches / workers)`` loads one after another in the busiest worker: over a short epoch
    throughput steps up where that count drops (at 13 workers for 25 batches, two rounds instead
    of three at 12) and is flat between the steps, where more workers only take longer to start.
    So the settings worth measuring are the first of each step, not a quarter less or half more,
    which can land inside a step or a step lower."""
    batches = limits.epoch_batches
    if not batches or target < 1 or limits.persistent_workers or limits.too_many(target) is None:
        return 0
    rounds = math.ceil(batches / target)
    return math.ceil(batches / rounds)
