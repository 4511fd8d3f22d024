"""Inside the child: patch ``torch.utils.data.DataLoader``, apply the mode, stream events.

The patches are installed when the script first imports ``torch.utils.data.dataloader`` (an
import hook), so fastload never imports torch ahead of the script. What is patched:

* ``DataLoader.__init__``: applies the mode's overrides (``workers=N``, ``no-aug``) before the
  original constructor runs, then reports the loader's settings.
* ``DataLoader.__iter__``: reports each epoch's iterator, its start-up time and worker pids.
* ``_BaseDataLoaderIter.__next__``: times the blocking wait for every batch (the point where the
  training loop blocks), and in ``synthetic`` mode replays copies of one cached batch.
* A subclass's own ``__iter__`` (one that runs the base iterator in a background thread, say):
  what it returns is wrapped, so batches are timed and counted once, where the loop takes them;
  the base iterator inside it still applies the mode but reports nothing.

Only the stdlib (and torch, through the objects it patches) is used here.
"""

from __future__ import annotations

import copy
import importlib.abc
import importlib.machinery
import inspect
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.records import EventKind, Mode
from fastload_cli.runner import breakdown, transforms

DATALOADER_MODULE = "torch.utils.data.dataloader"
SYNTHETIC_LOCATION = "synthetic replay"  # substitution events about the synthetic mode itself
MAX_LEAVES = 64  # tensors walked per batch (sizes and bytes); deeper structures are truncated
MAX_DEPTH = 6
MAX_ITEMS = 256  # items looked at per container: a list of a million file names is not walked


# --------------------------------------------------------------------------------------------
# The event channel
# --------------------------------------------------------------------------------------------


class Channel:
    """Writes one JSON line per event to the parent's pipe; silent in forked workers."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._broken = False

    def emit(self, kind: EventKind, **fields: Any) -> None:
        if self._broken or os.getpid() != self._pid:
            return
        fields["kind"] = kind.value
        data = (json.dumps(fields, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:  # the parent is gone: keep the script running, stop reporting
                self._broken = True


@dataclass(frozen=True, slots=True)
class ChildOptions:
    """The child's instructions, passed as JSON on its command line."""

    mode: str = Mode.REAL.value
    workers: int | None = None
    warmup: int = 5
    keep_transforms: tuple[str, ...] = ()
    drop_transforms: tuple[str, ...] = ()
    prefetch_factor: int | None = None
    pin_memory: bool | None = None
    breakdown: int = 0  # >0: time this many samples of the first loader iterated, step by step, then end

    def to_json(self) -> str:
        return json.dumps(
            {
                "mode": self.mode,
                "breakdown": self.breakdown,
                "workers": self.workers,
                "prefetch_factor": self.prefetch_factor,
                "pin_memory": self.pin_memory,
                "warmup": self.warmup,
                "keep_transforms": list(self.keep_transforms),
                "drop_transforms": list(self.drop_transforms),
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ChildOptions:
        raw = json.loads(text)
        return cls(
            mode=raw["mode"],
            workers=raw["workers"],
            prefetch_factor=raw.get("prefetch_factor"),
            pin_memory=raw.get("pin_memory"),
            breakdown=raw.get("breakdown", 0),
            warmup=raw["warmup"],
            keep_transforms=tuple(raw["keep_transforms"]),
            drop_transforms=tuple(raw["drop_transforms"]),
        )


# --------------------------------------------------------------------------------------------
# Thread CPU clock: on-CPU and run-queue time of the calling thread
# --------------------------------------------------------------------------------------------


class ThreadClock:
    """On-CPU and run-queue time of the calling thread.

    On-CPU time comes from ``time.thread_time_ns`` (exact even for the running thread); the time
    spent runnable but waiting for a CPU comes from /proc/thread-self/schedstat, kept open per
    thread. Where schedstat is not readable the run-queue time is ``None``.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self.schedstat = self._runq() is not None

    def _fd(self) -> int | None:
        fd = getattr(self._local, "fd", -1)
        if fd == -1:
            try:
                fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                fd = None
            self._local.fd = fd
        return fd

    def _runq(self) -> int | None:
        fd = self._fd()
        if fd is None:
            return None
        try:
            return int(os.pread(fd, 96, 0).split()[1])
        except (OSError, ValueError, IndexError):
            return None

    def read(self) -> tuple[int, int | None]:
        return time.thread_time_ns(), self._runq() if self.schedstat else None


# --------------------------------------------------------------------------------------------
# Batches: size, bytes, layout, copies
# --------------------------------------------------------------------------------------------


def _is_tensor(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def tensor_leaves(batch: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(path, tensor) for the tensors in a batch: tensors, sequences, mappings, objects."""
    if _is_tensor(batch):
        yield path or "batch", batch
    elif depth >= MAX_DEPTH or isinstance(batch, (str, bytes)):
        return
    elif isinstance(batch, Mapping):
        for key, value in itertools.islice(batch.items(), MAX_ITEMS):
            yield from tensor_leaves(value, f"{path}[{key!r}]", depth + 1)
    elif isinstance(batch, Sequence):
        for i, value in enumerate(itertools.islice(batch, MAX_ITEMS)):
            yield from tensor_leaves(value, f"{path}[{i}]", depth + 1)
    elif hasattr(batch, "__dict__"):
        for key, value in itertools.islice(vars(batch).items(), MAX_ITEMS):
            yield from tensor_leaves(value, f"{path}.{key}", depth + 1)


def batch_size_and_bytes(batch: Any, collated: bool) -> tuple[int, int]:
    """Samples in the batch (first tensor's leading dimension when collated) and its bytes."""
    samples, nbytes = (0 if collated else 1), 0
    for _, tensor in itertools.islice(tensor_leaves(batch), MAX_LEAVES):
        if samples == 0 and tensor.dim() > 0:
            samples = int(tensor.shape[0])
        nbytes += tensor.element_size() * tensor.nelement()
    return max(samples, 1), nbytes


def _is_pinned(tensor: Any) -> bool | None:
    torch = sys.modules["torch"]
    if tensor.device.type != "cpu":
        return False
    if not torch.cuda.is_initialized():  # pinning initialises CUDA: nothing can be pinned yet
        return False
    try:
        return bool(tensor.is_pinned())
    except RuntimeError:
        return None


def batch_layout(batch: Any) -> list[dict[str, Any]]:
    return [
        {
            "path": path,
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "nbytes": t.element_size() * t.nelement(),
            "pinned": _is_pinned(t),
            "device": str(t.device),
        }
        for path, t in itertools.islice(tensor_leaves(batch), MAX_LEAVES)
    ]


def copy_batch(batch: Any) -> Any:
    """A fresh copy of a batch; tensors are cloned, pinned tensors stay pinned."""
    if _is_tensor(batch):
        if _is_pinned(batch):
            return sys.modules["torch"].empty_like(batch, pin_memory=True).copy_(batch)
        return batch.clone()
    if isinstance(batch, (str, bytes, int, float, bool)) or batch is None:
        return batch
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(copy_batch(v) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(copy_batch(v) for v in batch)
    if type(batch) is dict:
        return {k: copy_batch(v) for k, v in batch.items()}
    return copy.deepcopy(batch)


# --------------------------------------------------------------------------------------------
# Per-loader and per-epoch state
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class LoaderState:
    loader_id: int
    collated: bool
    replay: Callable[[Any, EpochState], Any]  # synthetic mode: serve the cached batch
    batches: int = 0  # delivered so far, all epochs
    cached: Any = None  # synthetic mode: the batch replayed after warm-up
    cache_ready: bool = False
    cache_failed: bool = False
    # The loader's class overrides __iter__ (a background-thread prefetcher, say): batches are
    # timed where its iterator hands them to the loop, and the base iterator inside stays silent.
    outer: bool = False


@dataclass(slots=True)
class EpochState:
    loader: LoaderState
    iterator_id: int
    index: int = 0
    inner: bool = False  # a base iterator inside an overriding __iter__: not timed, not reported


@dataclass
class Hooks:
    """The patches and what they share; one instance per child."""

    channel: Channel
    options: ChildOptions
    clock: ThreadClock = field(default_factory=ThreadClock)
    _loader_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _iterator_ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _env_sent: bool = False

    # -- installation ---------------------------------------------------------------------

    def install(self, module: Any) -> None:
        """Patch the freshly imported ``torch.utils.data.dataloader`` module."""
        loader_cls, iter_cls = module.DataLoader, module._BaseDataLoaderIter
        loader_cls.__init__ = self._wrap_init(loader_cls.__init__)
        loader_cls.__iter__ = self._wrap_iter(loader_cls.__iter__)
        iter_cls.__next__ = self._wrap_next(iter_cls.__next__)

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
            original_workers = hooks._override_workers(bound.arguments, loader_id)
            original(*bound.args, **bound.kwargs)
            hooks._after_init(loader, loader_id, original_workers)

        __init__.__wrapped__ = original  # type: ignore[attr-defined]
        return __init__

    def _override_workers(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        """``workers=N``: set num_workers (and drop settings that need workers when N is 0), and
        prefetch_factor / pin_memory when the run asks for them."""
        options = self.options
        if options.mode != Mode.WORKERS.value or options.workers is None:
            return None
        original = int(arguments.get("num_workers", 0))
        arguments["num_workers"] = options.workers
        if options.workers == 0:
            for name, neutral in (("prefetch_factor", None), ("persistent_workers", False), ("timeout", 0)):
                if arguments.get(name, neutral) != neutral:
                    self._set(arguments, loader_id, name, neutral)
        elif options.prefetch_factor is not None:
            self._set(arguments, loader_id, "prefetch_factor", options.prefetch_factor)
        if options.pin_memory is not None:
            self._set(arguments, loader_id, "pin_memory", options.pin_memory)
        self._report_override(loader_id, "num_workers", options.workers, original)
        return original

    def _set(self, arguments: dict[str, Any], loader_id: int, name: str, value: object) -> None:
        old = arguments.get(name)
        arguments[name] = value
        self._report_override(loader_id, name, value, old)

    def _report_override(self, loader_id: int, name: str, value: object, old: object = None) -> None:
        self.channel.emit(
            EventKind.SUBSTITUTION,
            loader_id=loader_id,
            location=f"DataLoader({name}=...)",
            original=f"{name}={old!r}" if old is not None else name,
            replacement=f"{name}={value!r}",
            guessed=False,
        )

    def _after_init(self, loader: Any, loader_id: int, original_workers: int | None) -> None:
        keep = frozenset(self.options.keep_transforms)
        drop = frozenset(self.options.drop_transforms)
        try:
            found = transforms.find_augmentations(loader.dataset, keep, drop)
            if self.options.mode == Mode.NO_AUG.value:
                self._derandomize(loader, loader_id, keep, drop)
        except Exception as exc:  # fastload's own walk must never break the script's loader
            found = []
            self._report_problem(loader_id, f"transforms not inspected: {type(exc).__name__}: {exc}")
        loader._fastload_state = LoaderState(
            loader_id=loader_id, collated=bool(loader._auto_collation), replay=self._replay
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
            dataset_len=_safe_len(loader.dataset),
            iterable_dataset=loader._dataset_kind == 1,
            multiprocessing_context=context.get_start_method() if context is not None else None,
            augmentations=[f.original for f in found],
            original_num_workers=original_workers,
        )

    def _derandomize(self, loader: Any, loader_id: int, keep: frozenset[str], drop: frozenset[str]) -> None:
        walk = transforms.derandomize(loader.dataset, keep, drop)
        for item in walk.found:
            self.channel.emit(
                EventKind.SUBSTITUTION,
                loader_id=loader_id,
                location=item.location,
                original=item.original,
                replacement=item.replacement,
                guessed=item.guessed,
            )
        for problem in walk.problems:
            self._report_problem(loader_id, problem)

    def _report_problem(self, loader_id: int, problem: str) -> None:
        self.channel.emit(
            EventKind.SUBSTITUTION,
            loader_id=loader_id,
            location="dataset",
            original=problem,
            replacement="unchanged",
            guessed=False,
        )

    # -- DataLoader.__iter__ ---------------------------------------------------------------

    def _wrap_iter(self, original: Callable[[Any], Any]) -> Callable[[Any], Any]:
        hooks = self

        def __iter__(loader: Any) -> Any:
            started = time.monotonic_ns()
            state = getattr(loader, "_fastload_state", None)
            if hooks.options.breakdown and state is not None:
                hooks._break_down(loader, state)
            if state is not None and state.cache_ready:  # synthetic: no workers, no loading
                iterator: Any = ReplayIterator(_safe_len(loader))
            else:
                iterator = original(loader)
            ready = time.monotonic_ns()
            if state is None or not hasattr(iterator, "_num_yielded"):
                return iterator  # not a DataLoader iterator we can time
            reused = getattr(iterator, "_fastload_epoch", None) is not None
            epoch = EpochState(loader=state, iterator_id=next(hooks._iterator_ids), inner=state.outer)
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

    def _break_down(self, loader: Any, state: LoaderState) -> None:
        """The breakdown run: time the first loader iterated, step by step, before any worker
        starts, report it, and end the script."""
        try:
            fields = breakdown.measure(loader, self.options.breakdown, sys.modules["torch"])
        except Exception as exc:  # the dataset resisted being timed: say so
            fields = {"unavailable": f"{type(exc).__name__}: {exc}"}
        self.channel.emit(EventKind.BREAKDOWN, loader_id=state.loader_id, **fields)
        raise MeasurementDone

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
            epoch = EpochState(loader=state, iterator_id=next(hooks._iterator_ids))
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
        synthetic = self.options.mode == Mode.SYNTHETIC.value
        replay_after = max(self.options.warmup, 1)

        def __next__(iterator: Any) -> Any:
            epoch = getattr(iterator, "_fastload_epoch", None)
            if epoch is None:
                return original(iterator)
            if synthetic and epoch.loader.cache_ready:
                return hooks._replay(iterator, epoch)
            batch = hooks._timed(epoch, original, iterator, synthetic=False)
            if synthetic and epoch.loader.batches >= replay_after and not epoch.loader.cache_failed:
                hooks._cache(iterator, epoch.loader, batch)
            return batch

        __next__.__wrapped__ = original  # type: ignore[attr-defined]
        return __next__

    def _cache(self, iterator: Any, loader: LoaderState, batch: Any) -> None:
        """Synthetic mode: keep a copy of ``batch`` to replay; a batch that cannot be copied
        leaves this loader real (and says why) rather than break the script."""
        try:
            loader.cached = copy_batch(batch)
        except Exception as exc:
            loader.cache_failed = True
            self.channel.emit(
                EventKind.SUBSTITUTION,
                loader_id=loader.loader_id,
                location=SYNTHETIC_LOCATION,
                original=f"{type(batch).__qualname__} batch cannot be copied ({type(exc).__name__}: {exc})",
                replacement="not replayed: this loader stays real",
                guessed=False,
            )
            return
        loader.cache_ready = True
        _stop_workers(iterator)

    def _replay(self, iterator: Any, epoch: EpochState) -> Any:
        """Synthetic mode: a fresh copy of the cached batch, with the epoch's length kept."""
        length = _safe_len(iterator)
        if length is not None and iterator._num_yielded >= length:
            raise StopIteration
        iterator._num_yielded += 1
        return self._timed(epoch, lambda _: copy_batch(epoch.loader.cached), iterator, synthetic=True)

    def _timed(self, epoch: EpochState, produce: Callable[[Any], Any], iterator: Any, *, synthetic: bool) -> Any:
        """``produce(iterator)``, timed where the loop blocks, with the waiting thread's CPU and
        run-queue time; the batch is reported and returned (by the outer iterator only, when an
        overriding ``__iter__`` wraps this one)."""
        if epoch.inner:
            return produce(iterator)
        cpu0, runq0 = self.clock.read()
        start = time.monotonic_ns()
        batch = produce(iterator)
        end = time.monotonic_ns()
        cpu1, runq1 = self.clock.read()
        self._delivered(epoch, batch, start, end, cpu1 - cpu0, _delta(runq0, runq1), synthetic)
        return batch

    def _delivered(
        self, epoch: EpochState, batch: Any, start: int, end: int, cpu: int, runq: int | None, synthetic: bool
    ) -> None:
        loader = epoch.loader
        try:
            samples, nbytes = batch_size_and_bytes(batch, loader.collated)
        except Exception:  # an exotic batch must not break the training loop; count it, size unknown
            samples, nbytes = 1, 0
        self.channel.emit(
            EventKind.BATCH,
            loader_id=loader.loader_id,
            iterator_id=epoch.iterator_id,
            index=epoch.index,
            wait_start_ns=start,
            wait_end_ns=end,
            samples=samples,
            nbytes=nbytes,
            thread_cpu_ns=cpu,
            thread_runq_ns=runq,
            synthetic=synthetic,
        )
        if loader.batches == 0:
            self._report_layout(loader.loader_id, batch)
        if not self._env_sent:
            self._env_sent = True
            self.channel.emit(EventKind.ENV, **torch_env(final=False))
        epoch.index += 1
        loader.batches += 1

    def _report_layout(self, loader_id: int, batch: Any) -> None:
        try:
            leaves = batch_layout(batch)
        except Exception:  # describing the batch is a nicety, never worth breaking the script
            leaves = []
        self.channel.emit(EventKind.LAYOUT, loader_id=loader_id, python_type=type(batch).__qualname__, leaves=leaves)


class MeasurementDone(BaseException):
    """Raised in the script's main thread when a measurement pass has what it came for."""


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
        loader = self._epoch.loader
        return self._hooks._timed(self._epoch, lambda it: next(it), self._inner, synthetic=loader.cache_ready)

    def __getattr__(self, name: str) -> Any:  # close(), send() and whatever else the script uses
        return getattr(self._inner, name)


class ReplayIterator:
    """Synthetic mode, once a batch is cached: an epoch with no loading at all.

    Stands in for a DataLoader iterator (``_num_yielded``, ``len``); ``__next__`` is routed to
    the replay by the patched ``_BaseDataLoaderIter.__next__`` logic through ``Hooks``.
    """

    def __init__(self, length: int | None) -> None:
        self._num_yielded = 0
        self._length = length
        self._fastload_epoch: EpochState | None = None

    def __iter__(self) -> ReplayIterator:
        return self

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this loader has no length")
        return self._length

    def __next__(self) -> Any:
        assert self._fastload_epoch is not None
        return self._fastload_epoch.loader.replay(self, self._fastload_epoch)


def _stop_workers(iterator: Any) -> None:
    """Shut down a multiprocessing iterator's workers: in synthetic mode they have no more work,
    and leaving them prefetching would take CPU from the step being measured."""
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


def _delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


def _safe_len(obj: Any) -> int | None:
    try:
        return len(obj)
    except Exception:  # IterableDataset without __len__, samplers that raise
        return None


def torch_env(final: bool) -> dict[str, Any]:
    """What the child knows of torch; CUDA availability is only asked at the end of a run,
    since asking initialises the CUDA driver, which must not happen before workers fork."""
    torch = sys.modules.get("torch")
    env: dict[str, Any] = {"python": sys.version.split()[0]}
    if torch is None:
        return env
    env["torch"] = torch.__version__
    env["torch_threads"] = torch.get_num_threads()
    in_use = bool(torch.cuda.is_initialized())
    env["cuda_in_use"] = in_use
    if in_use or final:
        try:
            env["cuda_available"] = bool(torch.cuda.is_available())
            if in_use:
                env["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # a broken driver must not crash the report
            env["cuda_available"] = None
    return env


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


def install(channel: Channel, options: ChildOptions) -> Hooks:
    hooks = Hooks(channel=channel, options=options)
    module = sys.modules.get(DATALOADER_MODULE)
    if module is not None:
        hooks.install(module)
    else:
        sys.meta_path.insert(0, PatchOnImport(hooks))
    return hooks
