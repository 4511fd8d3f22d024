"""The next batch fetched ahead: in a background thread (``ThreadPrefetcher``), and copied to
the GPU on a side stream (``CudaPrefetcher``)."""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from fastload_cli.fixes.wrapping import map_tensors, passed_through

_END = object()  # the producer thread's "no more batches"


# A background thread, one batch ahead (the DataLoaderX / prefetch_generator pattern)


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
        return passed_through(self, "loader", name)


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


# A side CUDA stream, one batch ahead (the apex data_prefetcher pattern)


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
        return passed_through(self, "loader", name)

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
