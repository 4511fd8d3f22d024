"""Input-pipeline fixes, each adopted in one line: the ones ``fastload try`` measures on your script.

    from fastload_cli.fixes import CudaPrefetcher, DecodedCache, GpuNormalize, ThreadPrefetcher

    loader = ThreadPrefetcher(loader)                  # the next batch loads in a background thread
    loader = CudaPrefetcher(loader)                    # ... and is copied to the GPU on a side stream
    dataset = DecodedCache(dataset, max_bytes=8 << 30) # decode each sample once, augment every time
    images = GpuNormalize(mean, std)(images.cuda())    # send uint8, normalise on the GPU
    DataLoader(..., worker_init_fn=WorkerThreads(1))   # one thread per worker: BLAS, OpenMP, OpenCV

Each wraps what you have and keeps its interface (``len``, attributes such as ``dataset`` or
``sampler`` pass through). torch is imported only when a fix needs it.
"""

from __future__ import annotations

import queue
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = [
    "CudaPrefetcher",
    "DecodedCache",
    "GpuNormalize",
    "ThreadPrefetcher",
    "WorkerThreads",
    "limit_threads",
    "map_tensors",
    "sample_nbytes",
]

_END = object()  # the producer thread's "no more batches"


# --------------------------------------------------------------------------------------------
# A background thread, one batch ahead (the DataLoaderX / prefetch_generator pattern)
# --------------------------------------------------------------------------------------------


class ThreadPrefetcher:
    """Iterate ``loader`` with its next ``depth`` batches fetched by a background thread, so the
    main process's share of loading (receiving batches from workers, pinning, a ``num_workers=0``
    pipeline's IO) overlaps the training step. Each ``iter()`` starts one thread for one epoch."""

    def __init__(self, loader: Iterable[Any], depth: int = 1) -> None:
        if depth < 1:
            raise ValueError(f"depth must be at least 1 (got {depth})")
        self.loader, self.depth = loader, depth

    def __iter__(self) -> Iterator[Any]:
        return _ThreadIterator(iter(self.loader), self.depth)

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:  # dataset, sampler, batch_size, ...
        return _passed_through(self, "loader", name)


def _passed_through(wrapper: Any, inner: str, name: str) -> Any:
    """An attribute the wrapper does not have, looked up on what it wraps: never a special name
    (a wrapped dataset's ``__getitems__`` would bypass the wrapper's own ``__getitem__``), and never
    while the wrapper is being unpickled, when it wraps nothing yet."""
    wrapped = wrapper.__dict__.get(inner)
    if wrapped is None or name.startswith("__"):
        raise AttributeError(name)
    return getattr(wrapped, name)


class _ThreadIterator:
    """One epoch of a ThreadPrefetcher: the thread's exceptions are raised here, where the loop asks."""

    def __init__(self, source: Iterator[Any], depth: int) -> None:
        self._queue: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._produce, args=(source,), name="fastload-prefetch", daemon=True)
        self._thread.start()

    def _produce(self, source: Iterator[Any]) -> None:
        try:
            for item in source:
                if not self._put((item, None)):
                    return
            self._put((_END, None))
        except BaseException as exc:  # handed to the consumer, raised there
            self._put((_END, exc))

    def _put(self, entry: tuple[Any, BaseException | None]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> _ThreadIterator:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        item, error = self._queue.get()
        if item is _END:
            self._done = True
            if error is not None:
                raise error
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop the thread early (the loop broke out of the epoch)."""
        self._done = True
        self._stop.set()

    def __del__(self) -> None:
        self._stop.set()


# --------------------------------------------------------------------------------------------
# A side CUDA stream, one batch ahead (the apex data_prefetcher pattern)
# --------------------------------------------------------------------------------------------


class CudaPrefetcher:
    """Iterate ``loader`` with each batch's tensors already on ``device``: the copy of batch n+1
    runs on a side stream while the step of batch n runs. Each tensor handed over is recorded on
    the consuming stream (``record_stream``), so its memory is not reused while the step still
    reads it. The copy only overlaps when the host tensors are pinned (``pin_memory=True``); a
    warning says so once otherwise."""

    def __init__(self, loader: Iterable[Any], device: Any = None) -> None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("CudaPrefetcher needs CUDA, and torch.cuda.is_available() is False")
        self.loader = loader
        self.device = torch.device(device if device is not None else "cuda", torch.cuda.current_device())
        self._warned = False

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return _passed_through(self, "loader", name)

    def __iter__(self) -> Iterator[Any]:
        import torch

        stream = torch.cuda.Stream(self.device)
        source = iter(self.loader)
        upcoming = self._copy(source, stream)
        while upcoming is not _END:
            current = torch.cuda.current_stream(self.device)
            current.wait_stream(stream)
            batch = upcoming
            map_tensors(batch, _Recorder(current))
            upcoming = self._copy(source, stream)  # the next copy starts before this step runs
            yield batch

    def _copy(self, source: Iterator[Any], stream: Any) -> Any:
        import torch

        batch = next(source, _END)
        if batch is _END:
            return _END
        if not self._warned and not _all_pinned(batch):
            self._warned = True
            warnings.warn(
                "CudaPrefetcher: the batches are not in pinned memory, so their copies do not overlap the step; "
                "set pin_memory=True on the DataLoader",
                stacklevel=3,
            )
        with torch.cuda.stream(stream):
            return map_tensors(batch, lambda t: t.to(self.device, non_blocking=True))


class _Recorder:
    """Records each tensor on the stream that consumes it."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __call__(self, tensor: Any) -> Any:
        tensor.record_stream(self.stream)
        return tensor


def _all_pinned(batch: Any) -> bool:
    pinned: list[bool] = []

    def check(tensor: Any) -> Any:
        pinned.append(bool(tensor.is_cuda or tensor.is_pinned()))
        return tensor

    map_tensors(batch, check)
    return all(pinned)


def map_tensors(batch: Any, fn: Callable[[Any], Any]) -> Any:
    """``batch`` with ``fn`` applied to every tensor in it, through tuples, lists, named tuples and
    dicts; anything else is kept as it is."""
    torch = sys.modules.get("torch")
    return _map_leaves(batch, lambda x: torch is not None and isinstance(x, torch.Tensor), fn)


def _map_leaves(value: Any, is_leaf: Callable[[Any], bool], fn: Callable[[Any], Any]) -> Any:
    """``value`` with ``fn`` applied to each leaf ``is_leaf`` picks, through dicts, named tuples,
    tuples and lists; anything else is kept as it is."""
    if is_leaf(value):
        return fn(value)
    if isinstance(value, dict):
        return type(value)({k: _map_leaves(v, is_leaf, fn) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_map_leaves(v, is_leaf, fn) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_map_leaves(v, is_leaf, fn) for v in value)
    return value


# --------------------------------------------------------------------------------------------
# Decoded samples kept in RAM, the augmentation run every time
# --------------------------------------------------------------------------------------------


class _Decoded:
    """What the dataset's transform was given: the decoded sample, marked in the dataset's output."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class DecodedCache:
    """``dataset`` with each decoded sample kept in memory after its first read, up to ``max_bytes``.

    The dataset's ``transform`` (or the attribute named) is taken off it: the dataset reads and
    decodes, the cache keeps what the transform would have been given, and the transform (random
    augmentation included) runs on it at every access, as before. Items past the bound are read
    as usual. With DataLoader workers, ``fill()`` before the loader starts lets every worker share
    the cache (workers are forked with it); otherwise each worker caches its own items.
    ``attribute=None`` keeps the dataset's whole items: only for datasets with nothing random in them.
    """

    def __init__(self, dataset: Any, *, max_bytes: int | None = None, attribute: str | None = "transform") -> None:
        self.dataset, self.max_bytes = dataset, max_bytes
        self.transform: Callable[[Any], Any] | None = None
        if attribute is not None:
            owner = _owner_of(dataset, attribute)
            if owner is None:
                raise ValueError(
                    f"{type(dataset).__qualname__} has no '{attribute}' attribute (directly or through .dataset): "
                    "its decoding cannot be cached apart from its transform"
                )
            self.transform = getattr(owner, attribute)
            setattr(owner, attribute, _Decoded)  # the dataset now returns the decoded sample, marked
        self._restore = (owner, attribute) if attribute is not None else None
        self._cache: dict[int, Any] = {}
        self.cached_bytes = 0

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name: str) -> Any:  # classes, targets, ...
        return _passed_through(self, "dataset", name)

    def __getitem__(self, index: int) -> Any:
        found = self._cache.get(index)
        if found is None:
            found = self._read(index)
        return _transformed(found, self.transform)

    def read(self, index: int) -> Any:
        """Item ``index`` read and decoded from the dataset and transformed, as the dataset alone
        gives it: the cache is neither consulted nor filled."""
        return _transformed(self.dataset[index], self.transform)

    def _read(self, index: int) -> Any:
        item = self.dataset[index]
        size = sample_nbytes(item)
        if self.max_bytes is None or self.cached_bytes + size <= self.max_bytes:
            self._cache[index] = item
            self.cached_bytes += size
        return item

    def fill(self, indices: Sequence[int] | None = None, threads: int = 8) -> int:
        """Read and decode ``indices`` (all, by default) into the cache until the bound is reached,
        with ``threads`` reads in flight; returns how many items are cached."""
        todo = [i for i in (indices if indices is not None else range(len(self))) if i not in self._cache]
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            for index, item in zip(todo, pool.map(self.dataset.__getitem__, todo), strict=True):
                size = sample_nbytes(item)
                if self.max_bytes is not None and self.cached_bytes + size > self.max_bytes:
                    break
                self._cache[index] = item
                self.cached_bytes += size
        return len(self._cache)

    @property
    def cached(self) -> int:
        return len(self._cache)

    def release(self) -> Any:
        """Give the dataset its transform back and drop the cache; returns the dataset."""
        if self._restore is not None:
            owner, attribute = self._restore
            setattr(owner, attribute, self.transform)
            self._restore = None
        self._cache.clear()
        self.cached_bytes = 0
        return self.dataset

    def indices(self) -> list[int]:
        """The indices whose decoded samples are in memory, in order."""
        return sorted(self._cache)


def _owner_of(dataset: Any, attribute: str) -> Any:
    """The object holding ``attribute``: the dataset, or one it wraps (``Subset.dataset``, ...)."""
    seen = 0
    while dataset is not None and seen < 8:
        if hasattr(dataset, attribute):
            return dataset
        dataset, seen = getattr(dataset, "dataset", None), seen + 1
    return None


def _transformed(item: Any, transform: Callable[[Any], Any] | None) -> Any:
    """The dataset's output with the transform run on the decoded sample it marked."""
    apply = transform if transform is not None else (lambda value: value)
    return _map_leaves(item, lambda x: isinstance(x, _Decoded), lambda marked: apply(marked.value))


def sample_nbytes(item: Any) -> int:
    """Bytes a decoded sample holds: tensors and arrays by their data, images by their pixels,
    containers by their contents, anything else by ``sys.getsizeof``."""
    if isinstance(item, _Decoded):
        return sample_nbytes(item.value)
    if hasattr(item, "element_size") and hasattr(item, "numel"):
        return int(item.element_size() * item.numel())
    if hasattr(item, "nbytes") and not isinstance(item, (bytes, bytearray)):
        return int(item.nbytes)
    if hasattr(item, "getbands") and hasattr(item, "size"):  # a PIL image
        width, height = item.size
        return int(width * height * len(item.getbands()))
    if isinstance(item, dict):
        return sum(sample_nbytes(v) for v in item.values())
    if isinstance(item, (tuple, list)):
        return sum(sample_nbytes(v) for v in item)
    return sys.getsizeof(item)


# --------------------------------------------------------------------------------------------
# uint8 over the bus, normalised on the device
# --------------------------------------------------------------------------------------------


class GpuNormalize:
    """``(x / scale - mean) / std`` per channel, for uint8 image batches already on the device:
    send a quarter of the bytes float32 would take, and normalise where the step runs. Channels
    are the third dimension from the end (NCHW or CHW). Works on any device, the CPU included."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], scale: float = 255.0) -> None:
        if len(mean) != len(std):
            raise ValueError(f"mean and std need one value per channel (got {len(mean)} and {len(std)})")
        if any(s == 0 for s in std):
            raise ValueError("std cannot be 0")
        self.mean, self.std, self.scale = tuple(mean), tuple(std), scale
        self._constants: dict[Any, tuple[Any, Any]] = {}  # (device, dtype) -> mean, std tensors

    def __call__(self, images: Any) -> Any:
        import torch

        if images.dim() < 3 or images.shape[-3] != len(self.mean):
            raise ValueError(f"expected {len(self.mean)} channels at dimension -3, got shape {tuple(images.shape)}")
        dtype = images.dtype if images.is_floating_point() else torch.float32
        mean, std = self._on(images.device, dtype)
        return (images.to(dtype) / self.scale - mean) / std

    def _on(self, device: Any, dtype: Any) -> tuple[Any, Any]:
        import torch

        key = (device, dtype)
        if key not in self._constants:
            shape = (len(self.mean), 1, 1)
            self._constants[key] = (
                torch.tensor(self.mean, device=device, dtype=dtype).view(shape),
                torch.tensor(self.std, device=device, dtype=dtype).view(shape),
            )
        return self._constants[key]


# --------------------------------------------------------------------------------------------
# One thread per worker: thread pools sized for the machine, started in every forked worker
# --------------------------------------------------------------------------------------------


def limit_threads(threads: int) -> None:
    """Limit this process's thread pools to ``threads``: torch's, OpenCV's, and the BLAS and OpenMP
    libraries loaded (OpenBLAS, MKL, libgomp) through threadpoolctl where it is installed."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    cv2 = sys.modules.get("cv2")
    if cv2 is not None and hasattr(cv2, "setNumThreads"):
        cv2.setNumThreads(threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        warnings.warn("threadpoolctl is not installed: BLAS and OpenMP pools keep their size", stacklevel=2)
        return
    threadpool_limits(threads)


class WorkerThreads:
    """A DataLoader ``worker_init_fn`` that limits each worker to ``threads`` threads
    (``limit_threads``), then runs the loader's own ``worker_init_fn``, if it had one::

        DataLoader(dataset, num_workers=4, worker_init_fn=WorkerThreads(1, then=seed_worker))
    """

    def __init__(self, threads: int = 1, then: Callable[[int], Any] | None = None) -> None:
        self.threads, self.then = threads, then

    def __call__(self, worker_id: int) -> None:
        limit_threads(self.threads)
        if self.then is not None:
            self.then(worker_id)
