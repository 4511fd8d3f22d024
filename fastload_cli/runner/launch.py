"""In the parent: run the script once under one mode and return everything measured.

The child runs in its own session (so a terminal's Ctrl-C reaches fastload alone), with an event
pipe of its own. The parent reads events as they arrive, samples the process tree and the GPU,
and decides when to stop: after warm-up + ``--max-batches`` batches, at the timeout, or on
Ctrl-C. Stopping is polite first (a signal that raises in the script's main thread, so its
``finally`` blocks run), then firm: every remaining process of the run is terminated, workers
before the main process, SIGTERM then SIGKILL. Whatever happens, the batches already read are
kept in the result.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import fastload_cli
from fastload_cli.config import RunConfig
from fastload_cli.records import (
    CHANNEL_FD_ENV,
    RUN_ID_ENV,
    GpuSample,
    HostSample,
    RunResult,
    RunStatus,
    SamplerHealth,
    StopReason,
    Streamed,
)
from fastload_cli.records.protocol import BOOTSTRAP, NEXT_SIGNAL, STACK_FILE_ENV, STOP_SIGNAL
from fastload_cli.runner import warm
from fastload_cli.runner.collect import EventCollector
from fastload_cli.runner.processes import (
    ChildProcess,
    ignoring_interrupts,
    interrupts_as_flag,
    pass_on,
    terminate_run,
    terminate_strays,
    wait,
)
from fastload_cli.runner.stacks import StackProbe
from fastload_cli.samplers.gpu import GpuSampler, Nvml
from fastload_cli.samplers.host import HostSampler, available_memory, cpu_count, oom_kills
from fastload_cli.samplers.pyspy import PySpy

HostReadings = tuple[tuple[HostSample, ...], SamplerHealth]
GpuReadings = tuple[tuple[GpuSample, ...], SamplerHealth]

OUTPUT_TAIL_BYTES = 32 * 1024
# The settle rule is asked at most this often: often enough to stop within a batch or two of a
# second-long step, rarely enough that reading every batch so far stays cheap on a long run.
SETTLE_CHECK_S = 0.2
POLL_S = 0.1
DRAIN_S = 1.0
PACKAGE_PARENT = str(Path(fastload_cli.__file__).resolve().parent.parent)  # the child puts it on its path


@dataclass(frozen=True, slots=True)
class Observer:
    """Callbacks for live feedback; the CLI renders them, domain code never prints."""

    on_batches: Callable[[int, int], None] | None = None  # (batches so far, batches wanted)
    on_output: Callable[[bytes], None] | None = None  # the script's own output, as it comes


def child_args(config: RunConfig) -> list[str]:
    """What ``child.main`` reads from its argv: the spec, then the script as given, and its args."""
    return [config.child.to_json(), config.script_arg0, *config.script_args]


def child_command(config: RunConfig) -> list[str]:
    return [config.python, "-c", BOOTSTRAP, PACKAGE_PARENT, *child_args(config)]


class _Run:
    """State of one child run while it is in flight."""

    def __init__(self, config: RunConfig, nvml: Nvml | None, observer: Observer, run_id: str) -> None:
        self.config = config
        self.observer = observer
        self.collector = EventCollector()
        self.tail = bytearray()
        self.run_id = run_id
        self.started_ns = time.monotonic_ns()
        self.started_cpu_s = time.process_time()  # fastload's own CPU, all threads
        self.memory_available = available_memory()
        self.pyspy = PySpy(config.py_spy_s) if config.py_spy_s > 0 else None
        self.stop_reason: StopReason | None = None
        self.stop_asked_at: float | None = None
        self.end_seen_at: float | None = None  # when the child said it is leaving
        self.settle_checked_at = 0.0  # when the settle rule was last asked
        self.next_asked_at = 0  # an in-process run: the settings marked when the next one was last asked for
        self.interrupted = False
        self.oom_kills_before = oom_kills()
        self.stack = StackProbe()
        self.stuck_at: tuple[str, ...] = ()  # the main thread's frames when the timeout hit
        env = dict(os.environ, **{RUN_ID_ENV: self.run_id, STACK_FILE_ENV: self.stack.path})
        self.proc = self.spawn(env)
        self.host = HostSampler(self.proc.pid, config.sample_interval_s)
        self.gpu = GpuSampler(nvml, config.sample_interval_s) if nvml is not None else None
        self.gpu_unavailable: str | None = None

    def spawn(self, env: dict[str, str]) -> ChildProcess:
        """Start the child with an event pipe of its own (``self.events``): forked warm where the
        script allows it (``warm.py``), otherwise a fresh interpreter."""
        read_fd, write_fd = os.pipe()
        try:
            forked = self.spawn_warm(env, write_fd)
            if forked is not None:
                self.events = os.fdopen(read_fd, "rb", buffering=0)
                return forked
            proc = subprocess.Popen(
                child_command(self.config),
                cwd=self.config.cwd,
                env={**env, CHANNEL_FD_ENV: str(write_fd)},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        self.events = os.fdopen(read_fd, "rb", buffering=0)
        return proc

    def spawn_warm(self, env: dict[str, str], event_fd: int) -> warm.ForkedProcess | None:
        """The child forked by the command's warm starter, or None: it starts cold."""
        preloads = warm.preloads_for(self.config.script) if self.config.warm_start else None
        if preloads is None:
            return None
        found = warm.starter(self.config.python, PACKAGE_PARENT, preloads)
        if found is None:
            return None
        args = child_args(self.config)
        out_read, out_write = os.pipe()
        try:
            pid = found.start(args, self.config.cwd, env, out_write, event_fd)
        except warm.WarmStartFailed:
            warm.forget(found)
            os.close(out_read)
            return None
        finally:
            os.close(out_write)
        return warm.ForkedProcess(found, pid, os.fdopen(out_read, "rb", buffering=0), args)

    # -- the loop --------------------------------------------------------------------------

    def watch(self) -> None:
        """Read events and output until the child is gone or must be stopped."""
        deadline = time.monotonic() + self.config.timeout_s
        with self.selector() as selector:
            while self.proc.poll() is None and not self._gave_up() and not self.interrupted:
                if self.stop_asked_at is None and time.monotonic() > deadline:
                    self.stuck_at = self.stack.capture(self.main_pid)
                    self.ask_stop(StopReason.TIMEOUT)
                self.pump(selector, POLL_S)

    def selector(self) -> selectors.DefaultSelector:
        selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        selector.register(self.events, selectors.EVENT_READ, self._on_events)
        selector.register(self.proc.stdout, selectors.EVENT_READ, self._on_output)
        return selector

    def pump(self, selector: selectors.BaseSelector, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for data on either pipe and hand it on; forget closed pipes."""
        for key, _ in selector.select(timeout_s):
            data = _read_some(key.fd)
            if data:
                key.data(data)
            elif data is not None:
                selector.unregister(key.fileobj)

    def _gave_up(self) -> bool:
        """The child was asked to stop (or said it ended) but has not left within the grace."""
        since = self.stop_asked_at if self.stop_asked_at is not None else self.end_seen_at
        return since is not None and time.monotonic() - since > self.config.stop_grace_s

    def _on_events(self, data: bytes) -> None:
        for event in self.collector.feed(data):
            if event["kind"] in ("iterator", "phase"):
                self.host.note_workers(event.get("worker_pids") or [])
            elif event["kind"] == "end":
                self.end_seen_at = time.monotonic()
        self.after_events()

    @property
    def main_pid(self) -> int:
        """The process that runs the script."""
        return self.proc.pid

    def batches_done(self) -> int:
        return self.collector.most_batches()

    def after_events(self) -> None:
        """Progress, py-spy, and the stop once enough batches came."""
        done = self.batches_done()
        if self.pyspy is not None and not self.pyspy.started and done >= max(self.config.warmup, 1):
            self._profile_loading()
        if self.observer.on_batches is not None:
            self.observer.on_batches(done, self.config.requested_batches)
        if self.stop_asked_at is not None or self._profiling():
            return
        if done >= self.config.requested_batches or self._last_setting_done(done):
            self.ask_stop(StopReason.ENOUGH_BATCHES)
        elif done > self.config.warmup and self._settle_due() and self.settled():
            self._settled()

    def _last_setting_done(self, done: int) -> bool:
        """An in-process run's last setting has had the batches planned for it."""
        settings, marks = self.config.child.turns, self.collector.busiest_phases()
        return bool(settings) and len(marks) >= len(settings) and done - marks[-1].batch >= marks[-1].planned

    def _settled(self) -> None:
        """Stable: the run stops, or an in-process run's next setting takes over (asked once a setting)."""
        marks = len(self.collector.busiest_phases())
        if marks >= len(self.config.child.turns):
            self.ask_stop(StopReason.SETTLED)
        elif marks > self.next_asked_at:
            self.next_asked_at = marks
            self._signal(NEXT_SIGNAL)

    def _settle_due(self) -> bool:
        """Time to ask the settle rule again (it reads every batch): at most every ``SETTLE_CHECK_S``."""
        now = time.monotonic()
        if now - self.settle_checked_at < SETTLE_CHECK_S:
            return False
        self.settle_checked_at = now
        return True

    def settled(self) -> bool:
        """The throughput estimate is as stable as the run's settle rule asks (never without one)."""
        return self.config.settle is not None and self.config.settle(self.streamed(self.collector))

    def streamed(self, c: EventCollector) -> Streamed:
        return Streamed(
            batches=tuple(c.batches),
            loaders=tuple(c.loaders),
            iterators=tuple(c.iterators),
            warmup_batches=self.config.warmup,
            requested_batches=self.config.requested_batches,
            phases=tuple(c.phases),
        )

    def _profiling(self) -> bool:
        """py-spy is sampling the loading processes: the run goes on until it is done (the batches
        past the requested ones are not measured)."""
        return self.pyspy is not None and self.pyspy.running()

    def _profile_loading(self) -> None:
        """Start py-spy on the processes that load: the current epoch's workers, or the script's
        own process when it loads in the main process."""
        assert self.pyspy is not None
        workers = next((list(it.worker_pids) for it in reversed(self.collector.iterators) if it.worker_pids), [])
        self.pyspy.start(workers or [self.main_pid], "workers" if workers else "main")

    def _on_output(self, data: bytes) -> None:
        self.tail.extend(data)
        del self.tail[:-OUTPUT_TAIL_BYTES]
        if self.observer.on_output is not None:
            self.observer.on_output(data)

    def ask_stop(self, reason: StopReason) -> None:
        self.stop_reason, self.stop_asked_at = self.stop_reason or reason, time.monotonic()
        self._signal(STOP_SIGNAL)

    def _signal(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, number)

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        """Terminate what is left of the run, then read what the pipes still hold."""
        adopter = self.proc.starter.proc.pid if isinstance(self.proc, warm.ForkedProcess) else None
        terminate_run(self.proc, self.run_id, self.host.tracked_pids(), adopter)
        self.stack.close()
        deadline = time.monotonic() + DRAIN_S
        with self.selector() as selector:
            while selector.get_map() and time.monotonic() < deadline:
                self.pump(selector, max(0.0, deadline - time.monotonic()))
        self.close_events()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def close_events(self) -> None:
        self.events.close()

    def result(self, host: HostReadings, gpu: GpuReadings | None) -> RunResult:
        c = self.collector
        status, reason = self._status()
        return self.result_of(
            c,
            host,
            gpu,
            status=status,
            stop_reason=reason,
            exit_code=c.end_exit_code if c.end_exit_code is not None else self.proc.returncode,
            signal_name=_signal_name(self.proc.returncode) if c.end_reason is None else None,
        )

    def result_of(self, c: EventCollector, host: HostReadings, gpu: GpuReadings | None, **outcome: Any) -> RunResult:
        """What ``c`` heard, with the run's samples and the outcome given (status, stop reason,
        exit code, signal)."""
        gpu_samples, gpu_health = gpu if gpu is not None else ((), None)
        gpu_unavailable = self.gpu_unavailable
        if gpu_health is not None and gpu_health.unavailable and not gpu_samples:
            gpu_unavailable = "; ".join(gpu_health.unavailable)
        return RunResult(
            spec=self.config.spec,
            requested_batches=self.config.requested_batches,
            warmup_batches=self.config.warmup,
            started_ns=self.started_ns,
            ended_ns=time.monotonic_ns(),
            error=c.error,
            output_tail=self.tail.decode(errors="replace"),
            cpu_count=cpu_count(),
            env=c.env,
            loaders=tuple(c.loaders),
            iterators=tuple(c.iterators),
            batches=tuple(c.batches),
            layouts=tuple(c.layouts),
            substitutions=tuple(c.substitutions),
            host_samples=host[0],
            host_health=host[1],
            gpu_samples=gpu_samples,
            gpu_health=gpu_health,
            breakdown=c.breakdown,
            phases=tuple(c.phases),
            gpu_unavailable=gpu_unavailable,
            schedstat=c.schedstat,
            profiler_cpu_s=time.process_time() - self.started_cpu_s,
            memory_available_bytes=self.memory_available,
            stuck_at=self.stuck_at,
            oom_kills=self._oom_kills(),
            rank=c.rank,
            local_rank=c.local_rank,
            world_size=c.world_size,
            **outcome,
        )

    def _oom_kills(self) -> int | None:
        """Processes the kernel's OOM killer killed during the run (on the whole machine)."""
        before, after = self.oom_kills_before, oom_kills()
        return after - before if before is not None and after is not None else None

    def _status(self) -> tuple[RunStatus, StopReason]:
        return self.stopped() or ended(self.collector)

    def stopped(self) -> tuple[RunStatus, StopReason] | None:
        """The outcome of a stop fastload made, or None when the run ended by itself."""
        if self.interrupted:
            return RunStatus.INTERRUPTED, StopReason.INTERRUPTED
        if self.stop_reason in (StopReason.ENOUGH_BATCHES, StopReason.SETTLED):
            return RunStatus.OK, self.stop_reason
        if self.stop_reason is StopReason.TIMEOUT:
            return RunStatus.TIMEOUT, StopReason.TIMEOUT
        return None


def ended(c: EventCollector) -> tuple[RunStatus, StopReason]:
    """The outcome of a process that ended by itself, as it said when it left."""
    if c.end_reason is StopReason.SCRIPT_ENDED:
        return (RunStatus.OK if c.end_exit_code == 0 else RunStatus.FAILED), StopReason.SCRIPT_ENDED
    if c.end_reason is StopReason.SCRIPT_RAISED:
        return RunStatus.FAILED, StopReason.SCRIPT_RAISED
    return RunStatus.FAILED, StopReason.CHILD_DIED


def run_mode(config: RunConfig, nvml: Nvml | str | None = None, observer: Observer | None = None) -> RunResult:
    """Run the script once under ``config.spec`` and return what was measured.

    ``nvml`` is an open NVML (sampled), or the reason there is none. Ctrl-C (KeyboardInterrupt)
    during the run stops it and returns a result with status ``interrupted``.
    """
    run_id = uuid.uuid4().hex
    kind = _Run
    if config.launcher is not None:
        from fastload_cli.runner.job import JobRun as kind  # the job's run builds on this module's
    try:
        run = kind(config, nvml if isinstance(nvml, Nvml) else None, observer or Observer(), run_id)
    except KeyboardInterrupt:  # Ctrl-C while spawning: the child may exist, untracked
        with ignoring_interrupts():
            terminate_strays(run_id)
        raise
    if isinstance(nvml, str):
        run.gpu_unavailable = nvml
    run.host.start()
    if run.gpu is not None:
        run.gpu.start()
    caught: dict[int, Any] = {}  # signals that came while the run was watched, with the handlers they met
    try:
        with interrupts_as_flag(run, caught):
            run.watch()
    except KeyboardInterrupt:
        run.interrupted = True
    finally:
        with ignoring_interrupts():
            host = run.host.stop()
            gpu = run.gpu.stop() if run.gpu is not None else None
            if run.pyspy is not None and run.interrupted:
                run.pyspy.kill()
            profile = run.pyspy.stop() if run.pyspy is not None else None
            if run.stop_asked_at is None and run.proc.poll() is None:
                run.ask_stop(StopReason.INTERRUPTED)
                wait(run.proc, config.stop_grace_s)
            run.finish()
    pass_on(caught)
    return replace(run.result(host, gpu), profile=profile)


def _read_some(fd: int) -> bytes | None:
    """Up to 64 KiB from a pipe the selector said is readable: b"" at end of file, None when
    there was nothing after all."""
    try:
        return os.read(fd, 65536)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
