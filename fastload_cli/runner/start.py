"""How a run's processes are started: cold (a fresh interpreter), warm (forked by the command's
starter, ``warm.py``) or, for a data-parallel job, through torch's launcher (``job.py``). Each
start returns a ``Started``: what the watch loop (``flight.py``) needs to hear the run and stop it,
and what is left to release once it is over."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import fastload_cli
from fastload_cli.config import RunConfig
from fastload_cli.records import CHANNEL_FD_ENV
from fastload_cli.records.protocol import BOOTSTRAP
from fastload_cli.runner import warm
from fastload_cli.runner.processes import ChildProcess

PACKAGE_PARENT = str(Path(fastload_cli.__file__).resolve().parent.parent)  # the child puts it on its path


@dataclass(slots=True)
class Started:
    """A started run: the process fastload waits on, and how the run is heard and stopped."""

    proc: ChildProcess  # the child (cold or warm), or the launcher's agent (a job)
    events: dict[int, IO[bytes]]  # local rank -> its event stream (a single process is rank 0)
    script_pid: int | None  # the process that runs the script, where fastload started it itself
    adopter: int | None = None  # a warm starter: it adopts what the run orphans
    held: list[int] = field(default_factory=list)  # write ends kept open until the run is over (a job's FIFOs)
    folder: str | None = None  # removed once the run is over (a job's FIFOs)


def child_args(config: RunConfig) -> list[str]:
    """What ``child.main`` reads from its argv: the spec, then the script as given (``-m`` and the
    module's name for a module), and its args."""
    target = ["-m", config.module] if config.module is not None else [config.script_arg0]
    return [config.child.to_json(), *target, *config.script_args]


def child_command(config: RunConfig) -> list[str]:
    return [config.python, "-c", BOOTSTRAP, PACKAGE_PARENT, *child_args(config)]


def start_single(config: RunConfig, env: dict[str, str]) -> Started:
    """One process that runs the script, with an event pipe of its own: forked warm where the
    script allows it, otherwise a fresh interpreter."""
    read_fd, write_fd = os.pipe()
    try:
        proc = _forked(config, env, write_fd) or _cold(config, env, write_fd)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    adopter = proc.starter.proc.pid if isinstance(proc, warm.ForkedProcess) else None
    return Started(proc=proc, events={0: os.fdopen(read_fd, "rb", buffering=0)}, script_pid=proc.pid, adopter=adopter)


def _cold(config: RunConfig, env: dict[str, str], event_fd: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        child_command(config),
        cwd=config.cwd,
        env={**env, CHANNEL_FD_ENV: str(event_fd)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(event_fd,),
        start_new_session=True,
    )


def prestart(config: RunConfig) -> None:
    """The command's warm starter started now, where its runs will be forked from one (one process
    runs the script): the seconds its imports take pass while fastload prepares the first run,
    which finds it started."""
    if config.launcher is None:
        _starter(config)


def _starter(config: RunConfig) -> warm.WarmStarter | None:
    """The command's warm starter for ``config``'s runs, started at first use; None where they
    start cold."""
    # A module runs with the working directory first on sys.path (python -m): the starter puts the
    # script's directory there, so a module starts cold.
    preloads = warm.preloads_for(config.script) if config.warm_start and config.module is None else None
    if preloads is None:
        return None
    script_dir = os.path.dirname(os.path.realpath(config.script))
    return warm.starter(config.python, PACKAGE_PARENT, preloads, script_dir)


def _forked(config: RunConfig, env: dict[str, str], event_fd: int) -> warm.ForkedProcess | None:
    """The child forked by the command's warm starter, or None: it starts cold."""
    found = _starter(config)
    if found is None:
        return None
    args = child_args(config)
    out_read, out_write = os.pipe()
    try:
        pid = found.start(args, config.cwd, env, out_write, event_fd)
    except warm.WarmStartFailed:
        warm.forget(found)
        os.close(out_read)
        return None
    finally:
        os.close(out_write)
    return warm.ForkedProcess(found, pid, os.fdopen(out_read, "rb", buffering=0), args)
