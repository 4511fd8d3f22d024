"""Inside the child: the ``cached`` mode and the fixes ``fastload try`` applies, as actuators.

``cached`` wraps every map-style dataset in a view over ``fixes.DecodedCache``: at the loader's
first ``iter()``, before any worker starts, the samples the run will measure are read and decoded
into memory (threads in flight, bounded by ``ChildSpec.cache_bytes``); every index then maps onto
them, and the dataset's real transforms and the collate run on them as before. Workers are forked
with the cache, so none reads storage again.

``fix`` applies what the run's ``ModeSpec.fixes`` name: loader settings at construction
(``persistent_workers``, ``prefetch_factor``, ``pin_memory``, ``num_workers``, ``in_order``, a
``worker_init_fn`` that limits each worker's threads), the cache above
(``cache-decoded``), or a prefetcher between the loader and the loop (``thread-prefetch``: a
background thread one batch ahead; ``cuda-prefetch``: the next batch copied to the GPU on a side
stream). A fix that cannot apply to a loader says so in a substitution event and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from fastload_cli.fixes import CudaPrefetcher, DecodedCache, ThreadPrefetcher, WorkerThreads
from fastload_cli.records import CACHE_LOCATION, UNCHANGED, ChildSpec, Fix, setting_location
from fastload_cli.runner.child import samples, transforms
from fastload_cli.runner.child.batches import safe_len
from fastload_cli.runner.child.channel import Channel
from fastload_cli.runner.child.modes import Actuator, EpochState, LoaderState, NoAugmentation, Produce, WorkersOverride

FILL_THREADS = 8  # reads in flight while the cache fills: storage latency overlaps


class CachedView:
    """A map-style dataset over the decoded samples a ``DecodedCache`` holds: the dataset's length,
    every index mapped onto the cached ones once the cache is filled."""

    def __init__(self, cache: DecodedCache) -> None:
        self.cache = cache
        self.keys: list[int] = []

    def __len__(self) -> int:
        return len(self.cache)

    def __getattr__(self, name: str) -> Any:  # classes, targets, ...: the script's dataset answers
        cache = self.__dict__.get("cache")
        if cache is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(cache, name)

    def __getitem__(self, index: int) -> Any:
        keys = self.keys
        return self.cache[keys[index % len(keys)]] if keys else self.cache[index]

    def fill(self, items: int) -> int:
        """Decode the first ``items`` samples (within the cache's bound); returns how many."""
        self.cache.fill(range(min(items, len(self.cache))), threads=FILL_THREADS)
        self.keys = self.cache.indices()
        return len(self.keys)


def cache_view(dataset: Any, bound: int) -> tuple[CachedView | None, str]:
    """The cached view of ``dataset``, or None with the reason it cannot be cached apart from
    its augmentation; the second value describes what is cached."""
    if dataset is None or safe_len(dataset) is None or not hasattr(type(dataset), "__getitem__"):
        return None, "an iterable dataset has no indices to cache samples by"
    before = samples.probe(dataset)  # the original pipeline's first sample
    if before is None:
        return None, "the dataset's first sample could not be read to check the cache against"
    bound_or_none = bound or None
    try:
        cache = DecodedCache(dataset, max_bytes=bound_or_none)
        what = "decoded samples; transforms run on them"
    except ValueError:
        if transforms.find_augmentations(dataset, frozenset(), frozenset()):
            return None, "the dataset decodes and augments in one __getitem__: its decoded samples cannot be kept apart"
        cache, what = DecodedCache(dataset, max_bytes=bound_or_none, attribute=None), "whole items (nothing random)"
    after = samples.probe(cache)  # the first sample, through the cache (and kept there)
    if after != before:  # the dataset does not apply its transform as the cache expects
        cache.release()
        return None, f"through the cache the first sample changed make-up ({str(before)[:60]} -> {str(after)[:60]})"
    return CachedView(cache), what


@dataclass
class CachedInputs(Actuator):
    """``cached``: each loader's samples read and decoded once, into memory, before its first batch."""

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        self.cache_dataset(arguments, loader_id)
        return None

    def cache_dataset(self, arguments: dict[str, Any], loader_id: int) -> None:
        dataset = arguments.get("dataset")
        if isinstance(dataset, CachedView):
            return  # a framework building its loader again around the same dataset
        view, what = cache_view(dataset, self.spec.cache_bytes)
        if view is None:
            self.channel.substitution(loader_id, CACHE_LOCATION, f"not cached: {what}", UNCHANGED)
            return
        arguments["dataset"] = view
        self.channel.substitution(loader_id, CACHE_LOCATION, type(dataset).__qualname__, f"cached in memory: {what}")

    def start_epoch(self, loader: Any, state: LoaderState, original: Any) -> Any:
        view = getattr(loader, "dataset", None)
        if isinstance(view, CachedView):
            fill_cache(view, loader, self.spec, self.channel, state.loader_id)
        return original(loader)


def fill_cache(view: CachedView, loader: Any, spec: ChildSpec, channel: Channel, loader_id: int) -> None:
    """At a loader's first ``iter()``, before its workers start: decode the samples of the batches
    the run asks for into ``view``, and say how many and how much memory they take."""
    if view.keys:
        return
    batches = spec.cache_batches
    cached = view.fill(batches * (loader.batch_size or 1) if batches else len(view))
    channel.substitution(
        loader_id, CACHE_LOCATION, f"{cached} samples decoded", f"{view.cache.cached_bytes} bytes in memory"
    )


@dataclass
class CachedNoAugmentation(CachedInputs, NoAugmentation):
    """``cached-no-aug``: both at once, so storage, decoding and augmentation are all free and what
    is left is loading's other work (collate, the handoff) and the step. The augmentation is
    replaced before the cache is built, so the cache runs the deterministic stand-ins."""

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        dataset = arguments.get("dataset")
        if dataset is not None and not isinstance(dataset, CachedView):
            self.derandomize(dataset, loader_id)
        self.cache_dataset(arguments, loader_id)
        return None

    def after_init(self, loader: Any, loader_id: int) -> None:
        """Done before the dataset was cached."""


@dataclass
class FixesApplied(WorkersOverride):
    """``fix``: the named fixes, applied together."""

    _ahead: dict[int, Iterator[Any]] = field(default_factory=dict)  # iterator id -> its prefetcher
    _cache: CachedInputs | None = None

    @cached_property
    def fixes(self) -> dict[Fix, int | None]:
        """The run's fixes, parsed once (``next_batch`` asks at every batch)."""
        return {f.fix: f.value for f in self.spec.mode.fix_specs}

    def before_init(self, arguments: dict[str, Any], loader_id: int) -> int | None:
        fixes, original = self.fixes, int(arguments.get("num_workers", 0))
        if Fix.WORKERS in fixes:
            self.set_workers(arguments, loader_id, fixes[Fix.WORKERS] or 0)
        workers = int(arguments.get("num_workers", 0))
        for fix, name, value in (
            (Fix.PERSISTENT_WORKERS, "persistent_workers", True),
            (Fix.PREFETCH_FACTOR, "prefetch_factor", fixes.get(Fix.PREFETCH_FACTOR)),
        ):
            if fix in fixes and workers == 0:
                self.channel.substitution(loader_id, f"DataLoader({name}=...)", "num_workers=0: no workers", UNCHANGED)
            elif fix in fixes:
                self._set(arguments, loader_id, name, value)
        if Fix.PIN_MEMORY in fixes:
            self._set(arguments, loader_id, "pin_memory", True)
        if Fix.IN_ORDER in fixes:
            self._out_of_order(arguments, loader_id, workers)
        if Fix.WORKER_THREADS in fixes:
            self._worker_threads(arguments, loader_id, workers, fixes[Fix.WORKER_THREADS] or 1)
        if Fix.CACHE_DECODED in fixes:
            self._cache = self._cache or CachedInputs(spec=self.spec, channel=self.channel, timed=self.timed)
            self._cache.cache_dataset(arguments, loader_id)
        return original if Fix.WORKERS in fixes else None

    def _out_of_order(self, arguments: dict[str, Any], loader_id: int, workers: int) -> None:
        """``in_order=False`` where this torch's DataLoader takes it (2.6 and later) and there are workers."""
        location = setting_location("in_order")
        if workers == 0:
            self.channel.substitution(
                loader_id, location, "num_workers=0: batches are made in order, one at a time", UNCHANGED
            )
        elif not _takes("in_order"):
            self.channel.substitution(
                loader_id, location, "this torch's DataLoader has no in_order (torch >= 2.6)", UNCHANGED
            )
        else:
            self._set(arguments, loader_id, "in_order", False)

    def _worker_threads(self, arguments: dict[str, Any], loader_id: int, workers: int, threads: int) -> None:
        """A ``worker_init_fn`` that limits each worker's thread pools, then runs the loader's own."""
        location = setting_location("worker_init_fn")
        if workers == 0:
            self.channel.substitution(loader_id, location, "num_workers=0: there are no workers", UNCHANGED)
            return
        own = arguments.get("worker_init_fn")
        arguments["worker_init_fn"] = WorkerThreads(threads, then=own)
        self.channel.substitution(loader_id, location, repr(own) if own else "None", f"WorkerThreads({threads})")

    def start_epoch(self, loader: Any, state: LoaderState, original: Any) -> Any:
        if self._cache is not None:
            return self._cache.start_epoch(loader, state, original)
        return original(loader)

    def next_batch(self, iterator: Any, epoch: EpochState, produce: Produce) -> Any:
        fixes = self.fixes
        if Fix.THREAD_PREFETCH not in fixes and Fix.CUDA_PREFETCH not in fixes:
            return self.timed(epoch, produce, iterator, synthetic=False)
        ahead = self._ahead.get(epoch.iterator_id)
        if ahead is None:
            source: Any = _Produced(iterator, produce)
            if Fix.THREAD_PREFETCH in fixes:
                source = ThreadPrefetcher(source)
            if Fix.CUDA_PREFETCH in fixes:
                source = CudaPrefetcher(source)
            ahead = self._ahead[epoch.iterator_id] = iter(source)
        try:
            return self.timed(epoch, lambda _: next(ahead), iterator, synthetic=False)
        except StopIteration:
            self._ahead.pop(epoch.iterator_id, None)
            raise


def _takes(name: str) -> bool:
    """The installed DataLoader takes the keyword ``name``."""
    import inspect

    from torch.utils.data import DataLoader

    return name in inspect.signature(getattr(DataLoader.__init__, "__wrapped__", DataLoader.__init__)).parameters


class _Produced:
    """One epoch of a DataLoader iterator, drawn through its original ``__next__`` (not timed:
    the loop's wait is timed where the prefetcher hands batches over)."""

    def __init__(self, iterator: Any, produce: Produce) -> None:
        self.iterator, self.produce = iterator, produce

    def __iter__(self) -> Iterator[Any]:
        while True:
            try:
                batch = self.produce(self.iterator)
            except StopIteration:
                return
            yield batch
