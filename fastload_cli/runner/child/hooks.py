"""Inside the child: the sensor. It patches ``torch.utils.data.DataLoader``, times every batch
where the training loop blocks, counts it once, streams events, and calls the run's mode
(``modes.py``) at its hook points.

The patches are installed when the script first imports ``torch.utils.data.dataloader`` (an
import hook), so fastload never imports torch ahead of the script. What is patched:

* ``DataLoader.__init__``: the mode's ``before_init`` (``workers=N`` overrides) runs before the
  original constructor, its ``after_init`` (``no-aug``) after it; then the loader's settings are
  reported.
* ``DataLoader.__iter__``: the mode's ``start_epoch`` gives the iterator (``synthetic`` replays
  without workers; the breakdown ends the script there); each epoch's iterator is reported with
  its start-up time and worker pids.
* ``_BaseDataLoaderIter.__next__``: the mode's ``next_batch``; the blocking wait for every batch
  is timed and reported.
* A subclass's own ``__iter__`` (one that runs the base iterator in a background thread, say):
  what it returns is wrapped, so batches are timed and counted once, where the loop takes them;
  the base iterator inside it still applies the mode but reports nothing.
* ``_MultiProcessingDataLoaderIter._process_data``: notes which worker made the batch it hands
  over, so each batch is reported with its worker.

Only the stdlib (and torch, through the objects it patches) is used here.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.records import UNCHANGED, ChildSpec, EventKind, Mode
from fastload_cli.runner.child import draws, transforms
from fastload_cli.runner.child.actuators import actuator
from fastload_cli.runner.child.batches import (
    FINGERPRINTED,
    batch_layout,
    batch_size_and_bytes,
    fingerprint,
    safe_len,
    samples_key,
    seed_everything,
)
from fastload_cli.runner.child.channel import Channel
from fastload_cli.runner.child.clock import ThreadClock, delta
from fastload_cli.runner.child.environment import torch_env
from fastload_cli.runner.child.modes import Actuator, EpochState, LoaderState, Produce, stop_if_asked
from fastload_cli.runner.child.sites import call_site, framework_on_stack
from fastload_cli.runner.child.workers import track_workers

DATALOADER_MODULE = "torch.utils.data.dataloader"


@dataclass
class Hooks:
    """The patches and what they share; one instance per child."""

    channel: Channel
    spec: ChildSpec
    clock: ThreadClock = field(default_factory=ThreadClock)
    mode: Actuator = field(init=False)
    _loader_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _iterator_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _env_sent: bool = False

    def __post_init__(self) -> None:
        self.mode = actuator(self.spec, self.channel, self.timed)

    # -- installation ---------------------------------------------------------------------

    def install(self, module: Any) -> None:
        """Patch the freshly imported ``torch.utils.data.dataloader`` module."""
        loader_cls, iter_cls = module.DataLoader, module._BaseDataLoaderIter
        loader_cls.__init__ = self._wrap_init(loader_cls.__init__)
        loader_cls.__iter__ = self._wrap_iter(loader_cls.__iter__)
        iter_cls.__next__ = self._wrap_next(iter_cls.__next__)
        if self.compares_batches:
            draws.install(iter_cls)
        workers_cls = getattr(module, "_MultiProcessingDataLoaderIter", None)
        if workers_cls is not None and hasattr(workers_cls, "_process_data"):
            workers_cls._process_data = _noting_worker(workers_cls._process_data)

    # -- DataLoader.__init__ ---------------------------------------------------------------

    def _wrap_init(self, original: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(original)
        hooks = self

        def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
            if getattr(loader, "_fastload_state", None) is not None:  # a subclass calling super()
                original(loader, *args, **kwargs)
                return
            try:
                bound = signature.bind(loader, *args, **kwargs)
            except TypeError:  # let DataLoader raise its own error for bad arguments
                original(loader, *args, **kwargs)
                return
            loader_id = next(hooks._loader_ids)
            if loader_id == 1 and hooks.compares_batches:
                seed_everything()
            original_workers = hooks.mode.before_init(bound.arguments, loader_id)
            original(*bound.args, **bound.kwargs)
            hooks._after_init(loader, loader_id, original_workers, sys._getframe(1))

        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        return __init__

    def _after_init(self, loader: Any, loader_id: int, original_workers: int | None, caller: Any) -> None:
        keep = frozenset(self.spec.keep_transforms)
        drop = frozenset(self.spec.drop_transforms)
        try:
            found = transforms.find_augmentations(loader.dataset, keep, drop)
            self.mode.after_init(loader, loader_id)
        except Exception as exc:  # fastload's own walk must never break the script's loader
            found = []
            problem = f"transforms not inspected: {type(exc).__name__}: {exc}"
            self.channel.substitution(loader_id, "dataset", problem, UNCHANGED)
        loader._fastload_state = LoaderState(
            loader_id=loader_id, collated=bool(loader._auto_collation), iterable=loader._dataset_kind == 1
        )
        self._wrap_override(type(loader))
        context = loader.multiprocessing_context
        self.channel.emit(
            EventKind.LOADER,
            loader_id=loader_id,
            t_ns=time.monotonic_ns(),
            batch_size=loader.batch_size,
            num_workers=loader.num_workers,
            pin_memory=bool(loader.pin_memory),
            persistent_workers=bool(loader.persistent_workers),
            prefetch_factor=loader.prefetch_factor,
            dataset_type=type(loader.dataset).__qualname__,
            dataset_len=safe_len(loader.dataset),
            batches_per_epoch=safe_len(loader) if loader._dataset_kind == 0 else None,
            iterable_dataset=loader._dataset_kind == 1,
            multiprocessing_context=context.get_start_method() if context is not None else None,
            augmentations=[f.original for f in found],
            original_num_workers=original_workers,
            framework=framework_on_stack(caller),
            **_site(caller, loader),
        )

    # -- DataLoader.__iter__ ---------------------------------------------------------------

    def _wrap_iter(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        hooks = self

        def __iter__(loader: Any) -> Any:
            stop_if_asked()
            started = time.monotonic_ns()
            state = getattr(loader, "_fastload_state", None)
            if state is None:
                return original(loader)  # built before the patches: not measured
            iterator = hooks.mode.start_epoch(loader, state, original)
            ready = time.monotonic_ns()
            track_workers(iterator)
            if not hasattr(iterator, "_num_yielded"):
                return iterator  # not a DataLoader iterator we can time
            reused = getattr(iterator, "_fastload_epoch", None) is not None
            epoch = EpochState(
                loader=state, iterator_id=next(hooks._iterator_ids), inner=state.outer, ordinal=state.epochs
            )
            state.epochs += not state.outer
            iterator._fastload_epoch = epoch
            hooks.channel.emit(
                EventKind.ITERATOR,
                loader_id=state.loader_id,
                iterator_id=epoch.iterator_id,
                started_ns=started,
                ready_ns=ready,
                worker_pids=[w.pid for w in getattr(iterator, "_workers", ())],
                reused=reused,
            )
            return iterator

        __iter__.__wrapped__ = original  # type: ignore[attr-defined]
        return __iter__

    # -- a subclass's own __iter__ ---------------------------------------------------------

    def _wrap_override(self, cls: type) -> None:
        """Patch the ``__iter__`` a DataLoader subclass defines, once per defining class, so its
        batches are timed where the training loop receives them."""
        owner = next((c for c in cls.__mro__ if "__iter__" in c.__dict__), None)
        if owner is None or (owner.__name__ == "DataLoader" and owner.__module__.startswith("torch.")):
            return
        original = owner.__dict__["__iter__"]
        if getattr(original, "_fastload_outer", False):
            return
        hooks = self

        def __iter__(loader: Any) -> Any:
            stop_if_asked()
            state = getattr(loader, "_fastload_state", None)
            if state is None or getattr(_outer_calls, "active", False):
                return original(loader)  # not measured, or an override calling another one
            state.outer = True
            started = time.monotonic_ns()
            _outer_calls.active = True
            try:
                inner = iter(original(loader))
            finally:
                _outer_calls.active = False
            epoch = EpochState(loader=state, iterator_id=next(hooks._iterator_ids), ordinal=state.epochs)
            state.epochs += 1
            hooks.channel.emit(
                EventKind.ITERATOR,
                loader_id=state.loader_id,
                iterator_id=epoch.iterator_id,
                started_ns=started,
                ready_ns=time.monotonic_ns(),
                worker_pids=[],
                reused=False,
            )
            return OuterIterator(inner, epoch, hooks)

        __iter__.__wrapped__ = original  # type: ignore[attr-defined]
        __iter__._fastload_outer = True  # type: ignore[attr-defined]
        try:
            owner.__iter__ = __iter__  # type: ignore[attr-defined]
        except (AttributeError, TypeError):  # a class that refuses patching is measured inside
            return

    # -- _BaseDataLoaderIter.__next__ ------------------------------------------------------

    def _wrap_next(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        hooks = self

        def __next__(iterator: Any) -> Any:
            stop_if_asked()
            epoch = getattr(iterator, "_fastload_epoch", None)
            if epoch is None:
                return original(iterator)
            return hooks.mode.next_batch(iterator, epoch, original)

        __next__.__wrapped__ = original  # type: ignore[attr-defined]
        return __next__

    def timed(self, epoch: EpochState, produce: Produce, iterator: Any, *, synthetic: bool) -> Any:
        """``produce(iterator)``, timed where the loop blocks, with the waiting thread's CPU and
        run-queue time; the batch is reported and returned (by the outer iterator only, when an
        overriding ``__iter__`` wraps this one)."""
        if epoch.inner:
            return produce(iterator)
        cpu0, runq0 = self.clock.read()
        start = time.monotonic_ns()
        since = self.clock.since_last(cpu0, runq0)
        try:
            batch = produce(iterator)
            worker = getattr(iterator, "_fastload_worker", None)
        except StopIteration:  # the epoch's end: its last step and the workers' shutdown are behind
            self.channel.emit(
                EventKind.EPOCH_END,
                loader_id=epoch.loader.loader_id,
                iterator_id=epoch.iterator_id,
                ended_ns=time.monotonic_ns(),
            )
            raise
        end = time.monotonic_ns()
        cpu1, runq1 = self.clock.read()
        self.clock.mark(cpu1, runq1)
        drawn = draws.next_key(iterator) if self.compares_batches else None
        self._delivered(
            epoch, batch, (start, end), (cpu1 - cpu0, delta(runq0, runq1)), since, synthetic, (worker, drawn)
        )
        return batch

    def _delivered(
        self,
        epoch: EpochState,
        batch: Any,
        wait: tuple[int, int],
        waiting: tuple[int, int | None],
        stepping: tuple[int | None, int | None],
        synthetic: bool,
        made: tuple[int | None, str | None] = (None, None),  # the worker that made it, its draw's digest
    ) -> None:
        loader = epoch.loader
        try:
            samples, nbytes = batch_size_and_bytes(batch, loader.collated)
        except Exception:  # an exotic batch must not break the training loop; count it, size unknown
            samples, nbytes = 1, 0
        self.channel.emit(
            EventKind.BATCH,
            **self._fingerprint(epoch, batch),
            loader_id=loader.loader_id,
            iterator_id=epoch.iterator_id,
            index=epoch.index,
            wait_start_ns=wait[0],
            wait_end_ns=wait[1],
            samples=samples,
            nbytes=nbytes,
            thread_cpu_ns=waiting[0],
            thread_runq_ns=waiting[1],
            step_cpu_ns=stepping[0],
            step_runq_ns=stepping[1],
            synthetic=synthetic,
            worker=made[0],
            indices_key=made[1],
            samples_key=self._samples_key(loader, batch, synthetic),
        )
        if loader.batches == 0:
            self._report_layout(loader.loader_id, batch)
        if not self._env_sent:
            self._env_sent = True
            self.channel.emit(EventKind.ENV, **torch_env(final=False))
        epoch.index += 1
        loader.batches += 1

    @property
    def compares_batches(self) -> bool:
        """The real run and the runs with fixes, which claim to train on the same batches."""
        return self.spec.mode.mode in (Mode.REAL, Mode.REAL_SYNTHETIC, Mode.FIX)

    def _fingerprint(self, epoch: EpochState, batch: Any) -> dict[str, str | None]:
        """The make-up and values of a loader's first batches, where runs' batches are compared,
        taken inside the warm-up, so it never lands in a measured step; and of its second epoch's
        first batches, a sample of their values, a few microseconds a batch (a cache that keeps
        the first epoch's samples gives itself away there)."""
        first = epoch.loader.batches < min(FINGERPRINTED, self.spec.warmup)
        if not self.compares_batches or not (first or (epoch.ordinal == 1 and epoch.index < FINGERPRINTED)):
            return {}
        try:
            layout, values = fingerprint(batch) if first else (fingerprint(batch, values=False)[0], samples_key(batch))
        except Exception:  # describing the batch is a nicety, never worth breaking the script
            return {}
        return {"layout_key": layout, "values_key": values}

    def _samples_key(self, loader: LoaderState, batch: Any, synthetic: bool) -> str | None:
        """An IterableDataset's batch in the real run: the digest that finds workers repeating samples."""
        if not loader.iterable or synthetic or not self.compares_batches:
            return None
        try:
            return samples_key(batch)
        except Exception:  # a nicety, never worth breaking the script
            return None

    def _report_layout(self, loader_id: int, batch: Any) -> None:
        try:
            leaves = batch_layout(batch)
        except Exception:  # describing the batch is a nicety, never worth breaking the script
            leaves = []
        self.channel.emit(EventKind.LAYOUT, loader_id=loader_id, python_type=type(batch).__qualname__, leaves=leaves)


def _noting_worker(original: Callable[..., Any]) -> Callable[..., Any]:
    """``_MultiProcessingDataLoaderIter._process_data``, noting on the iterator which worker made
    the batch it hands over (read where the batch is timed)."""

    def _process_data(iterator: Any, data: Any, worker_idx: int, *args: Any, **kwargs: Any) -> Any:
        iterator._fastload_worker = worker_idx
        return original(iterator, data, worker_idx, *args, **kwargs)

    _process_data.__wrapped__ = original  # type: ignore[attr-defined]
    return _process_data


_outer_calls = threading.local()  # inside an overriding __iter__ being timed, per thread


class OuterIterator:
    """What an overriding ``DataLoader.__iter__`` returned, timed where the loop takes batches."""

    def __init__(self, inner: Iterator[Any], epoch: EpochState, hooks: Hooks) -> None:
        self._inner = inner
        self._epoch = epoch
        self._hooks = hooks

    def __iter__(self) -> OuterIterator:
        return self

    def __next__(self) -> Any:
        stop_if_asked()
        replay = self._hooks.mode.replaying(self._epoch.loader)
        return self._hooks.timed(self._epoch, lambda it: next(it), self._inner, synthetic=replay)

    def __getattr__(self, name: str) -> Any:  # close(), send() and whatever else the script uses
        return getattr(self._inner, name)


# --------------------------------------------------------------------------------------------
# The import hook
# --------------------------------------------------------------------------------------------


class PatchOnImport(importlib.abc.MetaPathFinder):
    """Installs the hooks right after ``torch.utils.data.dataloader`` is first executed."""

    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != DATALOADER_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        original_exec = spec.loader.exec_module
        hooks = self._hooks

        def exec_module(module: Any) -> None:
            original_exec(module)
            hooks.install(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        sys.meta_path.remove(self)
        return spec


def install(channel: Channel, spec: ChildSpec) -> Hooks:
    hooks = Hooks(channel=channel, spec=spec)
    module = sys.modules.get(DATALOADER_MODULE)
    if module is not None:
        hooks.install(module)
    else:
        sys.meta_path.insert(0, PatchOnImport(hooks))
    return hooks


def _site(caller: Any, loader: Any) -> dict[str, Any]:
    """Where the script built ``loader``: the file and line of the call, and the class it called."""
    found = call_site(caller, loader)
    if found is None:
        return {}
    return {"call_file": found[0], "call_line": found[1], "call_class": type(loader).__name__}
