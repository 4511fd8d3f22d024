"""Inside the child: the on-CPU and run-queue time of the calling thread."""

from __future__ import annotations

import os
import threading
import time


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

    def mark(self, cpu: int, runq: int | None) -> None:
        """Remember a reading taken as this thread got a batch: its step starts there."""
        self._local.mark = (cpu, runq)

    def since_last(self, cpu: int, runq: int | None) -> tuple[int | None, int | None]:
        """On-CPU and run-queue time of this thread since its last ``mark``: the step between its
        previous batch and this one (None before its first batch)."""
        last = getattr(self._local, "mark", None)
        if last is None:
            return None, None
        return cpu - last[0], delta(last[1], runq)


def delta(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before
