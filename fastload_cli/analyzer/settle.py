"""When a mode has measured enough: the parent may stop a run before ``--max-batches`` once its
throughput estimate is stable.

The estimate is the steady window's samples over its time (``window.steady_steps``). Its
precision is read from consecutive rounds of the window, a round being one batch per worker
(workers deliver in rounds, so a round is the shortest stretch whose rate means anything): the
standard error of the mean round rate, relative to it. A run has settled when that error is
within ``SETTLE_PRECISION`` and the window holds at least ``MIN_STEADY_BATCHES`` batches and
``SETTLE_ROUNDS`` rounds of every worker, and it has started as many epochs as its requested
batches span (up to ``SETTLE_EPOCHS``) where its first epoch's start-up was a notable share of
an epoch: that cost shows only across epochs. A loop
as regular as a long compute-bound step settles
at that floor; a bursty one runs on to ``--max-batches`` as before.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.metrics import startup_s
from fastload_cli.analyzer.window import (
    Batches,
    LoopStep,
    epoch_batches,
    loader_batches,
    past_warmup,
    primary_loader,
    steady_steps,
)


def settled(run: Batches, *, across_epochs: bool = True) -> bool:
    """The run's throughput estimate is known as well as a comparison needs; never before the run
    is ``past_warmup``: until then ``steady_steps`` reads the warm-up's batches (as it does for a
    script that ended inside its warm-up). Not ``across_epochs``: no later epoch waited for
    (``epochs_wanted``), for a run compared with the real one by their steady windows alone where
    the real run's window crossed no epoch boundary. What an epoch costs besides its steps is then
    read from the real run; a window of this run that waited for the next epoch would hold a
    boundary the real run's does not, and cost a whole epoch's steps."""
    found = _window(run, across_epochs=across_epochs)
    return found is not None and _within(found, th.SETTLE_PRECISION, th.MIN_STEADY_BATCHES)


def real_settled(run: Batches) -> bool:
    """diagnose's real run (the real part of its real+synthetic run) is ``settled``, or its
    estimate is within ``DECIDED_PRECISION`` after ``DECIDED_BATCHES`` steady batches: the ceiling
    it stands for is read only once the synthetic run is measured, and only where that ceiling
    lands within twice the real estimate's error of a line the verdict draws can more batches
    turn the verdict; diagnose then measures the pair again (``rough_error``,
    ``plan.again.measure_again``). A bursty loop (workers fighting the step over the cores, slow
    records) stops there instead of running on to ``--max-batches`` at a slow step's pace. Not
    where the real run is what a comparison rests on (``try`` and ``sweep-workers`` hold it to
    ``settled``). A loop that waited so much of its window that free inputs cannot but clear the
    verdict's top line (``starved``) hands over after those batches, its error up to ``PROMISE_RUN_NOISE``;
    past ``STARVED_WINDOW_S`` of window, after ``MIN_STEADY_BATCHES``, with any error that leaves
    the verdict decided: a loop that slow has spent the time ten batches of a verdict take."""
    found = _window(run)
    if found is None:
        return False
    steps, error = found
    if _within(found, th.SETTLE_PRECISION, th.MIN_STEADY_BATCHES):
        return True
    if len(steps) >= th.DECIDED_BATCHES and error <= th.DECIDED_PRECISION:
        return True
    long = sum(s.step_ns for s in steps) >= th.STARVED_WINDOW_S * 1e9
    least = th.MIN_STEADY_BATCHES if long else th.DECIDED_BATCHES
    return len(steps) >= least and starved(steps, error, held=not long)


def starved(steps: list[LoopStep], error: float, *, held: bool) -> bool:
    """The loop waited so much of ``steps`` that free inputs would train at least ``1 / (1 - wait)``
    times as fast (their step takes no longer than the real step outside its wait: the loaders no
    longer compete with it), and that floor clears ``CEILING_INPUT_BOUND`` by twice ``error``, the
    window's: no error of the real estimate turns the verdict. The estimate is still ``held`` to
    ``PROMISE_RUN_NOISE``, the least noise a gain measured against it is divided by (the runs that
    verify fixes compare with it), unless the window has taken ``STARVED_WINDOW_S`` (``real_settled``
    says): more batches of a loop that stalls cost seconds each, and what is measured against it is
    divided by its spread. Workers fighting each other over the cores make a loop that bursty and
    that slow: thread-oversubscription's real run took 13-37 s to ``--max-batches``."""
    total = sum(s.step_ns for s in steps)
    busy = total - sum(min(s.wait_ns, s.step_ns) for s in steps)
    if total <= 0 or (held and error > th.PROMISE_RUN_NOISE):
        return False
    return busy <= 0 or total / busy >= th.CEILING_INPUT_BOUND * (1 + 2 * error)


def rough_error(run: Batches) -> float | None:
    """The relative error of a run's estimate where it ended short of ``settled`` (stopped by
    ``real_settled``'s looser rule, or at ``--max-batches``); None where it settled, or where no
    error can be read."""
    found = _window(run)
    if found is None or _within(found, th.SETTLE_PRECISION, th.MIN_STEADY_BATCHES):
        return None
    return found[1]


def settled_against(run: Batches, *, rate: float, line: float, across_epochs: bool = True) -> bool:
    """A run whose answer is its throughput against ``rate`` (the real run's), read against
    ``line``, is ``settled``, or that answer decided: its estimate within ``DECIDED_PRECISION``
    after ``DECIDED_BATCHES`` steady batches, and its ratio to ``rate`` at least twice that
    precision from ``line``, so that neither run's error turns it. diagnose's no-aug run against
    ``AUG_SPEEDUP_SIGNIFICANT``: a pipeline 3x faster without its augmentation need not be known to
    4% to name augmentation the cause. Not ``across_epochs``: as ``settled``'s."""

    def far_from_line(steps: list[LoopStep]) -> bool:
        mine = sum(s.batch.samples for s in steps) / (sum(s.step_ns for s in steps) / 1e9)
        return rate > 0 and clear_of(mine / rate, line)

    return _settled_or(run, far_from_line, across_epochs=across_epochs)


def clear_of(gain: float, line: float) -> bool:
    """``gain`` lies at least twice ``DECIDED_PRECISION`` from ``line``, on either side: an error
    of that precision in either of the two rates it compares cannot put it across."""
    return abs(gain / line - 1) >= 2 * th.DECIDED_PRECISION


def _settled_or(run: Batches, decides: Callable[[list[LoopStep]], bool], *, across_epochs: bool = True) -> bool:
    """The run is ``settled``, or its steady window is within ``DECIDED_PRECISION`` after
    ``DECIDED_BATCHES`` batches and ``decides`` says that answers what the run is for."""
    found = _window(run, across_epochs=across_epochs)
    if found is None:
        return False
    if _within(found, th.SETTLE_PRECISION, th.MIN_STEADY_BATCHES):
        return True
    return _within(found, th.DECIDED_PRECISION, th.DECIDED_BATCHES) and decides(found[0])


def _window(run: Batches, *, across_epochs: bool = True) -> tuple[list[LoopStep], float] | None:
    """The run's steady window and its estimate's relative error, once the run is past warm-up
    and the window holds ``SETTLE_ROUNDS`` rounds of every worker and (``across_epochs``) the
    epochs ``epochs_wanted`` asks for; None before, or where the error cannot be read."""
    if not past_warmup(loader_batches(run), run.warmup_batches):
        return None
    steps = steady_steps(run)
    loader = primary_loader(run)
    round_size = max(loader.num_workers if loader is not None else 0, 1)
    if len(steps) < th.SETTLE_ROUNDS * round_size:
        return None
    if across_epochs and len({b.iterator_id for b in loader_batches(run)}) < epochs_wanted(
        run, epoch_batches(loader), steps
    ):
        return None
    error = relative_error(steps, round_size)
    return None if error is None else (steps, error)


def _within(found: tuple[list[LoopStep], float], precision: float, least: int) -> bool:
    """The window (``_window``) holds ``least`` steady batches, its error within ``precision``."""
    steps, error = found
    return len(steps) >= least and error <= precision


def epochs_wanted(run: Batches, epoch: int | None, steps: list[LoopStep]) -> int:
    """Epochs a run must have started before it may stop early: as many as its requested batches
    span, up to ``SETTLE_EPOCHS``, where the first epoch's start-up was a notable share of an
    epoch (what each epoch's start costs shows only across epochs); one otherwise."""
    startup = startup_s(run)
    if not epoch or not steps or startup is None:
        return 1
    step_s = statistics.median(s.step_ns for s in steps) / 1e9
    if startup <= th.SETTLE_STARTUP_SHARE * epoch * step_s:
        return 1
    return max(1, min(th.SETTLE_EPOCHS, -(-run.requested_batches // epoch)))


def relative_error(steps: list[LoopStep], round_size: int) -> float | None:
    """The standard error of the mean rate over consecutive rounds of ``round_size`` steps,
    relative to that mean; None with fewer than two whole rounds."""
    rates = []
    for start in range(0, len(steps) - round_size + 1, round_size):
        block = steps[start : start + round_size]
        elapsed = sum(s.step_ns for s in block)
        if elapsed <= 0:
            return None
        rates.append(sum(s.batch.samples for s in block) / elapsed)
    if len(rates) < 2:
        return None
    mean = statistics.fmean(rates)
    return statistics.stdev(rates) / mean / math.sqrt(len(rates)) if mean > 0 else None


def epoch_end_near(run: Batches) -> bool:
    """A run past its requested batches goes on to the end of its training loader's first epoch
    when that end is near: within ``EPOCH_REACH_SHARE`` of the requested batches. It is over once
    the loop's request past the epoch's last batch returns (``IteratorInfo.ended_ns``: after the
    drain and the workers' shutdown) or a next epoch starts; and never held past the length the
    loader gave, nor where that length is unknown."""
    loader = primary_loader(run)
    epoch = epoch_batches(loader)
    if loader is None or not epoch or epoch <= run.warmup_batches:
        return False
    started = [it for it in run.iterators if it.loader_id == loader.loader_id]
    if len(started) != 1 or started[0].ended_ns is not None:
        return False
    seen = sum(1 for b in run.batches if b.loader_id == loader.loader_id)
    return seen <= epoch and epoch - seen <= th.EPOCH_REACH_SHARE * run.requested_batches
