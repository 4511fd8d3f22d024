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

import os
import time
import uuid
from dataclasses import replace
from typing import Any

from fastload_cli.config import RunConfig
from fastload_cli.records import RUN_ID_ENV, RunResult, StopReason
from fastload_cli.records.protocol import STACK_FILE_ENV
from fastload_cli.runner.ended import ended, signal_name
from fastload_cli.runner.flight import Flight, GpuReadings, HostReadings, Observer
from fastload_cli.runner.job import job_result, start_job
from fastload_cli.runner.processes import ignoring_interrupts, interrupts_as_flag, pass_on, terminate_strays, wait
from fastload_cli.runner.stacks import StackProbe
from fastload_cli.runner.start import Started, start_single
from fastload_cli.runner.stopping import Before
from fastload_cli.samplers.gpu import GpuSampler, Nvml
from fastload_cli.samplers.host import HostSampler, available_memory, oom_kills

__all__ = ["Observer", "run_mode"]


def run_mode(config: RunConfig, nvml: Nvml | str | None = None, observer: Observer | None = None) -> RunResult:
    """Run the script once under ``config.spec`` and return what was measured.

    ``nvml`` is an open NVML (sampled), or the reason there is none. Ctrl-C (KeyboardInterrupt)
    during the run stops it and returns a result with status ``interrupted``.
    """
    run_id, stack = uuid.uuid4().hex, StackProbe()
    before = Before(
        started_ns=time.monotonic_ns(),
        cpu_s=time.process_time(),
        memory_available=available_memory(),
        oom_kills=oom_kills(),
    )
    started = _start(config, run_id, stack)
    flight = Flight(
        config=config,
        started=started,
        observer=observer or Observer(),
        run_id=run_id,
        before=before,
        stack=stack,
        host=HostSampler(started.proc.pid, config.sample_interval_s),
        gpu=GpuSampler(nvml, config.sample_interval_s) if isinstance(nvml, Nvml) else None,
        gpu_unavailable=nvml if isinstance(nvml, str) else None,
    )
    return _watched(flight)


def _start(config: RunConfig, run_id: str, stack: StackProbe) -> Started:
    """The run's processes, started as the run asks: a job through torch's launcher, else one
    process, warm or cold. Ctrl-C while starting: whatever was started is found by the run id."""
    env = dict(os.environ, **{RUN_ID_ENV: run_id, STACK_FILE_ENV: stack.path})
    try:
        return (start_job if config.launcher is not None else start_single)(config, env)
    except KeyboardInterrupt:
        with ignoring_interrupts():
            terminate_strays(run_id)
            stack.close()
        raise


def _watched(flight: Flight) -> RunResult:
    """Watch the run to its end (Ctrl-C, SIGTERM and SIGHUP stop it), clean up, and read the result.
    The samplers start inside the watch, so a signal that comes as they start still stops the run."""
    caught: dict[int, Any] = {}  # signals that came while the run was watched, with the handlers they met
    try:
        with interrupts_as_flag(flight, caught):
            flight.host.start()
            if flight.gpu is not None:
                flight.gpu.start()
            flight.watch()
    except KeyboardInterrupt:
        flight.interrupted = True
    finally:
        with ignoring_interrupts():
            host = flight.host.stop()
            gpu = flight.gpu.stop() if flight.gpu is not None else None
            if flight.pyspy is not None and flight.interrupted:
                flight.pyspy.kill()
            profile = flight.pyspy.stop() if flight.pyspy is not None else None
            if flight.stop.asked_at is None and flight.proc.poll() is None:
                flight.ask_stop(StopReason.INTERRUPTED)
                wait(flight.proc, flight.config.stop_grace_s)
            flight.finish()
    pass_on(caught)
    read = job_result if flight.config.launcher is not None else single_result
    return replace(read(flight, host, gpu), profile=profile)


def single_result(flight: Flight, host: HostReadings, gpu: GpuReadings | None) -> RunResult:
    """The result of a run of one process: its stop, else how it ended, as it said or as it died."""
    c, proc = flight.collectors[0], flight.proc
    status, reason = flight.stopped() or ended(c)
    return flight.result_of(
        c,
        host,
        gpu,
        status=status,
        stop_reason=reason,
        exit_code=c.end_exit_code if c.end_exit_code is not None else proc.returncode,
        signal_name=signal_name(proc.returncode) if c.end_reason is None else None,
    )
