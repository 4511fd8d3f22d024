"""In the parent: run a data-parallel job once under one mode, through PyTorch's own launcher.

``python -m torch.distributed.run [the user's launcher options] --no-python PYTHON -c BOOTSTRAP ...``
starts the elastic agent (what ``torchrun`` runs), which starts every local rank with fastload's
child bootstrap, so each rank is a sensor like a single-process child. The launcher passes no file
descriptors on, so each rank streams its events into a FIFO of its own (``events.<LOCAL_RANK>`` in
a folder named by ``CHANNEL_DIR_ENV``). The parent samples the whole tree (the agent, every rank,
every rank's workers) and stops the job once every rank has its batches: the stop signal goes to
every rank at once, and a rank still blocked in a collective whose peers have left is terminated
with the rest of the tree after the grace.

The watch loop is the one every run has (``flight.py``), over one collector per local rank.
One run of a mode stays one ``RunResult``: the view of one rank (the lowest local rank, or the
first that failed), with every rank's own result in ``ranks``, each with host samples whose roles
are its own (its process is MAIN, its workers are WORKER, the other ranks are OTHER).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import IO

import psutil

from fastload_cli.config import RunConfig
from fastload_cli.records import (
    CHANNEL_DIR_ENV,
    HostSample,
    ProcRole,
    RunResult,
    RunStatus,
    StopReason,
)
from fastload_cli.records.protocol import AGENT
from fastload_cli.runner.collect import EventCollector
from fastload_cli.runner.ended import ended, signal_name
from fastload_cli.runner.flight import Flight, GpuReadings, HostReadings
from fastload_cli.runner.start import Started, child_command


def launcher_command(config: RunConfig) -> list[str]:
    """torchrun's command line for this run: the launcher (started to die with fastload,
    ``records.protocol.AGENT``), its options, then every rank's bootstrap."""
    launcher = config.launcher
    assert launcher is not None
    python, *rank_args = child_command(config)
    return [python, "-c", AGENT, str(os.getpid()), *launcher.arguments(), "--no-python", python, *rank_args]


def start_job(config: RunConfig, env: dict[str, str]) -> Started:
    """The launcher's agent, which starts every local rank; each rank's events come through a FIFO
    of its own, whose write end the parent holds so that none reads as ended before its rank opens it."""
    launcher = config.launcher
    assert launcher is not None
    sweep_folders()
    folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
    events: dict[int, IO[bytes]] = {}
    held: list[int] = []
    for rank in range(launcher.nproc_per_node):
        path = os.path.join(folder, f"events.{rank}")
        os.mkfifo(path, 0o600)
        events[rank] = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb", buffering=0)
        held.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    proc = subprocess.Popen(
        launcher_command(config),
        cwd=config.cwd,
        env={**env, CHANNEL_DIR_ENV: folder},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return Started(proc=proc, events=events, script_pid=None, held=held, folder=folder)


FOLDER_PREFIX = "fastload-job-"  # then fastload's pid: a folder whose fastload died is swept


def sweep_folders() -> None:
    """Remove the FIFO folders of jobs whose fastload was killed before it could (SIGKILL)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*"):
        owner = folder.name.removeprefix(FOLDER_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not psutil.pid_exists(int(owner)):  # another user's counts as alive
            shutil.rmtree(folder, ignore_errors=True)


def job_result(flight: Flight, host: HostReadings, gpu: GpuReadings | None) -> RunResult:
    """The job's result: the view of one rank (the first that failed, else the lowest that said
    hello), with every rank's own result in ``ranks``."""
    collectors = flight.collectors
    ranks = tuple(_with_root_cause(flight, _rank_result(flight, c, host, gpu)) for c in collectors.values())
    heard = [r for r in ranks if r.rank is not None]
    # The first rank to raise: the others raise after it, in a collective whose peer is gone. By when
    # the exception reached each rank, not when the rank left: a rank whose peer tore the process
    # group down may leave before the rank that raised first has said so.
    first = sorted(collectors, key=lambda k: collectors[k].raised_ns or collectors[k].end_ns or 0)
    raised = [ranks[k] for k in first if ranks[k].status is RunStatus.FAILED and ranks[k].error is not None]
    failed = raised[0] if raised else None
    killed = next((r for r in heard if r.signal_name is not None and r.stop_reason is StopReason.CHILD_DIED), None)
    if not heard:  # the launcher failed before any rank started (a port in use, a bad option)
        status, reason = flight.stopped() or (RunStatus.FAILED, StopReason.SCRIPT_ENDED)
        return replace(ranks[0], status=status, stop_reason=reason, exit_code=flight.proc.returncode)
    view = failed or killed or heard[0]
    status, reason = _job_status(flight, ranks)
    return replace(view, status=status, stop_reason=reason, ranks=tuple(sorted(heard, key=_rank_order)))


def _with_root_cause(flight: Flight, run: RunResult) -> RunResult:
    """The rank the launcher names as the job's first failure, with how it ended (its exit status,
    or the signal that killed it): fastload does not see the ranks' exit statuses itself."""
    found = ROOT_CAUSE.search(flight.tail.decode(errors="replace"))
    if found is None or run.rank != int(found["rank"]) or run.stop_reason is not StopReason.CHILD_DIED:
        return run
    code = int(found["code"])
    return replace(run, exit_code=code, signal_name=signal_name(code) if code < 0 else None)


def _rank_result(flight: Flight, c: EventCollector, host: HostReadings, gpu: GpuReadings | None) -> RunResult:
    status, reason = _status_of(flight, c)
    samples = as_rank(host[0], c.pid, _worker_pids(c))
    return flight.result_of(c, (samples, host[1]), gpu, status=status, stop_reason=reason, exit_code=c.end_exit_code)


def _status_of(flight: Flight, c: EventCollector) -> tuple[RunStatus, StopReason]:
    """A rank's outcome: what it said as it left when it raised before the stop (a collective
    whose peers were stopped first may raise after it: that is the stop), else the job's stop,
    else its own end."""
    asked = flight.stop.asked_at
    after_stop = asked is not None and c.end_ns is not None and c.end_ns / 1e9 >= asked
    if c.end_reason is StopReason.SCRIPT_RAISED and not after_stop:
        return RunStatus.FAILED, StopReason.SCRIPT_RAISED
    return flight.stopped() or ended(c)


def _job_status(flight: Flight, ranks: tuple[RunResult, ...]) -> tuple[RunStatus, StopReason]:
    """The job's outcome: a stop fastload made, else the worst of the ranks' (a rank that
    raised, one that died, one that exited with an error), else every rank's clean end."""
    if any(r.stop_reason is StopReason.SCRIPT_RAISED for r in ranks):
        return RunStatus.FAILED, StopReason.SCRIPT_RAISED
    stopped = flight.stopped()
    if stopped is not None:
        return stopped
    if any(r.stop_reason is StopReason.CHILD_DIED for r in ranks):
        return RunStatus.FAILED, StopReason.CHILD_DIED
    failed = any(r.status is RunStatus.FAILED for r in ranks) or flight.proc.returncode not in (0, None)
    return (RunStatus.FAILED if failed else RunStatus.OK), StopReason.SCRIPT_ENDED


# torchrun's failure summary: "Root Cause (first observed failure): ... rank : 1 (local_rank: 1)
#   exitcode : -9 (pid: 123)"
ROOT_CAUSE = re.compile(r"Root Cause.*?\n.*?rank\s*:\s*(?P<rank>\d+).*?exitcode\s*:\s*(?P<code>-?\d+)", re.DOTALL)


def _worker_pids(c: EventCollector) -> frozenset[int]:
    return frozenset(pid for it in c.iterators for pid in it.worker_pids)


def _rank_order(run: RunResult) -> int:
    return run.rank if run.rank is not None else -1


def as_rank(samples: tuple[HostSample, ...], pid: int | None, workers: frozenset[int]) -> tuple[HostSample, ...]:
    """The tree's samples with roles as one rank sees them: its process MAIN, its DataLoader workers
    WORKER, everything else (the agent, the other ranks and theirs) OTHER."""

    def role(proc_pid: int) -> ProcRole:
        return ProcRole.MAIN if proc_pid == pid else ProcRole.WORKER if proc_pid in workers else ProcRole.OTHER

    return tuple(replace(sample, procs=tuple(replace(p, role=role(p.pid)) for p in sample.procs)) for sample in samples)
