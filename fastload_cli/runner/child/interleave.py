"""Inside the child: the ``split`` run, where the pipelines the split compares take turns in one
run of the script.

Each loader's dataset is wrapped once, at construction, in a ``Switched`` view holding four
pipelines: the real one (read, decode, transform); the same with its augmentation swapped for the
no-aug stand-ins; the decoded samples cached in memory (``fixing.cache_view``) with the real
transform; and both. One byte of shared memory per loader (``multiprocessing.RawValue``) says
which pipeline a sample takes: the main process sets it and every DataLoader worker reads it at
each sample, so no worker is restarted or told anything, and the loop sees its epoch go on.

After the warm-up, the pipelines take ``ChildSpec.phase_batches`` batches each, in turn, every
other round in reverse order (real ... cached-no-aug, cached-no-aug ... real: a machine that
slows down steadily slows every pipeline's turns alike on average), and a PHASE event marks each
turn. A turn's first batches were already prefetched under the turn before it; the parent
leaves them out (``analyzer.split.interleaved_split``).
Runs minutes apart on a busy machine differ by more than the parts being measured; turns a few
seconds apart share the machine's state, so the parts are compared under the same conditions.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.records import CACHE_LOCATION, SPLIT_LOCATION, UNCHANGED, EventKind
from fastload_cli.runner.child.fixing import CachedView, cache_view, fill_cache
from fastload_cli.runner.child.modes import Actuator, EpochState, LoaderState, Produce, derandomize

DEFAULT_PHASE_BATCHES = 12  # a turn's batches when the parent does not say

# Each pipeline: its name (the mode that measures it on its own), augmentation replaced, cached.
PHASES: tuple[tuple[str, bool, bool], ...] = (
    ("real", False, False),
    ("no-aug", True, False),
    ("cached", False, True),
    ("cached-no-aug", True, True),
)


@dataclass(slots=True)
class Swap:
    """One attribute the no-aug pipelines set to its stand-in, and back for the others."""

    owner: Any
    attribute: str
    real: Any
    standin: Any


class Switched:
    """A map-style dataset whose samples take the pipeline the shared ``flag`` names (an index
    into ``PHASES``): the dataset's own, or the cached view's, with the augmentation or its
    stand-ins. Pickles with its parts, so workers started by spawn or forkserver switch too."""

    def __init__(self, dataset: Any, view: CachedView | None, swaps: list[Swap], flag: Any) -> None:
        self.dataset, self.view, self.swaps, self.flag = dataset, view, swaps, flag
        self._replaced = False  # the stand-ins are in place (in this process)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name: str) -> Any:  # classes, targets, ...: the script's dataset answers
        inner = self.__dict__.get("view") or self.__dict__.get("dataset")  # the view: its transform is the real one
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    def __getitem__(self, index: int) -> Any:
        _, replaced, cached = PHASES[self.flag.value]
        self.replace_augmentation(replaced)
        if self.view is None:
            return self.dataset[index]
        return self.view[index] if cached else self.view.cache.read(index)

    def replace_augmentation(self, replaced: bool) -> None:
        """Put the stand-ins in place (or the real transforms back) in this process."""
        if replaced == self._replaced:
            return
        for swap in self.swaps:
            setattr(swap.owner, swap.attribute, swap.standin if replaced else swap.real)
        self._replaced = replaced


@dataclass(slots=True)
class Turns:
    """One loader's schedule: the pipelines it can take, and the flag its samples read."""

    phases: tuple[int, ...]  # indices into PHASES
    flag: Any


@dataclass
class InterleavedSplit(Actuator):
    """``split``: the pipelines of the split taking turns, ``phase_batches`` batches each."""

    _turns: dict[int, Turns] = field(default_factory=dict)  # loader id -> its schedule

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        dataset = arguments.get("dataset")
        if dataset is None or isinstance(dataset, Switched):
            return None  # no dataset, or a framework building its loader again around this one
        swaps = self._stand_ins(dataset, loader_id)
        view, what = cache_view(dataset, self.spec.cache_bytes)
        if view is None:
            self.channel.substitution(loader_id, CACHE_LOCATION, f"not cached: {what}", UNCHANGED)
        else:  # the cache took the dataset's transform: the stand-ins go where it now is
            swaps = [
                Swap(view.cache, "transform", s.real, s.standin) if s.real is view.cache.transform else s for s in swaps
            ]
            self.channel.substitution(
                loader_id, CACHE_LOCATION, type(dataset).__qualname__, f"cached in memory: {what}"
            )
        phases = tuple(
            i for i, (_, replaced, cached) in enumerate(PHASES) if (swaps or not replaced) and (view or not cached)
        )
        if len(phases) < 2:
            self.channel.substitution(
                loader_id, SPLIT_LOCATION, "no augmentation to replace and nothing to cache", UNCHANGED
            )
            return None
        flag = multiprocessing.RawValue("B", 0)
        arguments["dataset"] = Switched(dataset, view, swaps, flag)
        self._turns[loader_id] = Turns(phases=phases, flag=flag)
        return None

    def _stand_ins(self, dataset: Any, loader_id: int) -> list[Swap]:
        """The no-aug stand-ins for ``dataset``'s random transforms, found, checked on a real
        sample and reported as ``no-aug`` does, then taken out again: the real pipeline runs first."""
        walk = derandomize(dataset, self.spec, self.channel, loader_id)
        if walk is None:
            return []
        swaps = [Swap(owner, attribute, real, getattr(owner, attribute)) for owner, attribute, real in walk.undo]
        walk.restore()
        return swaps

    def start_epoch(self, loader: Any, state: LoaderState, original: Any) -> Any:
        switched = getattr(loader, "dataset", None)
        if isinstance(switched, Switched) and switched.view is not None:
            fill_cache(switched.view, loader, self.spec, self.channel, state.loader_id)
        return original(loader)

    def next_batch(self, iterator: Any, epoch: EpochState, produce: Produce) -> Any:
        batch = self.timed(epoch, produce, iterator, synthetic=False)
        turns = self._turns.get(epoch.loader.loader_id)
        if turns is not None:
            self._turn(turns, epoch.loader)
        return batch

    def _turn(self, turns: Turns, loader: LoaderState) -> None:
        """After the warm-up, every ``phase_batches`` batches: the next pipeline's turn."""
        start, length = max(self.spec.warmup, 1), self.spec.phase_batches or DEFAULT_PHASE_BATCHES
        done = loader.batches - start
        if done < 0 or done % length:
            return
        rounds, position = divmod(done // length, len(turns.phases))
        if rounds % 2:  # every other round backwards: a steady drift shifts every pipeline alike
            position = len(turns.phases) - 1 - position
        phase = turns.phases[position]
        turns.flag.value = phase
        self.channel.emit(EventKind.PHASE, loader_id=loader.loader_id, batch=loader.batches, phase=PHASES[phase][0])
