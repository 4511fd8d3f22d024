"""In the parent: a run's batch records, bounded however long it runs.

Every batch of a loader's first ``first`` is kept, and the run's latest ``LATEST_BATCHES`` of any
loader; what falls between them is folded into its loader's totals (``FoldedBatches``) as it leaves
the latest. The analysis reads the kept records one by one (step percentiles, the findings) and
the totals for what the run measured between them (throughput, data wait, the window's time),
so an hour of measuring costs the same memory as a few minutes.
"""

from __future__ import annotations

import heapq
import sys
from array import array
from collections import deque
from dataclasses import dataclass, field, replace

from fastload_cli.config import RunConfig
from fastload_cli.records import BatchRecord, FoldedBatches, IteratorInfo, Mode

# A loader's first batches kept one by one (past its warm-up), and the run's latest: about 600
# bytes a record, so a few MB whatever the run's length.
FIRST_BATCHES = 4096
LATEST_BATCHES = 4096

# Runs read by their batches' positions: the parts of one run (turns, real then synthetic)
IN_PARTS = frozenset({Mode.SPLIT, Mode.IN_PROCESS, Mode.REAL_SYNTHETIC})

_Key = tuple[int, int]  # (loader id, iterator id): one epoch of one loader


@dataclass
class _Fold:
    """One loader's folded batches, added up as they leave the latest."""

    loader_id: int
    batches: int = 0
    samples: int = 0
    steps: int = 0
    step_samples: int = 0
    step_wait_ns: int = 0
    epochs: int = 0
    spans: array[int] = field(default_factory=lambda: array("q"))  # start, end, start, end...

    def add(self, record: BatchRecord, before_ns: int | None) -> None:
        self.batches += 1
        self.samples += record.samples
        self.epochs += record.index == 0
        if before_ns is None or record.index == 0:
            return
        self.steps += 1
        self.step_samples += record.samples
        self.step_wait_ns += record.wait_ns
        if self.spans and self.spans[-1] == before_ns:
            self.spans[-1] = record.wait_end_ns
        else:
            self.spans.extend((before_ns, record.wait_end_ns))

    def record(self) -> FoldedBatches:
        pairs = tuple(zip(self.spans[::2], self.spans[1::2], strict=True))
        return FoldedBatches(
            loader_id=self.loader_id,
            batches=self.batches,
            samples=self.samples,
            steps=self.steps,
            step_samples=self.step_samples,
            step_wait_ns=self.step_wait_ns,
            epochs=self.epochs,
            spans=pairs,
        )


class KeptBatches:
    """The batch records a run keeps, in arrival order, and the folds of those it does not.

    ``first`` and ``latest`` of None keep every record: a run whose parts are read by their
    batches' positions (in turns, real then synthetic) is bounded by its parts, not folded."""

    def __init__(self, first: int | None = FIRST_BATCHES, latest: int | None = None) -> None:
        self.first = sys.maxsize if first is None else first
        self.latest = LATEST_BATCHES if latest is None else latest
        self._first: list[tuple[int, BatchRecord]] = []  # (arrival, record)
        self._per_loader: dict[int, int] = {}  # loader id: records in the first part
        self._latest: deque[tuple[int, BatchRecord, int | None]] = deque()  # (arrival, record, previous end)
        self._arrived = 0
        self._previous_end: dict[_Key, int] = {}  # each epoch's latest batch: the end of its wait
        self._folds: dict[int, _Fold] = {}
        self._resume: dict[_Key, int] = {}  # an epoch's last folded batch: where the next kept one's step began
        self._folded_epochs: dict[int, _Key] = {}  # loader id: the epoch it last folded a batch of
        self._kept_epochs: set[_Key] = set()  # epochs with a batch in the first part
        self.dropped_epochs: list[_Key] = []  # epochs folded whole: their iterators can go

    def add(self, record: BatchRecord) -> None:
        """Keep ``record``; past the bounds, fold the oldest of the latest."""
        key = (record.loader_id, record.iterator_id)
        before = self._previous_end.get(key)
        self._previous_end[key] = record.wait_end_ns
        self._arrived += 1
        if self._per_loader.get(record.loader_id, 0) < self.first:
            self._per_loader[record.loader_id] = self._per_loader.get(record.loader_id, 0) + 1
            self._first.append((self._arrived, record))
            self._kept_epochs.add(key)
            return
        self._latest.append((self._arrived, record, before))
        while len(self._latest) > self.latest:
            self._fold(*self._latest.popleft()[1:])

    def records(self) -> tuple[BatchRecord, ...]:
        """The kept records in arrival order; an epoch's first kept after folded ones says where its step began."""
        resumed: set[_Key] = set()
        found = []
        for _, record in heapq.merge(self._first, ((n, r) for n, r, _ in self._latest), key=lambda kept: kept[0]):
            key = (record.loader_id, record.iterator_id)
            if key in self._resume and key not in resumed:
                resumed.add(key)
                record = replace(record, after_ns=self._resume[key])
            found.append(record)
        return tuple(found)

    def folded(self) -> tuple[FoldedBatches, ...]:
        return tuple(fold.record() for fold in self._folds.values())

    def __len__(self) -> int:
        return len(self._first) + len(self._latest)

    def _fold(self, record: BatchRecord, before_ns: int | None) -> None:
        key = (record.loader_id, record.iterator_id)
        fold = self._folds.setdefault(record.loader_id, _Fold(record.loader_id))
        fold.add(record, before_ns)
        self._resume[key] = record.wait_end_ns
        last = self._folded_epochs.get(record.loader_id)
        if last is not None and last != key:  # the loader's previous epoch is folded to its end
            self._resume.pop(last, None)
            self._previous_end.pop(last, None)
            if last not in self._kept_epochs:
                self.dropped_epochs.append(last)
        self._folded_epochs[record.loader_id] = key


def for_run(config: RunConfig) -> KeptBatches:
    """What a run keeps: a run in parts every record (its parts bound it), another its loaders'
    warm-up and first batches, and its latest."""
    in_parts = config.spec.mode in IN_PARTS or bool(config.child.turns)
    return KeptBatches(None if in_parts else FIRST_BATCHES + config.warmup)


def without_dropped(iterators: list[IteratorInfo], dropped: list[_Key]) -> list[IteratorInfo]:
    """The iterators of epochs that still have a kept batch (or none yet)."""
    gone = set(dropped)
    return [it for it in iterators if (it.loader_id, it.iterator_id) not in gone]
