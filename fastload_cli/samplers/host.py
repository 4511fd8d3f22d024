"""The child's process tree and the system, sampled with psutil.

Each sample holds cumulative counters (CPU seconds, run-queue seconds, bytes read); the analyzer
turns differences between samples into rates over exactly the window it cares about. A field
that cannot be read is ``None`` and its reason is recorded once in ``unavailable``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

import psutil

from fastload_cli.records import HostSample, ProcRole, ProcSample, SamplerHealth, SystemSample
from fastload_cli.samplers.ticker import Ticker

# Slow readings, taken on every 20th tick (1 Hz at the default 20 Hz): a full descendant scan
# (~1.3 ms; worker pids arrive as events at once anyway) and system disk counters (~0.13 ms,
# they walk /sys). Between them the last disk reading is carried forward: a cumulative counter
# at 1 Hz resolution.
SLOW_EVERY_TICKS = 20
# What the pathologies read (each process's threads, context switches, page faults and open
# descriptors, each worker's threads' CPU; ~0.05 ms a process): on every 5th tick, 4 Hz at the
# default 20 Hz. A worker's unique memory walks its memory map's rollup, ~10 ms for a process that
# imported torch: it is read only when asked (``read_memory_now``), where the measured window
# starts and ends.
DETAIL_EVERY_TICKS = 5


# The share of one core the host sampler may take: a process tree too large to walk at the
# interval asked for (a node's 8 ranks with 8 workers each) is sampled less often instead.
SAMPLING_CPU_BUDGET = 0.05


class HostSampler:
    """Samples ``root_pid`` and its descendants, plus system CPU and disk, on a steady clock."""

    def __init__(self, root_pid: int, interval_s: float) -> None:
        self._root_pid = root_pid
        self._procs: dict[int, psutil.Process] = {}
        self._workers: set[int] = set()
        self._lock = threading.Lock()
        self._unavailable: dict[str, str] = {}
        self._tick = 0
        self._all_unique = False  # the sample being taken reads every worker's unique memory
        self._disk_read_bytes: int | None = None
        self._started: dict[int, int | None] = {}  # pid: when it started, on the monotonic clock
        self._ticker: Ticker[HostSample] = Ticker(
            self.sample, interval_s, "fastload-host-sampler", cpu_budget=SAMPLING_CPU_BUDGET, size=_processes
        )
        self._track(root_pid)

    # -- public ----------------------------------------------------------------------------

    def note_workers(self, pids: Iterable[int]) -> None:
        """DataLoader worker pids reported by the child: tracked from the next tick on."""
        with self._lock:
            self._workers.update(pids)
        for pid in pids:
            self._track(pid)

    def start(self) -> None:
        self._ticker.start()

    def stop(self) -> tuple[tuple[HostSample, ...], SamplerHealth]:
        samples = tuple(self._ticker.stop())
        if self._ticker.error is not None:
            self._unavailable.setdefault("sampler", f"stopped early: {self._ticker.error!r}")
        health = SamplerHealth(
            interval_s=self._ticker.interval_s,
            longest_interval_s=self._ticker.longest_s,
            cpu_budget=self._ticker.cpu_budget,
            ticks=self._ticker.ticks,
            late_ticks=self._ticker.late_ticks,
            unavailable=tuple(f"{k}: {v}" for k, v in sorted(self._unavailable.items())),
        )
        return samples, health

    def read_memory_now(self) -> None:
        """A sample now, with every worker's unique memory (where a measured window starts and
        ends: a growth is read between them however short the run)."""
        self._all_unique = True
        try:
            self._ticker.take_now()
        finally:
            self._all_unique = False

    def tracked_pids(self) -> list[int]:
        with self._lock:
            return list(self._procs)

    def sample(self) -> HostSample:
        t_ns = time.monotonic_ns()
        slow = self._tick % SLOW_EVERY_TICKS == 0
        detail = self._tick % DETAIL_EVERY_TICKS == 0 or self._all_unique
        if slow:
            self._rescan()
            self._disk_read_bytes = self._field("disk_read_bytes", _disk_read_bytes)
        self._tick += 1
        with self._lock:
            procs = [(pid, proc, self._role(pid)) for pid, proc in self._procs.items()]
        found = []
        for pid, proc, role in procs:
            sample = self._sample_proc(proc, role, detail, unique=self._all_unique and role is ProcRole.WORKER)
            if sample is None:
                self._forget(pid)
            else:
                found.append(sample)
        return HostSample(t_ns=t_ns, procs=tuple(found), system=self._sample_system(), own_cpu_s=time.process_time())

    # -- internals -------------------------------------------------------------------------

    def _role(self, pid: int) -> ProcRole:
        return ProcRole.MAIN if pid == self._root_pid else ProcRole.WORKER if pid in self._workers else ProcRole.OTHER

    def _forget(self, pid: int) -> None:
        """A process that left: nothing of it is kept (a long run starts workers every epoch)."""
        with self._lock:
            self._procs.pop(pid, None)
            self._workers.discard(pid)
            self._started.pop(pid, None)

    def _track(self, pid: int) -> None:
        with self._lock:
            if pid in self._procs:
                return
        try:
            proc = psutil.Process(pid)
        except psutil.Error:
            return
        with self._lock:
            self._procs.setdefault(pid, proc)

    def _rescan(self) -> None:
        try:
            children = psutil.Process(self._root_pid).children(recursive=True)
        except psutil.Error:
            return
        with self._lock:
            for child in children:
                self._procs.setdefault(child.pid, child)

    def _sample_proc(self, proc: psutil.Process, role: ProcRole, detail: bool, *, unique: bool) -> ProcSample | None:
        try:
            with proc.oneshot():
                cpu = proc.cpu_times()
                rss = self._field("rss", lambda: proc.memory_info().rss)
                read = self._field("read_bytes", lambda: proc.io_counters().read_bytes)
                blocked = proc.status() == psutil.STATUS_DISK_SLEEP  # /proc/PID/stat, read once in oneshot
            found = self._detail(proc, role) if detail else {}
            own = self._field("unique_bytes", lambda: proc.memory_full_info().uss) if unique else None
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return None
        except psutil.AccessDenied:
            self._unavailable.setdefault("cpu", f"access denied to pid {proc.pid}")
            return None
        return ProcSample(
            pid=proc.pid,
            role=role,
            cpu_s=cpu.user + cpu.system,
            runq_s=self._runq(proc.pid),
            rss_bytes=rss,
            read_bytes=read,
            kernel_cpu_s=cpu.system,
            blocked=blocked,
            unique_bytes=own,
            started_ns=self._started_ns(proc.pid),
            reaped_cpu_s=getattr(cpu, "children_user", 0.0) + getattr(cpu, "children_system", 0.0),
            **found,
        )

    def _detail(self, proc: psutil.Process, role: ProcRole) -> dict[str, Any]:
        """What the pathologies read of one process, on every few ticks."""
        with proc.oneshot():
            threads = self._field("threads", proc.num_threads)  # /proc/PID/status, read once in oneshot
            switches = self._field("involuntary_switches", lambda: proc.num_ctx_switches().involuntary)
        return {
            "threads": threads,
            "involuntary_switches": switches,
            "minor_faults": self._field("minor_faults", lambda: _minor_faults(proc.pid)),
            "fds": self._field("fds", proc.num_fds),
            "thread_cpu_s": self._threads(proc) if role is ProcRole.WORKER else (),
        }

    def _threads(self, proc: psutil.Process) -> tuple[tuple[int, float], ...]:
        """Each thread's cumulative CPU seconds: which of a worker's threads compute (its own, a
        BLAS or OpenMP pool's)."""
        try:
            return tuple((t.id, t.user_time + t.system_time) for t in proc.threads())
        except psutil.AccessDenied as exc:
            self._unavailable.setdefault("thread_cpu_s", _why(exc))
            return ()

    def _field(self, name: str, read: object) -> int | None:
        try:
            return int(read())  # type: ignore[operator]
        except (psutil.AccessDenied, AttributeError, NotImplementedError) as exc:
            self._unavailable.setdefault(name, _why(exc))
            return None

    def _started_ns(self, pid: int) -> int | None:
        """When the process started, on the monotonic clock; read once a process."""
        if pid not in self._started:
            try:
                self._started[pid] = _started_ns(pid)
            except (OSError, ValueError, IndexError, AttributeError) as exc:  # gone, or not Linux
                self._started[pid] = None
                if not isinstance(exc, FileNotFoundError):
                    self._unavailable.setdefault("started", _why(exc))
        return self._started[pid]

    def _runq(self, pid: int) -> float | None:
        """Seconds the process's main thread was runnable but waiting for a CPU."""
        try:
            with open(f"/proc/{pid}/schedstat", "rb") as handle:
                return int(handle.read().split()[1]) / 1e9
        except FileNotFoundError:
            return None  # the process is gone, or the kernel has no schedstat
        except (OSError, ValueError, IndexError) as exc:
            self._unavailable.setdefault("runq", _why(exc))
            return None

    def _sample_system(self) -> SystemSample:
        times = psutil.cpu_times()
        iowait = getattr(times, "iowait", None)
        idle = times.idle
        busy = sum(times) - idle - (iowait or 0.0) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
        if iowait is None:
            self._unavailable.setdefault("iowait", "not reported on this platform")
        steal = getattr(times, "steal", None)  # Linux only; inside busy, as psutil sums it
        return SystemSample(
            busy_s=busy, idle_s=idle, iowait_s=iowait, disk_read_bytes=self._disk_read_bytes, steal_s=steal
        )


def _processes(sample: HostSample) -> int:
    """A sample's weight against the samples kept: its processes (a job of many workers weighs more)."""
    return max(1, len(sample.procs))


def _stat_fields(pid: int) -> list[bytes]:
    """/proc/PID/stat's fields after the command's name (which may hold spaces and parentheses):
    the state is the first."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[1].split()


def _minor_faults(pid: int) -> int:
    """Page faults served without storage since the process started: a page touched for the first
    time, or copied on a write to memory shared with its parent (/proc/PID/stat, ``minflt``)."""
    try:
        return int(_stat_fields(pid)[7])
    except FileNotFoundError:
        raise psutil.NoSuchProcess(pid) from None
    except (OSError, ValueError, IndexError) as exc:  # not Linux, or a stat line of another make
        raise NotImplementedError(str(exc) or type(exc).__name__) from exc


def _started_ns(pid: int) -> int:
    """When the process started, on the monotonic clock: /proc/PID/stat's ``starttime`` (clock
    ticks since boot) against the boot-time clock read now."""
    ticks = int(_stat_fields(pid)[19])
    since_boot_ns = ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    return time.monotonic_ns() - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - since_boot_ns)


def _disk_read_bytes() -> int:
    counters = psutil.disk_io_counters(perdisk=False)
    if counters is None:
        raise NotImplementedError("no disks reported")
    return int(counters.read_bytes)


def _why(exc: BaseException) -> str:
    if isinstance(exc, psutil.AccessDenied):
        return "permission denied"
    return str(exc) or type(exc).__name__


def cpu_count() -> int | None:
    """CPUs the run can use: the affinity mask, lowered by a cgroup CPU quota (containers)."""
    try:
        count: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = psutil.cpu_count()
    quota = cgroup_cpu_quota()
    if quota is not None and count is not None:
        return max(1, min(count, math.ceil(quota)))
    return count


def cgroup_cpu_quota(path: str = "/sys/fs/cgroup/cpu.max") -> float | None:
    """CPUs allowed by a cgroup v2 quota ("200000 100000" = 2.0), or None without one."""
    try:
        with open(path) as handle:
            limit, period = handle.read().split()[:2]
    except (OSError, ValueError):
        return None
    if limit == "max":
        return None
    return int(limit) / int(period)


def available_memory() -> int | None:
    """Bytes of memory new processes can use now without swapping (None if unreadable)."""
    try:
        return int(psutil.virtual_memory().available)
    except (psutil.Error, OSError):
        return None


def oom_kills(path: str = "/proc/vmstat") -> int | None:
    """Processes the kernel's OOM killer has killed since boot (every cgroup's included), or None
    when the counter cannot be read (not Linux, or a kernel before 4.13)."""
    try:
        with open(path) as handle:
            for line in handle:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None
