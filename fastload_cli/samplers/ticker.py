"""A deadline-driven sampling loop in a background thread that counts late ticks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
# What a run keeps of its samples, in the units of the ticker's ``size`` (a sample each, or a
# process-tree sample's processes: a few MB). Past it every other sample is dropped and from then
# on every other one is kept (the stride doubles each time), the first and the latest always:
# counters are cumulative, so the rate over any window stays exact, at a coarser resolution, and a
# run of hours costs the memory of a few minutes.
MAX_SAMPLES = 12_000
TICK_SMOOTHING = 0.2  # weight of the latest tick's CPU time in the smoothed cost of a tick


class Ticker(Generic[T]):
    """Calls ``sample()`` every ``interval_s`` on fixed deadlines (not "sleep after work").

    A tick that starts after its deadline is counted late; when the loop falls a whole interval
    behind it skips ahead instead of bursting, so samples stay evenly spread. ``size`` weighs a
    sample against ``MAX_SAMPLES``. With ``cpu_budget`` the interval stretches so that sampling
    takes at most that share of one core (its CPU time a tick, smoothed over the last few): a tree
    of many processes is sampled less often, never at the cost of the run it measures.
    ``longest_s`` is the longest interval that was in force.
    """

    def __init__(
        self,
        sample: Callable[[], T | None],
        interval_s: float,
        name: str,
        *,
        cpu_budget: float | None = None,
        cpu_clock: Callable[[], float] = time.thread_time,
        size: Callable[[T], int] = lambda _: 1,
    ) -> None:
        self._sample = sample
        self.interval_s = interval_s
        self.cpu_budget = cpu_budget
        self._cpu_clock = cpu_clock
        self._tick_cpu_s: float | None = None  # smoothed CPU time of one tick
        self.current_s = interval_s  # the interval in force
        self.longest_s = interval_s
        self._stop = threading.Event()
        self._taking = threading.Lock()  # a sample taken now, from another thread, never beside a tick
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.samples: list[T] = []
        self._size = size
        self._kept_size = 0  # the kept samples' sizes, added up
        self._found = 0  # samples taken, kept or not
        self._stride = 1  # every stride-th sample is kept
        self._latest: T | None = None  # kept at the end, whatever the stride
        self.ticks = 0
        self.late_ticks = 0
        self.error: BaseException | None = None

    def start(self) -> None:
        self._take()
        self._thread.start()

    def stop(self) -> list[T]:
        """Stop the loop, take one last sample (so the run's end is covered), return all."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._take()
        if self._latest is not None and (not self.samples or self.samples[-1] is not self._latest):
            self.samples.append(self._latest)
        return self.samples

    def take_now(self) -> None:
        """One sample now, on the caller's thread, kept whatever the stride (a moment that matters)."""
        with self._taking:
            found = self._sample()
            if found is not None:
                self.samples.append(found)

    def _take(self) -> None:
        with self._taking:
            self._take_one()

    def _take_one(self) -> None:
        before = self._cpu_clock()
        found = self._sample()
        self._within_budget(self._cpu_clock() - before)
        self.ticks += 1
        if found is None:
            return
        if self._found % self._stride == 0:
            self.samples.append(found)
            self._kept_size += self._size(found)
            if self._kept_size > MAX_SAMPLES:  # half the resolution, the same span
                self.samples, self._stride = self.samples[::2], 2 * self._stride
                self._kept_size = sum(self._size(kept) for kept in self.samples)
        self._found += 1
        self._latest = found

    def _within_budget(self, cost_s: float) -> None:
        if self.cpu_budget is None:
            return
        last = self._tick_cpu_s
        self._tick_cpu_s = cost_s if last is None else last + TICK_SMOOTHING * (cost_s - last)
        self.current_s = max(self.interval_s, self._tick_cpu_s / self.cpu_budget)
        self.longest_s = max(self.longest_s, self.current_s)

    def _loop(self) -> None:
        deadline = time.monotonic() + self.current_s
        try:
            while not self._stop.wait(max(0.0, deadline - time.monotonic())):
                now = time.monotonic()
                if now - deadline > self.current_s * 0.5:
                    self.late_ticks += 1
                if now - deadline > self.current_s:
                    deadline = now
                self._take()
                deadline += self.current_s
        except BaseException as exc:  # recorded, never lost: the run goes on without samples
            self.error = exc
