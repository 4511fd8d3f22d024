"""A run in flight, in the parent: one watch loop for every way a run starts (``start.py``).

The run is heard through one event collector per process that runs the script: one for a single
process, one per local rank for a data-parallel job. Everything the loop decides reads all of
them alike: the run has its batches when the slowest rank has them, has settled when every rank
has, and has ended when every rank said so. The stop goes to the process that runs the script, or
to every rank at once (never to a job's launcher, which would tear the job down).
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.config import RunConfig
from fastload_cli.records import (
    GpuSample,
    HostSample,
    Mode,
    RunResult,
    RunStatus,
    SamplerHealth,
    StopReason,
    Streamed,
)
from fastload_cli.records.protocol import NEXT_SIGNAL, RIDE_BUDGET_S, STOP_SIGNAL
from fastload_cli.runner.collect import EventCollector
from fastload_cli.runner.kept import for_run as kept_for
from fastload_cli.runner.processes import terminate_run
from fastload_cli.runner.reach import reach_s, replay_s, stalled
from fastload_cli.runner.stacks import StackProbe
from fastload_cli.runner.start import Started
from fastload_cli.runner.stopping import Before, Stopping
from fastload_cli.samplers.gpu import GpuSampler
from fastload_cli.samplers.host import HostSampler, cpu_count, oom_kills
from fastload_cli.samplers.pyspy import PySpy

HostReadings = tuple[tuple[HostSample, ...], SamplerHealth]
GpuReadings = tuple[tuple[GpuSample, ...], SamplerHealth]

OUTPUT_TAIL_BYTES = 32 * 1024
# The settle rule is asked at most this often: often enough to stop within a batch or two of a
# step of 30 ms (at 0.2 s, in-memory-tensors' and borderline's runs went on 5-10 batches past
# their stop), rarely enough that reading every batch so far stays cheap on a long run.
SETTLE_CHECK_S = 0.05
# ...and never sooner than this many times as long as the last check took: it reads every batch,
# so on a run of many thousands the checks use at most about a tenth of the parent's time.
SETTLE_COST_FACTOR = 10.0
POLL_S = 0.1
# Once the run was asked to stop or said it is leaving, how often its exit is looked for: no event
# wakes the loop at its exit (its pipes stay open while its workers shut down), and every run would
# wait out half a POLL_S (a forked run's 0.13 s from its END to its exit seen; 0.04-0.06 s at this).
ENDING_POLL_S = 0.01
DRAIN_S = 1.0


@dataclass(frozen=True, slots=True)
class Observer:
    """Callbacks for live feedback; the CLI renders them, domain code never prints."""

    on_batches: Callable[[int, int], None] | None = None  # (batches so far, batches wanted)
    on_output: Callable[[bytes], None] | None = None  # the script's own output, as it comes


@dataclass(slots=True)
class Flight:
    """One run in flight: heard, sampled, stopped and read back."""

    config: RunConfig
    started: Started
    observer: Observer
    run_id: str
    before: Before
    stack: StackProbe
    host: HostSampler
    gpu: GpuSampler | None = None
    gpu_unavailable: str | None = None
    collectors: dict[int, EventCollector] = field(init=False)  # one per process that runs the script
    tail: bytearray = field(default_factory=bytearray)
    stop: Stopping = field(default_factory=Stopping)
    pyspy: PySpy | None = field(init=False)
    settle_checked_at: float = 0.0  # when the settle rule was last asked
    settle_cost_s: float = 0.0  # how long it took
    settle_put_off_until: float | None = None  # batches came the settle rule reads then, not a pause later
    next_asked_at: int = 0  # an in-process run: the settings marked when the next one was last asked for
    switched_at: int | None = None  # a real+synthetic run: the batches done when the replays were asked for
    reaching_since: float | None = None  # held past its batches for its epoch's end since then
    held: StopReason | None = None  # settled, and held for its epoch's near end: the reason it stops with after
    batch_heard_at: float = 0.0  # when the last batch was heard
    batch_last: bool = False  # the last event heard was a batch: a quiet since is a wait for the next

    def __post_init__(self) -> None:
        self.collectors = {rank: EventCollector(kept=kept_for(self.config)) for rank in self.started.events}
        self.pyspy = PySpy(self.config.py_spy_s) if self.config.py_spy_s > 0 else None

    @property
    def proc(self) -> Any:
        return self.started.proc

    @property
    def interrupted(self) -> bool:
        return self.stop.interrupted

    @interrupted.setter
    def interrupted(self, value: bool) -> None:  # ``processes.interrupts_as_flag`` sets it
        self.stop.interrupted = value

    @property
    def main_pid(self) -> int:
        """The process that runs the script (a job: local rank 0, once it said hello)."""
        return self.started.script_pid or self.collectors[0].pid or self.proc.pid

    # -- the loop --------------------------------------------------------------------------

    def watch(self) -> None:
        """Read events and output until the run is gone or must be stopped."""
        deadline = time.monotonic() + self.config.timeout_s
        with self.selector() as selector:
            while self.proc.poll() is None and not self._gave_up() and not self.interrupted:
                if self.stop.asked_at is None and time.monotonic() > deadline:
                    self.stop.stuck_at = self.stack.capture(self.main_pid)
                    self.ask_stop(StopReason.TIMEOUT)
                elif self.stop.asked_at is None and self.stop.lost.lost(time.monotonic()):
                    self.ask_stop(StopReason.BATCH_LOST)  # where it waits is known: no stack to read
                elif self.stop.asked_at is None and self._reach_spent():
                    self._enough(StopReason.ENOUGH_BATCHES)
                elif self.stop.asked_at is None and self._stalled():
                    self.ask_stop(StopReason.ENOUGH_BATCHES)
                elif self.stop.asked_at is None and time.monotonic() >= (self.settle_put_off_until or float("inf")):
                    self.after_events()
                self.pump(selector, ENDING_POLL_S if self.ending else POLL_S)

    @property
    def ending(self) -> bool:
        """The run was asked to stop, or said it is leaving."""
        return self.stop.asked_at is not None or self.stop.end_seen_at is not None

    def selector(self) -> selectors.DefaultSelector:
        selector = selectors.DefaultSelector()
        for rank, stream in self.started.events.items():
            selector.register(stream, selectors.EVENT_READ, functools.partial(self._on_events, rank))
        selector.register(self.proc.stdout, selectors.EVENT_READ, self._on_output)
        return selector

    def pump(self, selector: selectors.BaseSelector, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for data on any pipe and hand it on; forget closed pipes."""
        for key, _ in selector.select(timeout_s):
            data = _read_some(key.fd)
            if data:
                key.data(data)
            elif data is not None:
                selector.unregister(key.fileobj)

    def _gave_up(self) -> bool:
        """The run was asked to stop (or said it ended) but has not left within the grace."""
        since = self.stop.asked_at if self.stop.asked_at is not None else self.stop.end_seen_at
        return since is not None and time.monotonic() - since > self.config.stop_grace_s

    def _on_events(self, rank: int, data: bytes) -> None:
        self.stop.lost.on_events(time.monotonic())
        for event in self.collectors[rank].feed(data):
            self.batch_last = event["kind"] == "batch"
            if event["kind"] == "batch":
                self.batch_heard_at = time.monotonic()
            elif event["kind"] in ("iterator", "phase"):
                self.host.note_workers(event.get("worker_pids") or [])
                self.stop.lost.moved_on()
            elif event["kind"] == "hello":
                self._every_rank_heard()
            elif event["kind"] == "end" and all(c.end_reason is not None for c in self.collectors.values()):
                self.stop.end_seen_at = time.monotonic()
        self.after_events()

    def _every_rank_heard(self) -> None:
        """Once every rank has opened its FIFO (it says hello after), the folder is removed: nothing
        of the job is left on disk whatever ends fastload. Not where the launcher may restart ranks,
        which open their FIFOs again."""
        restarts = self.config.launcher is not None and self.config.launcher.max_restarts > 0
        if self.started.folder is None or restarts or not all(c.pid for c in self.collectors.values()):
            return
        shutil.rmtree(self.started.folder, ignore_errors=True)
        self.started.folder = None

    def batches_done(self) -> int:
        """Batches every process that runs the script has: a job has them when its last rank has."""
        return min(c.most_batches() for c in self.collectors.values())

    def after_events(self) -> None:
        """Progress, py-spy, and the stop once enough batches came."""
        done = self.batches_done()
        if not self.stop.window_read and done >= max(self.config.warmup, 1):
            self.stop.window_read = True
            self.host.read_memory_now()  # the measured window starts: the workers' memory at its start
        if self.pyspy is not None and not self.pyspy.started and done >= max(self.config.warmup, 1):
            self._profile_loading()
        if self.observer.on_batches is not None:
            self.observer.on_batches(done, self.config.requested_batches)
        if self.stop.asked_at is not None or self._profiling():
            return
        if self.held is not None:  # settled: only the epoch's end is awaited, heard at the event that ends it
            if not self._reaching():
                self._enough(self.held)
            return
        if done >= self._wanted() or self._last_setting_done(done):
            if not self._reaching():
                self._enough(StopReason.ENOUGH_BATCHES)
        elif done > self.config.warmup and self._settle_due() and self.settled():
            self._settled()

    def _wanted(self) -> int:
        """The batches the part in force asks for: a real+synthetic run's replays as many after the
        first (its step holds the workers' shutdown) as its real part measured; none where the
        child said its batch could not be copied, and no end before the first replay came."""
        if self.switched_at is None:
            return self.config.requested_batches
        firsts = [c.first_replay() for c in self.collectors.values()]
        if None in firsts:
            return self.switched_at if any(c.replay_refused() for c in self.collectors.values()) else sys.maxsize
        return max(f for f in firsts if f is not None) + 1 + self.config.max_batches

    def _enough(self, reason: StopReason) -> None:
        """The part in force is measured: a real+synthetic run's replays begin (the workers' memory
        read while they still run; the first awaited as an epoch's near end is), or the run stops."""
        self.held = None
        if self.config.spec.mode is Mode.REAL_SYNTHETIC and self.switched_at is None:
            self.host.read_memory_now()
            self.switched_at, self.reaching_since = self.batches_done(), time.monotonic()
            self._signal(NEXT_SIGNAL)
        else:
            self.ask_stop(reason)

    def _reaching(self) -> bool:
        """The run goes on to the end of its training loader's epoch, which is near (``RunConfig.reach``),
        within ``reach.reach_s`` of its time: a whole epoch is then measured, what it costs besides
        its steps included."""
        reach = None if self.switched_at is not None else self.config.reach  # the real part's alone
        if reach is None or not all(reach(self.streamed(c)) for c in self.collectors.values()):
            return False
        if self.reaching_since is None:
            self.reaching_since = time.monotonic()
        return not self._reach_spent()

    def _reach_spent(self) -> bool:
        """The run was held past its batches as long as ``reach`` allows: for its epoch's near end, or for
        the first replay (from the ask or the last batch heard since)."""
        since = self.reaching_since
        if since is None or (self.switched_at is not None and self._wanted() < sys.maxsize):
            return False
        ran_s = since - self.before.started_ns / 1e9
        if self.switched_at is None:
            return time.monotonic() - since > reach_s(ran_s)
        ride = RIDE_BUDGET_S if self.config.child.breakdown_items else 0.0
        allowed = replay_s(ran_s, self.stop.lost.longest_gap_s, ride)
        return time.monotonic() - max(since, self.batch_heard_at) > allowed

    def _stalled(self) -> bool:
        """A real run (or a real+synthetic run's real part) that may stop once settled measured its
        window, and its loop has waited for a batch since longer than ``reach.stalled`` allows: it
        stops (not where its batches are fixed, nor once its replays were asked for: ``replay_s``)."""
        real = self.config.settle is not None and self.config.spec.mode in (Mode.REAL, Mode.REAL_SYNTHETIC)
        if not real or self.switched_at is not None or not self.batch_last:
            return False
        return stalled(time.monotonic() - self.batch_heard_at, self.batches_done() - self.config.warmup)

    def _last_setting_done(self, done: int) -> bool:
        """An in-process run's last setting has had the batches planned for it."""
        settings, marks = self.config.child.turns, self.collectors[0].busiest_phases()
        return bool(settings) and len(marks) >= len(settings) and done - marks[-1].batch >= marks[-1].planned

    def _settled(self) -> None:
        """Stable: the run stops, or an in-process run's next setting takes over (asked once a setting)."""
        marks = len(self.collectors[0].busiest_phases())
        if marks >= len(self.config.child.turns):
            if not self._reaching():
                self._enough(StopReason.SETTLED)
            else:
                self.held = StopReason.SETTLED
        elif marks > self.next_asked_at:
            self.next_asked_at = marks
            self._signal(NEXT_SIGNAL)

    def _settle_due(self) -> bool:
        """The settle rule may be asked again (``SETTLE_CHECK_S``); if not, ``watch`` asks it once it may."""
        now, wait = time.monotonic(), max(SETTLE_CHECK_S, SETTLE_COST_FACTOR * self.settle_cost_s)
        if now - self.settle_checked_at < wait:
            self.settle_put_off_until = self.settle_checked_at + wait
            return False
        self.settle_checked_at, self.settle_put_off_until = now, None
        return True

    def settled(self) -> bool:
        """Every process's estimate is as stable as the run's settle rule asks (never without one;
        a real+synthetic run's replays, never before the first came)."""
        settle, collectors = self.config.settle, self.collectors.values()
        started = time.monotonic()
        waiting = self.switched_at is not None and any(c.first_replay() is None for c in collectors)
        found = settle is not None and not waiting and all(settle(self.streamed(c)) for c in collectors)
        self.settle_cost_s = time.monotonic() - started
        return found

    def streamed(self, c: EventCollector) -> Streamed:
        return Streamed(
            batches=c.batches,
            loaders=tuple(c.loaders),
            iterators=tuple(c.iterators),
            warmup_batches=self.config.warmup,
            requested_batches=self.config.requested_batches,
            phases=tuple(c.phases),
            folded=c.folded(),
        )

    def _profiling(self) -> bool:
        """py-spy is sampling the loading processes: the run goes on until it is done (the batches
        past the requested ones are not measured)."""
        return self.pyspy is not None and self.pyspy.running()

    def _profile_loading(self) -> None:
        """Start py-spy on the processes that load: the current epoch's workers, or the script's
        own process when it loads in the main process."""
        assert self.pyspy is not None
        iterators = self.collectors[0].iterators
        workers = next((list(it.worker_pids) for it in reversed(iterators) if it.worker_pids), [])
        self.pyspy.start(workers or [self.main_pid], "workers" if workers else "main")

    def _on_output(self, data: bytes) -> None:
        self.tail.extend(data)
        del self.tail[:-OUTPUT_TAIL_BYTES]
        self.stop.lost.on_output(self.tail, len(data), time.monotonic())
        if self.observer.on_output is not None:
            self.observer.on_output(data)

    def ask_stop(self, reason: StopReason) -> None:
        if self.stop.asked_at is None and reason in (StopReason.ENOUGH_BATCHES, StopReason.SETTLED):
            self.host.read_memory_now()  # ... and at its end, while the workers still run
        self.stop.reason, self.stop.asked_at = self.stop.reason or reason, time.monotonic()
        self._signal(STOP_SIGNAL)

    def _signal(self, number: int) -> None:
        """To the process that runs the script, or to every rank that said hello."""
        pids = [self.started.script_pid] if self.started.script_pid else [c.pid for c in self.collectors.values()]
        for pid in pids:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, number)

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Terminate what is left of the run, then read what the pipes still hold."""
        for fd in self.started.held:  # the ranks are gone: let the FIFOs end once drained
            os.close(fd)
        self.started.held.clear()
        terminate_run(self.proc, self.run_id, self.host.tracked_pids(), self.started.adopter)
        self.stack.close()
        deadline = time.monotonic() + DRAIN_S
        with self.selector() as selector:
            while selector.get_map() and time.monotonic() < deadline:
                self.pump(selector, max(0.0, deadline - time.monotonic()))
        for stream in self.started.events.values():
            with contextlib.suppress(OSError):
                stream.close()
        if self.started.folder is not None:
            shutil.rmtree(self.started.folder, ignore_errors=True)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def result_of(self, c: EventCollector, host: HostReadings, gpu: GpuReadings | None, **outcome: Any) -> RunResult:
        """What ``c`` heard, with the run's samples and the outcome given (status, stop reason,
        exit code, signal)."""
        gpu_samples, gpu_health = gpu if gpu is not None else ((), None)
        unreadable = gpu_health is not None and gpu_health.unavailable and not gpu_samples
        gpu_unavailable = "; ".join(gpu_health.unavailable) if unreadable and gpu_health else self.gpu_unavailable
        return RunResult(
            spec=self.config.spec,
            requested_batches=self.config.requested_batches,
            warmup_batches=self.config.warmup,
            started_ns=self.before.started_ns,
            ended_ns=time.monotonic_ns(),
            error=c.error,
            output_tail=self.tail.decode(errors="replace"),
            cpu_count=cpu_count(),
            env=c.env,
            loaders=tuple(c.loaders),
            iterators=tuple(c.iterators),
            batches=c.batches,
            folded=c.folded(),
            layouts=tuple(c.layouts),
            substitutions=tuple(c.substitutions),
            host_samples=host[0],
            host_health=host[1],
            gpu_samples=gpu_samples,
            gpu_health=gpu_health,
            breakdown=c.breakdown,
            breakdown_ns=c.breakdown_ns,
            phases=tuple(c.phases),
            gpu_unavailable=gpu_unavailable,
            schedstat=c.schedstat,
            profiler_cpu_s=time.process_time() - self.before.cpu_s,
            channel_bytes=c.channel_bytes,
            memory_available_bytes=self.before.memory_available,
            stuck_at=self.stop.stuck_at,
            oom_kills=self._oom_kills(),
            rank=c.rank,
            local_rank=c.local_rank,
            world_size=c.world_size,
            **outcome,
        )

    def _oom_kills(self) -> int | None:
        """Processes the kernel's OOM killer killed during the run (on the whole machine)."""
        before, after = self.before.oom_kills, oom_kills()
        return after - before if before is not None and after is not None else None

    def stopped(self) -> tuple[RunStatus, StopReason] | None:
        """The outcome of a stop fastload made, or None when the run ended by itself."""
        if self.interrupted:
            return RunStatus.INTERRUPTED, StopReason.INTERRUPTED
        if self.stop.reason in (StopReason.ENOUGH_BATCHES, StopReason.SETTLED):
            return RunStatus.OK, self.stop.reason
        if self.stop.reason is StopReason.TIMEOUT:
            return RunStatus.TIMEOUT, StopReason.TIMEOUT
        if self.stop.reason is StopReason.BATCH_LOST:
            return RunStatus.FAILED, StopReason.BATCH_LOST
        return None


def _read_some(fd: int) -> bytes | None:
    """Up to 64 KiB from a pipe the selector said is readable: b"" at end of file, None when
    there was nothing after all."""
    try:
        return os.read(fd, 65536)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""
