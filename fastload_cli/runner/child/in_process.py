"""Inside the child: ``in-process``, several num_workers settings measured in turn in one
run of the script, so the script's start-up (imports, building its dataset) is paid once.

The parent names the settings and each one's batches (its start-up burst included); the first
setting is the loader's from its construction, as ``workers=N`` does. When a setting has had its
batches, the loop's iterator gives up the batches its workers had in hand (their indices are
skipped: that epoch ends a few batches short), and a new iterator built with the next setting
takes over the rest of the epoch's indices; the loop keeps the iterator it has, and its batches
come from the new one until the epoch ends. Epochs begun later start with the setting in force.
A PHASE event marks each setting's first batch and names its worker processes.

Where the parent asks for turns at epochs (``ChildSpec.turn_at_epochs``: settings compared over
whole epochs, each epoch's start-up included), a setting takes over only as an epoch starts, once
the one in force has had its batches: every epoch is loaded by one setting, from its own
``iter()``, as training with that setting loads it.

Loaders with ``persistent_workers=True`` keep their iterator across epochs and are never
switched (the parent does not ask for settings in turn there); nor are iterable datasets, whose position
cannot be handed over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.records import UNCHANGED, EventKind
from fastload_cli.runner.child.batches import safe_len
from fastload_cli.runner.child.modes import EpochState, LoaderState, Produce, WorkersOverride, stop_workers
from fastload_cli.runner.child.modes import NextAsked as _Next
from fastload_cli.runner.child.workers import track_workers

IN_PROCESS_LOCATION = "DataLoader (settings in turn)"
DEFAULT_PREFETCH = 2  # torch's own, for a loader built with none (num_workers=0) that gets workers


@dataclass
class InProcessSettings(WorkersOverride):
    """``in-process``: the settings of ``spec.turns`` in turn, each for its batches or until the
    parent says its estimate is stable, whichever comes first."""

    _loaders: dict[int, Any] = field(default_factory=dict)  # loader id -> the loader, where it may switch
    _setting: dict[int, int] = field(default_factory=dict)  # loader id -> index of the setting in force
    _began: dict[int, int] = field(default_factory=dict)  # loader id -> its batches when that setting took over
    _delivered: dict[int, int] = field(default_factory=dict)  # loader id -> its batches so far

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        if not self.spec.turns:
            return None
        original = int(arguments.get("num_workers", 0))
        self.set_workers(arguments, loader_id, self.spec.turns[0][0])
        return original

    def after_init(self, loader: Any, loader_id: int) -> None:
        if loader._dataset_kind != 0 or loader.persistent_workers:
            why = "persistent workers" if loader.persistent_workers else "an iterable dataset"
            self.channel.substitution(loader_id, IN_PROCESS_LOCATION, f"not switched: {why}", UNCHANGED)
            return
        self._loaders[loader_id] = loader
        self._setting[loader_id] = self._began[loader_id] = self._delivered[loader_id] = 0

    def start_epoch(self, loader: Any, state: LoaderState, original: Callable[[Any], Any]) -> Any:
        switched = self._at_epochs(state) and self._done(state)
        if switched:
            self._next_setting(loader, state)
        iterator = original(loader)
        if state.loader_id in self._loaders and (state.batches == 0 or switched):
            self._mark(state, iterator)
        return iterator

    def next_batch(self, iterator: Any, epoch: EpochState, produce: Produce) -> Any:
        source = getattr(iterator, "_fastload_source", None) or iterator
        batch = self.timed(epoch, produce, source, synthetic=False)
        state = epoch.loader
        if state.loader_id not in self._loaders:
            return batch
        self._delivered[state.loader_id] = state.batches
        if not self.spec.turn_at_epochs and self._done(state):
            self._switch(iterator, source, epoch, self._loaders[state.loader_id])
        return batch

    def _at_epochs(self, state: LoaderState) -> bool:
        """A later epoch of a loader that switches settings as its epochs start."""
        return self.spec.turn_at_epochs and state.batches > 0 and state.loader_id in self._loaders

    def _done(self, state: LoaderState) -> bool:
        """The setting in force has had its batches, or (mid-epoch turns) the parent found it
        settled; only the training loader (the one that delivered the most, as the parent
        counts) switches, and its last setting runs to the end."""
        at = self._setting[state.loader_id]
        if at == len(self.spec.turns) - 1 or state.batches < max(self._delivered.values()):
            return False
        if state.batches - self._began[state.loader_id] >= self.spec.turns[at][1]:
            return True
        if not self.spec.turn_at_epochs and _Next.asked:
            _Next.asked = False
            return True
        return False

    def _next_setting(self, loader: Any, state: LoaderState) -> None:
        """The loader's next setting in force, for the iterators built from now on."""
        self._setting[state.loader_id] += 1
        workers = self.spec.turns[self._setting[state.loader_id]][0]
        loader.num_workers = workers
        if workers > 0 and loader.prefetch_factor is None:
            loader.prefetch_factor = DEFAULT_PREFETCH

    def _switch(self, iterator: Any, source: Any, epoch: EpochState, loader: Any) -> None:
        """The next setting takes over the rest of this epoch from ``source``."""
        state = epoch.loader
        rest = source._sampler_iter
        stop_workers(source)
        self._next_setting(loader, state)
        remaining = max(0, (safe_len(loader) or 0) - epoch.index)
        iterator._fastload_source = _iterator_over(loader, _Rest(rest, remaining))
        track_workers(iterator._fastload_source)
        self._mark(state, iterator._fastload_source)

    def _mark(self, state: LoaderState, source: Any) -> None:
        workers, planned = self.spec.turns[self._setting[state.loader_id]]
        self._began[state.loader_id] = state.batches
        self.channel.emit(
            EventKind.PHASE,
            loader_id=state.loader_id,
            batch=state.batches,
            phase=f"workers={workers}",
            planned=planned,
            worker_pids=[w.pid for w in getattr(source, "_workers", ())],
        )


class _Rest:
    """An epoch's remaining indices (batches of them), as the index sampler a new iterator reads."""

    def __init__(self, rest: Iterator[Any], remaining: int) -> None:
        self._rest, self._remaining = rest, remaining

    def __iter__(self) -> Iterator[Any]:
        return self._rest

    def __len__(self) -> int:
        return self._remaining


def _iterator_over(loader: Any, indices: _Rest) -> Any:
    """A new iterator of ``loader``, at its current settings, that reads ``indices``."""
    name = "batch_sampler" if loader._auto_collation else "sampler"
    own = loader.__dict__[name]
    object.__setattr__(loader, name, indices)  # DataLoader refuses to set it once built
    try:
        return loader._get_iterator()
    finally:
        object.__setattr__(loader, name, own)
