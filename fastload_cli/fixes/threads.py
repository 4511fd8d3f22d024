"""One thread per worker: thread pools sized for the machine, started in every forked worker
(``WorkerThreads``, ``limit_threads``)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

# One thread per worker: thread pools sized for the machine, started in every forked worker


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
