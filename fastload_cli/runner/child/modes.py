"""Inside the child: what each mode changes, one actuator per mode, found through ``ACTUATORS``
(``actuators.py`` adds the cached mode and the fixes, from ``fixing.py``).

The sensor (``hooks.py``) calls the run's actuator at four points of a DataLoader's life:

* ``before_init``: the loader's constructor arguments, before the original constructor runs;
* ``after_init``: the built loader (its dataset and transforms in place);
* ``start_epoch``: ``iter(loader)``, which returns the iterator the loop will use;
* ``next_batch``: the loop asks for a batch; the sensor's ``timed`` measures and reports it.

The base ``Actuator`` changes nothing (the ``real`` mode). Adding a mode is one ``Mode`` member,
one actuator here (or in ``fixing.py``), one line in ``ACTUATORS``, and its analysis.

Only the stdlib (and torch, through the objects it patches) is used here.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastload_cli.records import SYNTHETIC_LOCATION, UNCHANGED, ChildSpec, EventKind, Mode, setting_location
from fastload_cli.records.protocol import RIDE_BUDGET_S, STOP_SIGNAL
from fastload_cli.runner.child import breakdown, samples, transforms
from fastload_cli.runner.child.batches import copy_batch, safe_len, to_cuda
from fastload_cli.runner.child.channel import Channel


class MeasurementDone(BaseException):
    """Raised in the script's main thread when a measurement pass has what it came for."""


class StopRun(BaseException):
    """Raised in the script's main thread when fastload has measured enough: by the stop signal's
    handler, and again at the script's next batch or epoch (``stop_if_asked``) where the first was
    swallowed, as a signal that lands in a ``__del__`` (a DataLoader iterator's, at an epoch's
    end) is: Python ignores every exception raised there."""


class Stop:
    """Whether fastload asked the run to stop, whether a thread other than the main one has
    measured all the run was for (the main thread then ends it at the next stop signal), and
    whether the script has already ended."""

    asked = False
    measured = False
    finished = False


class NextAsked:
    """The parent found what is in force measured (``NEXT_SIGNAL``): an in-process run's next
    setting, or a real+synthetic run's replays, take over at the training loader's next batch."""

    asked = False


def on_next_signal(signum: int, frame: object) -> None:
    NextAsked.asked = True


def stop_if_asked() -> None:
    """Raise ``StopRun`` in the main thread of a run fastload asked to stop."""
    if Stop.asked and not Stop.finished and threading.current_thread() is threading.main_thread():
        raise StopRun


@dataclass(slots=True)
class LoaderState:
    """What the sensor keeps per DataLoader."""

    loader_id: int
    collated: bool
    iterable: bool = False  # an IterableDataset: its batches' samples are digested (workers may repeat them)
    batches: int = 0  # delivered so far, all epochs
    epochs: int = 0  # iterators started so far
    # The loader's class overrides __iter__ (a background-thread prefetcher, say): batches are
    # timed where its iterator hands them to the loop, and the base iterator inside stays silent.
    outer: bool = False


@dataclass(slots=True)
class EpochState:
    """What the sensor keeps per iterator (one epoch of one loader)."""

    loader: LoaderState
    iterator_id: int
    index: int = 0
    inner: bool = False  # a base iterator inside an overriding __iter__: not timed, not reported
    ordinal: int = 0  # the loader's epochs before this one


Produce = Callable[[Any], Any]


class Timed(Protocol):
    """The sensor's measurement of one batch: ``produce(iterator)`` timed where the loop blocks."""

    def __call__(self, epoch: EpochState, produce: Produce, iterator: Any, *, synthetic: bool) -> Any: ...


@dataclass
class Actuator:
    """The ``real`` mode: nothing changes. Every other mode overrides some of these hook points."""

    spec: ChildSpec
    channel: Channel
    timed: Timed  # the sensor's: produce a batch, timed where the loop blocks, and report it

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        """Change the constructor's ``arguments`` in place; return the script's own num_workers
        when this changed it."""
        return None

    def after_init(self, loader: Any, loader_id: int) -> None:
        """The loader is built, with its dataset in place."""

    def start_epoch(self, loader: Any, state: LoaderState, original: Callable[[Any], Any]) -> Any:
        """``iter(loader)``: the iterator the loop will take batches from."""
        return original(loader)

    def next_batch(self, iterator: Any, epoch: EpochState, produce: Produce) -> Any:
        """The loop asks for a batch."""
        return self.timed(epoch, produce, iterator, synthetic=False)

    def replaying(self, loader: LoaderState) -> bool:
        """The loader's batches are replays, not loaded."""
        return False


@dataclass
class WorkersOverride(Actuator):
    """``workers=N``: num_workers (and the settings that need workers when N is 0), and
    prefetch_factor / pin_memory when the run asks for them."""

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        mode = self.spec.mode
        if mode.workers is None:
            return None
        original = int(arguments.get("num_workers", 0))
        self.set_workers(arguments, loader_id, mode.workers)
        if mode.workers > 0 and mode.prefetch_factor is not None:
            self._set(arguments, loader_id, "prefetch_factor", mode.prefetch_factor)
        if mode.pin_memory is not None:
            self._set(arguments, loader_id, "pin_memory", mode.pin_memory)
        return original

    def set_workers(self, arguments: dict[str, Any], loader_id: int, workers: int) -> None:
        """num_workers, and with none the settings that need workers set back to neutral."""
        original = int(arguments.get("num_workers", 0))
        arguments["num_workers"] = workers
        if workers == 0:
            for name, neutral in (("prefetch_factor", None), ("persistent_workers", False), ("timeout", 0)):
                if arguments.get(name, neutral) != neutral:
                    self._set(arguments, loader_id, name, neutral)
        self._report(loader_id, "num_workers", workers, original)

    def _set(self, arguments: dict[str, Any], loader_id: int, name: str, value: object) -> None:
        old = arguments.get(name)
        arguments[name] = value
        self._report(loader_id, name, value, old)

    def _report(self, loader_id: int, name: str, value: object, old: object = None) -> None:
        original = f"{name}={old!r}" if old is not None else name
        self.channel.substitution(loader_id, setting_location(name), original, f"{name}={value!r}")


@dataclass
class NoAugmentation(Actuator):
    """``no-aug``: random transforms in the dataset's pipelines replaced by deterministic stand-ins."""

    def after_init(self, loader: Any, loader_id: int) -> None:
        self.derandomize(loader.dataset, loader_id)

    def derandomize(self, dataset: Any, loader_id: int) -> None:
        """Replace the random transforms of ``dataset`` in place (undone when a real sample shows
        they change its make-up), and say what changed."""
        derandomize(dataset, self.spec, self.channel, loader_id)


def derandomize(dataset: Any, spec: ChildSpec, channel: Channel, loader_id: int) -> transforms.Walk | None:
    """``no-aug``'s replacement of the random transforms of ``dataset``, in place: checked on a
    real sample (and undone when it changes the sample's make-up), each one reported. The walk
    holds what stays replaced (``undo``); None when nothing random was found."""
    keep, drop = frozenset(spec.keep_transforms), frozenset(spec.drop_transforms)
    if not transforms.find_augmentations(dataset, keep, drop):
        return None
    before = samples.probe(dataset)  # the original pipeline's first sample
    walk = transforms.derandomize(dataset, keep, drop)
    undone = samples.check_on_sample(dataset, walk, before)
    for item in walk.found:
        channel.substitution(loader_id, item.location, item.original, item.replacement, item.guessed, undone or "")
    for problem in walk.problems:
        channel.substitution(loader_id, "dataset", problem, UNCHANGED)
    return walk


@dataclass
class SyntheticReplay(Actuator):
    """``synthetic``: from the warm-up's last batch on, every batch is a fresh copy of one cached
    real batch; the workers are shut down and later epochs start none.

    A script that trains on the CPU gets its tensors cloned every step, so that a step that
    changes its inputs in place never changes the next replay. One that trains on CUDA copies
    them to the GPU itself, and cloning a large batch on the host would cost the step as much
    as that copy: it gets the cached tensors themselves, in new containers."""

    _cached: dict[int, Any] = field(default_factory=dict)  # loader id -> the batch replayed
    _failed: set[int] = field(default_factory=set)  # loaders whose batch could not be copied
    _clone: bool = True  # each replay clones the cached tensors

    def replaying(self, loader: LoaderState) -> bool:
        return loader.loader_id in self._cached

    def start_epoch(self, loader: Any, state: LoaderState, original: Callable[[Any], Any]) -> Any:
        if self.replaying(state):  # no workers, no loading
            return ReplayIterator(safe_len(loader), self._replay)
        return original(loader)

    def next_batch(self, iterator: Any, epoch: EpochState, produce: Produce) -> Any:
        loader = epoch.loader
        if self.replaying(loader):
            return self._replay(iterator, epoch)
        batch = self.timed(epoch, produce, iterator, synthetic=False)
        if loader.batches >= self.switch_at and loader.loader_id not in self._failed:
            self._cache(iterator, loader, batch)
        return batch

    @property
    def switch_at(self) -> int:
        """The batches delivered before the replays start: the warm-up's but its last, so that the
        step in which the workers are shut down (the first replay's) is the warm-up's last."""
        return max(self.spec.warmup - 1, 1)

    def _cache(self, iterator: Any, loader: LoaderState, batch: Any) -> None:
        """Keep a copy of ``batch`` to replay; a batch that cannot be copied leaves this loader
        real (and says why) rather than break the script."""
        try:
            self._cached[loader.loader_id] = self.kept(batch)
            self._clone = self.clones()
        except Exception as exc:
            self._failed.add(loader.loader_id)
            why = f"{type(batch).__qualname__} batch cannot be copied ({type(exc).__name__}: {exc})"
            self.channel.substitution(loader.loader_id, SYNTHETIC_LOCATION, why, "not replayed: this loader stays real")
            return
        stop_workers(iterator)
        self.switched(loader)

    def switched(self, loader: LoaderState) -> None:
        """``loader``'s replays begin at its next batch; its workers are shut down."""

    def kept(self, batch: Any) -> Any:
        """The copy of ``batch`` that is replayed."""
        return copy_batch(batch)

    def clones(self) -> bool:
        """Each replay clones the cached tensors: not where the script trains on CUDA."""
        return not cuda_started()

    def _replay(self, iterator: Any, epoch: EpochState) -> Any:
        """A fresh copy of the cached batch, with the epoch's length kept."""
        length = safe_len(iterator)
        if length is not None and iterator._num_yielded >= length:
            raise StopIteration
        iterator._num_yielded += 1
        cached = self._cached[epoch.loader.loader_id]
        return self.timed(epoch, lambda _: copy_batch(cached, self._clone), iterator, synthetic=True)


@dataclass
class RealThenReplay(SyntheticReplay):
    """``real+synthetic``: the script as it is until the parent says the real window has what it
    needs (``NEXT_SIGNAL``); then the synthetic replay, as ``synthetic`` makes it, from the batch
    after: the next batch delivered is cached, the workers are shut down, and every batch after
    it, later epochs included, is a copy of it.

    Where the run asks for the breakdown (``ChildSpec.breakdown_items``), each loading step of the
    switched loader is timed at the switch, in the main thread, before the first replay is asked
    for: inside the step that shuts the workers down, which neither window counts, at most
    ``RIDE_BUDGET_S`` long; the breakdown's own run of the script is then not needed. Not where
    the loader's workers were busy less than ``ChildSpec.breakdown_busy`` of their lives: loading
    that waits on storage or latency asks for no breakdown, and one that does gets its own run."""

    # Loader id -> the loader, for the breakdown; None once the first loader switched: once a run.
    _loaders: dict[int, weakref.ref[Any]] | None = field(default_factory=dict)

    @property
    def switch_at(self) -> int:
        return 1 if NextAsked.asked else sys.maxsize

    def start_epoch(self, loader: Any, state: LoaderState, original: Callable[[Any], Any]) -> Any:
        if self.spec.breakdown_items and self._loaders is not None:
            self._loaders.setdefault(state.loader_id, weakref.ref(loader))
        return super().start_epoch(loader, state, original)

    def _cache(self, iterator: Any, loader: LoaderState, batch: Any) -> None:
        if self._loaders and self.spec.breakdown_busy:  # a breakdown to time: read before the workers are shut down
            busy = breakdown.workers_busy(iterator)
            if busy is not None and busy < self.spec.breakdown_busy:
                self._loaders = None
        super()._cache(iterator, loader, batch)

    def switched(self, loader: LoaderState) -> None:
        if self._loaders is None:
            return
        ref, self._loaders = self._loaders.get(loader.loader_id), None
        found = ref() if ref is not None else None
        if found is not None and threading.current_thread() is threading.main_thread():
            time_loading(self.channel, found, loader.loader_id, self.spec.breakdown_items, RIDE_BUDGET_S)


@dataclass
class DeviceReplay(SyntheticReplay):
    """``synthetic-device``: the synthetic replay with the cached batch on the GPU the script
    trains on, each replay a copy made there, so that the script's ``.to(device)`` is a no-op and
    nothing crosses to the GPU. A script that has not started CUDA by then keeps its loader real."""

    def kept(self, batch: Any) -> Any:
        if not cuda_started():
            raise RuntimeError("the script has not started CUDA, so there is no GPU to keep the batch on")
        return to_cuda(batch)

    def clones(self) -> bool:
        return True  # a copy on the GPU costs next to nothing


def cuda_started() -> bool:
    """The script has started CUDA (it trains there, as a rule)."""
    torch = sys.modules.get("torch")
    return torch is not None and bool(torch.cuda.is_initialized())


@dataclass
class BreakdownRun(Actuator):
    """``breakdown``: at the first ``iter(loader)``, before any worker starts, time each loading
    step on a sample of items in-process, report it, and end the script."""

    def start_epoch(self, loader: Any, state: LoaderState, original: Callable[[Any], Any]) -> Any:
        time_loading(self.channel, loader, state.loader_id, self.spec.breakdown_items)
        if threading.current_thread() is not threading.main_thread():
            # A loader iterated in a background thread (a prefetcher): the main thread waits on a
            # queue this thread will never fill, and a stop fastload sent may have been swallowed
            # already (in a __del__). The main thread ends the run at a stop signal sent to it now.
            Stop.measured = True
            signal.pthread_kill(threading.main_thread().ident or 0, STOP_SIGNAL)
        raise MeasurementDone


def time_loading(channel: Channel, loader: Any, loader_id: int, items: int, budget_s: float | None = None) -> None:
    """Time each loading step of ``loader`` on ``items`` samples (``breakdown.measure``, within
    ``budget_s``) and report it, with the time it took; a dataset that resists being timed, why."""
    started = time.monotonic_ns()
    try:
        fields = breakdown.measure(loader, items, sys.modules["torch"], budget_s)
    except Exception as exc:  # the dataset resisted being timed: say so
        fields = {"unavailable": f"{type(exc).__name__}: {exc}"}
    channel.emit(EventKind.BREAKDOWN, loader_id=loader_id, spent_ns=time.monotonic_ns() - started, **fields)


ACTUATORS: dict[Mode, type[Actuator]] = {
    Mode.REAL: Actuator,
    Mode.WORKERS: WorkersOverride,
    Mode.NO_AUG: NoAugmentation,
    Mode.SYNTHETIC: SyntheticReplay,
    Mode.SYNTHETIC_DEVICE: DeviceReplay,
    Mode.REAL_SYNTHETIC: RealThenReplay,
    Mode.BREAKDOWN: BreakdownRun,
}  # with the cached mode and the fixes: ``actuators.ACTUATORS``


class ReplayIterator:
    """Synthetic mode, once a batch is cached: an epoch with no loading at all.

    Stands in for a DataLoader iterator (``_num_yielded``, ``len``); the sensor times what its
    ``__next__`` replays.
    """

    def __init__(self, length: int | None, replay: Callable[[Any, EpochState], Any]) -> None:
        self._num_yielded = 0
        self._length = length
        self._replay = replay
        self._fastload_epoch: EpochState | None = None  # set by the sensor

    def __iter__(self) -> ReplayIterator:
        return self

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this loader has no length")
        return self._length

    def __next__(self) -> Any:
        assert self._fastload_epoch is not None
        return self._replay(self, self._fastload_epoch)


def stop_workers(iterator: Any) -> None:
    """Shut down a multiprocessing iterator's workers: in synthetic mode they have no more work,
    and leaving them prefetching would take CPU from the step being measured (an in-process run: the
    batches they had in hand are given up)."""
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()
