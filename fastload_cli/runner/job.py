"""In the parent: run a data-parallel job once under one mode, through PyTorch's own launcher.

``python -m torch.distributed.run [the user's launcher options] --no-python PYTHON -c BOOTSTRAP ...``
starts the elastic agent (what ``torchrun`` runs), which starts every local rank with fastload's
child bootstrap, so each rank is a sensor like a single-process child. The launcher passes no file
descriptors on, so each rank streams its events into a FIFO of its own (``events.<LOCAL_RANK>`` in
a folder named by ``CHANNEL_DIR_ENV``). The parent samples the whole tree (the agent, every rank,
every rank's workers) and stops the job once every rank has its batches: the stop signal goes to
every rank at once, and a rank still blocked in a collective whose peers have left is terminated
with the rest of the tree after the grace.

One run of a mode stays one ``RunResult``: the view of one rank (the lowest local rank, or the
first that failed), with every rank's own result in ``ranks``, each with host samples whose roles
are its own (its process is MAIN, its workers are WORKER, the other ranks are OTHER).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace

from fastload_cli.records import (
    CHANNEL_DIR_ENV,
    HostSample,
    ProcRole,
    RunResult,
    RunStatus,
    StopReason,
)
from fastload_cli.records.protocol import STOP_SIGNAL
from fastload_cli.runner.collect import EventCollector
from fastload_cli.runner.launch import GpuReadings, HostReadings, _Run, _signal_name, child_command, ended


def launcher_command(run: _Run) -> list[str]:
    """torchrun's command line for this run: the launcher, its options, then every rank's bootstrap."""
    launcher = run.config.launcher
    assert launcher is not None
    python, *rank_args = child_command(run.config)
    return [python, "-m", "torch.distributed.run", *launcher.arguments(), "--no-python", python, *rank_args]


class JobRun(_Run):
    """A data-parallel job in flight: the agent is ``proc``; each local rank has its collector."""

    def spawn(self, env: dict[str, str]) -> subprocess.Popen[bytes]:
        launcher = self.config.launcher
        assert launcher is not None
        self.folder = tempfile.mkdtemp(prefix="fastload-job-")
        self.collectors = {rank: EventCollector() for rank in range(launcher.nproc_per_node)}
        self.collector = self.collectors[0]  # py-spy and the timeout's stack look at local rank 0
        self.fifos: dict[int, int] = {}
        self.held: list[int] = []  # write ends the parent holds, so no FIFO reads as ended before its rank opens it
        for rank in self.collectors:
            path = os.path.join(self.folder, f"events.{rank}")
            os.mkfifo(path, 0o600)
            self.fifos[rank] = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            self.held.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        return subprocess.Popen(
            launcher_command(self),
            cwd=self.config.cwd,
            env={**env, CHANNEL_DIR_ENV: self.folder},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    # -- the loop --------------------------------------------------------------------------

    def selector(self) -> selectors.DefaultSelector:
        selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        for rank, fd in self.fifos.items():
            selector.register(fd, selectors.EVENT_READ, functools.partial(self._on_rank_events, rank))
        selector.register(self.proc.stdout, selectors.EVENT_READ, self._on_output)
        return selector

    def _on_rank_events(self, rank: int, data: bytes) -> None:
        for event in self.collectors[rank].feed(data):
            if event["kind"] in ("iterator", "phase"):
                self.host.note_workers(event.get("worker_pids") or [])
            elif event["kind"] == "end" and all(c.end_reason is not None for c in self.collectors.values()):
                self.end_seen_at = time.monotonic()
        self.after_events()

    @property
    def main_pid(self) -> int:
        return self.collectors[0].pid or self.proc.pid

    def batches_done(self) -> int:
        """Batches every rank has: the job stops when the last rank has its share."""
        return min(c.most_batches() for c in self.collectors.values())

    def settled(self) -> bool:
        """Every rank's estimate is stable: the job stops when the last rank's is."""
        settle = self.config.settle
        return settle is not None and all(settle(self.streamed(c)) for c in self.collectors.values())

    def ask_stop(self, reason: StopReason) -> None:
        """The stop goes to every rank at once (never to the agent, which would tear the job down)."""
        self.stop_reason = self.stop_reason or reason
        self.stop_asked_at = time.monotonic()
        for collector in self.collectors.values():
            if collector.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(collector.pid, STOP_SIGNAL)

    # -- the end ---------------------------------------------------------------------------

    def finish(self) -> None:
        for fd in self.held:  # the ranks are gone: let the FIFOs end once drained
            os.close(fd)
        self.held = []
        super().finish()

    def close_events(self) -> None:
        for fd in self.fifos.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.folder, ignore_errors=True)

    def result(self, host: HostReadings, gpu: GpuReadings | None) -> RunResult:
        ranks = tuple(self._with_root_cause(self._rank_result(c, host, gpu)) for c in self.collectors.values())
        heard = [r for r in ranks if r.rank is not None]
        # The first rank to raise: the others raise after it, in a collective whose peer is gone.
        first = sorted(self.collectors, key=lambda k: self.collectors[k].end_ns or 0)
        raised = [ranks[k] for k in first if ranks[k].status is RunStatus.FAILED and ranks[k].error is not None]
        failed = raised[0] if raised else None
        killed = next((r for r in heard if r.signal_name is not None and r.stop_reason is StopReason.CHILD_DIED), None)
        if not heard:  # the launcher failed before any rank started (a port in use, a bad option)
            status, reason = self.stopped() or (RunStatus.FAILED, StopReason.SCRIPT_ENDED)
            return replace(ranks[0], status=status, stop_reason=reason, exit_code=self.proc.returncode)
        view = failed or killed or heard[0]
        status, reason = self._job_status(ranks)
        return replace(view, status=status, stop_reason=reason, ranks=tuple(sorted(heard, key=_rank_order)))

    def _with_root_cause(self, run: RunResult) -> RunResult:
        """The rank the launcher names as the job's first failure, with how it ended (its exit status,
        or the signal that killed it): fastload does not see the ranks' exit statuses itself."""
        found = ROOT_CAUSE.search(self.tail.decode(errors="replace"))
        if found is None or run.rank != int(found["rank"]) or run.stop_reason is not StopReason.CHILD_DIED:
            return run
        code = int(found["code"])
        return replace(run, exit_code=code, signal_name=_signal_name(code) if code < 0 else None)

    def _rank_result(self, c: EventCollector, host: HostReadings, gpu: GpuReadings | None) -> RunResult:
        status, reason = self._status_of(c)
        samples = as_rank(host[0], c.pid, _worker_pids(c))
        code = c.end_exit_code
        return self.result_of(c, (samples, host[1]), gpu, status=status, stop_reason=reason, exit_code=code)

    def _status_of(self, c: EventCollector) -> tuple[RunStatus, StopReason]:
        """A rank's outcome: what it said as it left when it raised before the stop (a collective
        whose peers were stopped first may raise after it: that is the stop), else the job's stop,
        else its own end."""
        if c.end_reason is StopReason.SCRIPT_RAISED and not self._after_stop(c.end_ns):
            return RunStatus.FAILED, StopReason.SCRIPT_RAISED
        return self.stopped() or ended(c)

    def _after_stop(self, t_ns: int | None) -> bool:
        asked = self.stop_asked_at
        return asked is not None and t_ns is not None and t_ns / 1e9 >= asked

    def _job_status(self, ranks: tuple[RunResult, ...]) -> tuple[RunStatus, StopReason]:
        """The job's outcome: a stop fastload made, else the worst of the ranks' (a rank that
        raised, one that died, one that exited with an error), else every rank's clean end."""
        if any(r.stop_reason is StopReason.SCRIPT_RAISED for r in ranks):
            return RunStatus.FAILED, StopReason.SCRIPT_RAISED
        stopped = self.stopped()
        if stopped is not None:
            return stopped
        if any(r.stop_reason is StopReason.CHILD_DIED for r in ranks):
            return RunStatus.FAILED, StopReason.CHILD_DIED
        failed = any(r.status is RunStatus.FAILED for r in ranks) or self.proc.returncode not in (0, None)
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
