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

from fastload_cli.fixes.cache import DecodedCache, sample_nbytes
from fastload_cli.fixes.device import GpuNormalize
from fastload_cli.fixes.prefetch import CudaPrefetcher, ThreadPrefetcher
from fastload_cli.fixes.threads import WorkerThreads, limit_threads
from fastload_cli.fixes.wrapping import map_tensors

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
