"""Inside the child: the run's DataLoader workers, ended at once when fastload stops the run.

A stopped run unwinds through the script's loop, and each DataLoader iterator it drops shuts its
workers down as torch does (``_shutdown_workers``): it joins every worker after the batch it has
in hand, so the run's end waits out a batch's loading (a slow sample's whole time). Nothing of
that batch is measured. At the stop, every iterator the run started (``track_workers``) has its
workers killed first (``end_workers``), their pids taken off torch's SIGCHLD watch beforehand so
that their deaths raise nothing in the script; the shutdown that follows joins processes already
gone.

A worker that hands a tensor over (torch's file-descriptor sharing) makes a multiprocessing temp
folder (``pymp-*``) for the socket it serves the descriptor on, which python removes only as that
worker exits as python does: every killed worker would leave one behind. The child makes that
folder once for the script's main process (``share_temp_dir``), the workers it starts take it over
(a worker gets a copy of its parent's multiprocessing config, by fork, spawn or forkserver alike),
and the child removes it as it leaves (``remove_leftovers``). A worker killed as it makes a
batch's shared memory (torch names the segment ``torch_<pid>_...`` and unlinks it once mapped) can
leave that segment in ``/dev/shm``, where it holds memory until the machine restarts; the child
removes those of the workers it killed as it leaves, too.

Only the stdlib (and torch's own ``signal_handling``, where torch is imported) is used here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import weakref
from typing import Any

_STARTED: weakref.WeakSet[Any] = weakref.WeakSet()  # the run's iterators that started workers
_KILLED: list[int] = []  # the pids of the workers ``end_workers`` killed
SHARED_MEMORY = "/dev/shm"


def track_workers(iterator: Any) -> None:
    """Remember ``iterator`` where it started workers (an iterator without is never touched)."""
    if getattr(iterator, "_workers", None):
        with contextlib.suppress(TypeError):  # an object that takes no weak reference
            _STARTED.add(iterator)


def end_workers() -> int:
    """Kill the workers of every tracked iterator still alive; returns how many were killed.
    Best effort: the parent terminates whatever is left when the run has gone."""
    killed = 0
    for iterator in list(_STARTED):
        _unwatch(iterator)
        for worker in list(getattr(iterator, "_workers", ())):
            with contextlib.suppress(Exception):  # gone already, or not a process any more
                if worker.is_alive():
                    os.kill(worker.pid, signal.SIGKILL)
                    _KILLED.append(worker.pid)
                    killed += 1
    return killed


def _unwatch(iterator: Any) -> None:
    """Take ``iterator``'s workers off torch's SIGCHLD handler, as ``_shutdown_workers`` does
    before it ends them, so that a killed worker is not reported as one that failed."""
    if not getattr(iterator, "_worker_pids_set", False):
        return
    handling = getattr(sys.modules.get("torch.utils.data._utils"), "signal_handling", None)
    if handling is None:
        return
    with contextlib.suppress(Exception):
        handling._remove_worker_pids(id(iterator))
        iterator._worker_pids_set = False


def share_temp_dir() -> str | None:
    """multiprocessing's temp folder for this process, made now where it has none, so that the
    processes it forks from now on share it; the folder, or None where this process had one."""
    try:
        from multiprocessing import process

        config = process.current_process()._config  # type: ignore[attr-defined]
        if config.get("tempdir") is not None:
            return None
        config["tempdir"] = path = tempfile.mkdtemp(prefix="pymp-")
    except Exception:  # a python whose multiprocessing keeps it elsewhere: its workers make their own
        return None
    return path


def remove_leftovers(temp_dir: str | None, shared_memory: str = SHARED_MEMORY) -> None:
    """Remove the folder ``share_temp_dir`` made, as python's exit would have, and the shared
    memory segments the workers ``end_workers`` killed left in ``shared_memory``. Called as the
    child leaves, once nothing of the script runs: no process maps a segment by name any more."""
    if temp_dir is not None:
        shutil.rmtree(temp_dir, ignore_errors=True)
    if not _KILLED:
        return
    prefixes = tuple(f"torch_{pid}_" for pid in _KILLED)
    with contextlib.suppress(OSError):
        for entry in os.scandir(shared_memory):
            if entry.name.startswith(prefixes):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
