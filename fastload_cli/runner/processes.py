"""In the parent: every process of a run found and terminated, so none outlives its run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from types import FrameType
from typing import IO, Any, Protocol

import psutil

from fastload_cli.records import RUN_ID_ENV

KILL_GRACE_S = 1.0


class ChildProcess(Protocol):
    """A run's process as the runner uses it: ``subprocess.Popen``, or a run forked warm."""

    pid: int
    returncode: int | None
    stdout: IO[bytes] | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def terminate(self) -> None: ...
    def kill(self) -> None: ...


def terminate_run(proc: ChildProcess, run_id: str, known_pids: list[int], adopter: int | None = None) -> None:
    """Terminate every process of a run: workers and other descendants first, then the child.

    Finds them three ways, so none escapes: the child's descendants, the child's process group
    (workers orphaned by a dead child keep it), and the run id in their environment. A run forked
    warm carries the starter's environment instead; its starter (``adopter``) adopts what the run
    orphans, and runs go one at a time, so every process below the starter is the run's.
    """
    others = [p for p in _run_processes(proc.pid, run_id, known_pids) if p.pid != proc.pid]
    if adopter is not None:
        with contextlib.suppress(psutil.Error):
            seen = {p.pid for p in others} | {proc.pid}
            others += [p for p in psutil.Process(adopter).children(recursive=True) if p.pid not in seen]
    _signal_all(others, signal.SIGTERM)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
    _kill_survivors(others)
    if not wait(proc, KILL_GRACE_S):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        wait(proc, KILL_GRACE_S)


def terminate_strays(run_id: str) -> None:
    """Terminate the processes of a run that was never tracked (found by its run id alone)."""
    strays = [p for p in psutil.process_iter() if p.pid != os.getpid() and _has_run_id(p, run_id)]
    _signal_all(strays, signal.SIGTERM)
    _kill_survivors(strays)


def _kill_survivors(procs: list[psutil.Process]) -> None:
    """After SIGTERM: SIGKILL whatever has not left within the grace, and wait for it to go."""
    _, alive = psutil.wait_procs(procs, timeout=KILL_GRACE_S)
    _signal_all(alive, signal.SIGKILL)
    psutil.wait_procs(alive, timeout=KILL_GRACE_S)


def _run_processes(root: int, run_id: str, known: list[int]) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    with contextlib.suppress(psutil.Error):
        for p in psutil.Process(root).children(recursive=True):
            found[p.pid] = p
    for p in psutil.process_iter():
        if p.pid in found or p.pid == os.getpid():
            continue
        if p.pid in known or _in_group(p.pid, root) or _has_run_id(p, run_id):
            found[p.pid] = p
    return list(found.values())


def _in_group(pid: int, pgid: int) -> bool:
    try:
        return os.getpgid(pid) == pgid
    except OSError:
        return False


def _has_run_id(proc: psutil.Process, run_id: str) -> bool:
    try:
        return proc.environ().get(RUN_ID_ENV) == run_id
    except psutil.Error:
        return False


def _signal_all(procs: list[psutil.Process], sig: int) -> None:
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.send_signal(sig)


def wait(proc: ChildProcess, timeout_s: float) -> bool:
    try:
        proc.wait(timeout=timeout_s)
        return True
    except subprocess.TimeoutExpired:
        return False


@contextlib.contextmanager
def ignoring_interrupts() -> Iterator[None]:
    """A second Ctrl-C must not abandon the clean-up half way (and leave workers behind)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing to mask
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Interruptible(Protocol):
    interrupted: bool


@contextlib.contextmanager
def interrupts_as_flag(run: Interruptible, caught: dict[int, Any]) -> Iterator[None]:
    """While the run is watched, Ctrl-C, SIGTERM and SIGHUP only mark it interrupted: the watch loop ends
    at its next turn, so no exception lands half way through reading events or sampling (where
    it could leave a lock held). ``caught`` gets each signal that came, with the handler it replaced."""
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        run.interrupted = True
        caught[signum] = previous.get(signum)

    try:
        for wanted in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if wanted == signal.SIGHUP and signal.getsignal(wanted) is signal.SIG_IGN:
                continue  # nohup: a closed terminal must not stop the run
            previous[wanted] = signal.signal(wanted, handler)
    except ValueError:  # not the main thread: leave the signals alone
        yield
        return
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def pass_on(caught: dict[int, Any]) -> None:
    """Tell the replaced SIGTERM or SIGHUP handler (the command line's, which picks the exit status) that
    the signal came; the run already ended as interrupted."""
    for signum, old in caught.items():
        if signum != signal.SIGINT and callable(old):
            with contextlib.suppress(KeyboardInterrupt):
                old(signum, None)
