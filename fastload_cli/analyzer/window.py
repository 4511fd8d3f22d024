"""The measured window: which of a run's batches count, and the steps they make. Pure.

The window is the steady state of the training loader: its batches after warm-up, leaving out
the first batch of every epoch (worker start-up is reported on its own), or whole epochs where an
epoch is too short for a steady state. Each batch contributes one *step*: from the end of the
previous batch's wait to the end of its own, of which the wait is the data-wait part. The window
can be several spans when it crosses epochs. ``metrics`` summarises a run over it.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.counters import Span
from fastload_cli.records import BatchRecord, FoldedBatches, IteratorInfo, LoaderInfo, RunResult, Streamed

NS = 1e9
Batches = RunResult | Streamed  # a finished run, or what a run in flight has streamed so far


@dataclass(frozen=True, slots=True)
class LoopStep:
    """One turn of the training loop: from the end of the previous batch's wait to the end of this
    batch's (the data wait is its last part). The search's ``Step`` is another thing: what it
    measures next."""

    batch: BatchRecord
    previous_end_ns: int  # the end of the previous batch's wait, same epoch
    other_wait_ns: int = 0  # waits for other loaders' batches inside this step (zip of two loaders)
    tail_ns: int = 0  # an epoch counted whole: its last step and its iterator's end, after its last batch

    @property
    def end_ns(self) -> int:
        return self.batch.wait_end_ns + self.tail_ns

    @property
    def step_ns(self) -> int:
        return self.end_ns - self.previous_end_ns

    @property
    def wait_ns(self) -> int:
        """All of the step the loop spent blocked on data, whichever loader it waited for."""
        return self.batch.wait_ns + self.other_wait_ns


def primary_loader_id(run: Batches) -> int | None:
    """The loader that delivered the most batches: the training loader, as a rule."""
    counts = Counter(b.loader_id for b in run.batches)
    return counts.most_common(1)[0][0] if counts else None


def primary_loader(run: Batches) -> LoaderInfo | None:
    loader_id = primary_loader_id(run)
    return next((lo for lo in run.loaders if lo.loader_id == loader_id), run.loaders[0] if run.loaders else None)


def first_loader(runs: Sequence[RunResult]) -> LoaderInfo | None:
    """The training loader, as the first run that measured a batch saw it."""
    return next((primary_loader(r) for r in runs if r.batches), None)


def loader_batches(run: Batches) -> list[BatchRecord]:
    """The training loader's batches, up to the number fastload asked for."""
    loader_id = primary_loader_id(run)
    return [b for b in run.batches if b.loader_id == loader_id][: run.requested_batches]


def first_replay(batches: Sequence[BatchRecord]) -> int | None:
    """The position of the first replayed batch (the synthetic mode's switch), or None."""
    return next((i for i, b in enumerate(batches) if b.synthetic), None)


def past_warmup(batches: list[BatchRecord], warmup: int) -> bool:
    """A window after warm-up holds a step; else it reads the batches after the first instead."""
    return len(batches) > warmup + 1


def startup_burst(loader: LoaderInfo | None) -> int:
    """Batches that arrive at once when an iterator starts: each worker's first prefetch_factor."""
    if loader is None or not loader.num_workers:
        return 0
    return loader.num_workers * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR)


def steady_window(workers: int, factor: int | None, epoch: int) -> bool:
    """An epoch of ``epoch`` batches leaves a steady window at ``workers``: between the start-up
    burst (each worker's first ``prefetch_factor`` batches) and the drain of as many, at least
    ``SWEEP_ROUNDS`` batches per worker and ``MIN_STEADY_BATCHES``. Runs are planned and read by it."""
    burst = workers * (factor or th.DEFAULT_PREFETCH_FACTOR)
    return epoch - 2 * burst >= max(th.MIN_STEADY_BATCHES, th.SWEEP_ROUNDS * workers)


def epoch_batches(loader: LoaderInfo | None) -> int | None:
    """Batches in one epoch of a map-style dataset: ``len(loader)`` as the script's loader said,
    else the full batches its dataset's length and batch size make."""
    if loader is None or loader.iterable_dataset:
        return None
    if loader.batches_per_epoch:
        return loader.batches_per_epoch
    return loader.dataset_len // loader.batch_size if loader.dataset_len and loader.batch_size else None


def steady_steps(run: Batches) -> list[LoopStep]:
    """Steps after warm-up, without the start (and, with workers, the end) of any epoch.

    An epoch starts with its iterator's workers starting, then every worker delivering its first
    ``prefetch_factor`` batches at once, and it ends with the loop draining as many batches that
    were loaded while it was busy. When epochs are long enough to leave a steady state between,
    the burst is left out along with the start-up it followed (reported on its own as start-up
    time), and so is the drain when the epoch's length is known. When epochs are too short for
    that, every epoch after warm-up counts whole, from ``iter()`` on: start-up, burst and all,
    which is what such epochs cost. Without workers only each epoch's first batch is left out.
    When the script delivered too few batches to leave warm-up, the batches after the first are
    used instead (the caveats say so). A run long enough to fold batches into totals (``folded``)
    counts every step but each epoch's first, kept and folded alike: over its many batches a
    burst and a drain are the steady state's.
    """
    batches = loader_batches(run)
    if folded(run) is not None:
        return _steps(run, batches, first=1)
    loader = primary_loader(run)
    burst = startup_burst(loader)
    known = epoch_batches(loader)
    epoch = known or max(Counter(b.iterator_id for b in batches).values(), default=0)
    if burst > 1 and loader is not None and steady_window(loader.num_workers or 0, loader.prefetch_factor, epoch):
        steps = _steps(run, batches, first=burst, end=known - burst if known else None)
        if len(steps) >= th.MIN_STEADY_BATCHES:
            return steps
        return _steps(run, batches, first=1)
    if burst > 1:  # epochs too short for a steady state: each one counts whole, its start-up included
        steps = _to_ends(_steps(run, batches, first=0), run.iterators)
        if known and run.warmup_batches % known == 0:
            return _whole_epochs(steps, batches, known, run.iterators)
        return steps
    return _steps(run, batches, first=1)


def _to_ends(steps: list[LoopStep], iterators: Iterable[IteratorInfo]) -> list[LoopStep]:
    """``steps``, the last of each epoch that ended running to that end: where the loop's request
    past the epoch's last batch ended, after that batch's step and the iterator's shutdown of its
    workers, which each epoch costs as it costs its start-up."""
    ends = {it.iterator_id: it.ended_ns for it in iterators if it.ended_ns is not None}
    last = {s.batch.iterator_id: i for i, s in enumerate(steps)}
    tails = {i: ends[it] - steps[i].batch.wait_end_ns for it, i in last.items() if it in ends}
    return [replace(s, tail_ns=max(0, tails[i])) if i in tails else s for i, s in enumerate(steps)]


def _whole_epochs(
    steps: list[LoopStep], batches: list[BatchRecord], epoch: int, iterators: Iterable[IteratorInfo]
) -> list[LoopStep]:
    """A run planned in whole epochs (its warm-up is): ``steps`` of the epochs that ran to their
    end after it, else ``steps``. A window starting or ending inside an epoch would count its
    start-up or not by where the warm-up or an early stop fell. Where the run saw an epoch end
    (``_to_ends``), only the epochs it saw end count: one stopped after its last batch but before
    its end would leave out the step and the shutdown the others count."""
    counts, measured = Counter(b.iterator_id for b in batches), Counter(s.batch.iterator_id for s in steps)
    whole = {it for it, n in counts.items() if n == epoch and measured[it] == n}
    ended = whole & {it.iterator_id for it in iterators if it.ended_ns is not None}
    kept = [s for s in steps if s.batch.iterator_id in (ended or whole)]
    return kept or steps


def _steps(run: Batches, batches: list[BatchRecord], first: int, end: int | None = None) -> list[LoopStep]:
    """Steps after warm-up, from each epoch's batch ``first`` on and before its batch ``end``;
    with ``first`` 0, batch 0's step starts at iter(). In a run that switched to replaying one
    batch, not the first replay's step either: the switch shut the workers down inside it."""
    skip = run.warmup_batches if past_warmup(batches, run.warmup_batches) else 1
    switched = first_replay(batches)
    if switched is not None and past_warmup(batches, switched):
        skip = max(skip, switched + 1)
    previous: dict[int, int] = {it.iterator_id: it.started_ns for it in run.iterators} if first == 0 else {}
    others = _other_waits(run, batches[0].loader_id) if batches else None
    steps = []
    for position, batch in enumerate(batches):
        before = batch.after_ns if batch.after_ns is not None else previous.get(batch.iterator_id)
        previous[batch.iterator_id] = batch.wait_end_ns
        inside = batch.index >= first and (end is None or batch.index < end)
        if position >= skip and inside and before is not None:
            other = others.inside(before, batch.wait_end_ns) if others is not None else 0
            steps.append(LoopStep(batch=batch, previous_end_ns=before, other_wait_ns=other))
    return steps


class _Waits:
    """Waits for batches of other loaders, to find those inside a step of the measured one."""

    def __init__(self, waits: list[tuple[int, int]]) -> None:
        self.waits = sorted(waits, key=lambda w: w[1])
        self.ends = [end for _, end in self.waits]

    def inside(self, start_ns: int, end_ns: int) -> int:
        first = bisect.bisect_right(self.ends, start_ns)
        last = bisect.bisect_right(self.ends, end_ns)
        return sum(max(0, min(b, end_ns) - max(a, start_ns)) for a, b in self.waits[first:last])


def _other_waits(run: Batches, loader_id: int) -> _Waits | None:
    waits = [(b.wait_start_ns, b.wait_end_ns) for b in run.batches if b.loader_id != loader_id]
    return _Waits(waits) if waits else None


def in_lockstep(stalled: Sequence[int], batches: int, workers: int) -> bool:
    """The stalls (indices among ``batches`` steady waits) recur a round apart (``workers``
    batches) in at least ``LOCKSTEP_ROUNDS`` of the rounds measured: workers that start together
    and finish together, the loop waiting once a round for the first of them. Slow samples or
    bursts stall where they fall, seldom a round after the last stall."""
    apart = sum(b - a == workers for a, b in pairwise(stalled))
    return workers >= 2 and apart >= th.LOCKSTEP_ROUNDS * batches / workers


def spans(steps: list[LoopStep]) -> list[Span]:
    """The window as contiguous time spans (a new span where an epoch boundary was left out)."""
    found: list[Span] = []
    for step in steps:
        if found and found[-1][1] == step.previous_end_ns:
            found[-1] = (found[-1][0], step.end_ns)
        else:
            found.append((step.previous_end_ns, step.end_ns))
    return found


def delivered(run: RunResult) -> int:
    """Batches the run's loaders delivered: those kept one by one and a long run's folded ones."""
    return len(run.batches) + sum(f.batches for f in run.folded)


def folded(run: Batches) -> FoldedBatches | None:
    """The training loader's batches a long run did not keep one by one, or None (all kept)."""
    loader_id = primary_loader_id(run)
    return next((f for f in run.folded if f.loader_id == loader_id), None)


@dataclass(frozen=True, slots=True)
class Totals:
    """The measured window's steps: those kept one by one and a long run's folded ones together."""

    steps: int
    samples: int
    wait_ns: int
    window: list[Span]

    @property
    def window_ns(self) -> int:
        return sum(b - a for a, b in self.window)


def totals(run: RunResult, steps: list[LoopStep]) -> Totals:
    """The window's steps, samples and data wait, and its spans of time, folded batches included."""
    kept = Totals(len(steps), sum(s.batch.samples for s in steps), sum(s.wait_ns for s in steps), spans(steps))
    fold = folded(run)
    if fold is None:
        return kept
    return Totals(
        steps=kept.steps + fold.steps,
        samples=kept.samples + fold.step_samples,
        wait_ns=kept.wait_ns + fold.step_wait_ns,
        window=_joined([*kept.window, *fold.spans]),
    )


def _joined(found: list[Span]) -> list[Span]:
    """Spans in time order, those that meet made one."""
    joined: list[Span] = []
    for start, end in sorted(found):
        if joined and joined[-1][1] >= start:
            joined[-1] = (joined[-1][0], max(joined[-1][1], end))
        else:
            joined.append((start, end))
    return joined
