"""The warm starter's server: a process of its own (``python -c STARTER``) that imports the
script's libraries once, then forks one run per request from the parent (``runner/warm.py``).
Each forked run takes its own session, output and event pipes, environment and working
directory, fresh random state, and runs the script through ``main.main`` as a cold child does;
the starter reports its exit status and adopts what it orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import socket
import sys
from typing import Any, NoReturn

from fastload_cli.records.protocol import CHANNEL_FD_ENV, PRELOAD_DIR_ENV, PRELOADS_ENV, WARM_FD_ENV

REAP_S = 0.02  # how often the starter looks for children that exited
# With torch: what a script's first optimizer imports (torch.optim's wrappers import the compiler
# stack, torch._dynamo, on first use): about a second, and 2 s on a slow machine, that every run
# of a training script would pay again after the fork. Best effort: a torch without it, or one
# that fails to import it, leaves the runs to import it themselves.
WITH_TORCH = ("torch._dynamo",)
MAX_MESSAGE = 1 << 20
PR_SET_CHILD_SUBREAPER = 36


def serve() -> NoReturn:
    """Import the preloads, say ready, then fork a run per request until the parent goes."""
    from fastload_cli.runner.child import main  # before the fork: every run shares the import

    main.die_with_parent()
    _adopt_orphans()
    sock = socket.socket(fileno=int(os.environ.pop(WARM_FD_ENV)))
    names = [n for n in os.environ.pop(PRELOADS_ENV, "").split(",") if n]
    # as python train.py imports them: the script's directory first (a torch/ there is its torch);
    # then off again, so each forked run sets up its sys.path as a cold child does
    first = os.environ.pop(PRELOAD_DIR_ENV, "")
    sys.path[:0] = [first] if first else []
    try:
        for name in names:
            __import__(name)
    except BaseException as exc:  # the script would fail the same way, cold: let it say so itself
        _reply(sock, {"error": f"importing {name}: {type(exc).__name__}: {exc}"})
        os._exit(1)
    for name in WITH_TORCH if "torch" in names else ():
        with contextlib.suppress(Exception):
            __import__(name)
    del sys.path[: 1 if first else 0]
    import threading

    # Forking copies one thread: a Python thread's locks would stay held in the run. Native pools
    # (OpenBLAS's, started by importing numpy) are what every DataLoader worker is forked beside.
    if threading.active_count() > 1:
        running = ", ".join(t.name for t in threading.enumerate())
        _reply(sock, {"error": f"importing {', '.join(names)} left Python threads running ({running})"})
        os._exit(1)
    _reply(sock, {"ready": True})
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock], [], [], REAP_S)
        if ready:
            message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 2)
            if not message:  # the parent is gone
                os._exit(0)
            pid = os.fork()
            if pid == 0:
                _become_run(sock, json.loads(message), fds, main.main)
            for fd in fds:
                os.close(fd)
            children.add(pid)
            _reply(sock, {"started": pid})
        _reap(sock, children)


def _adopt_orphans() -> None:
    """Become the subreaper of the runs: what a run orphans (a worker whose parent died) is
    adopted here, where the parent finds and terminates it, rather than by init."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap(sock: socket.socket, children: set[int]) -> None:
    """Collect every child that exited (adopted orphans too); report the runs'."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        if pid in children:
            children.discard(pid)
            _reply(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _reply(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.send(json.dumps(message).encode())


def _become_run(sock: socket.socket, request: dict[str, Any], fds: list[int], main: Any) -> NoReturn:
    """In the forked child: the run's session, output, environment and directory, then the run."""
    try:
        sock.close()
        os.setsid()
        stdout_fd, event_fd = fds
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(stdout_fd, 1)
        os.dup2(stdout_fd, 2)
        os.close(null)
        os.close(stdout_fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ[CHANNEL_FD_ENV] = str(event_fd)
        sys.argv = ["-c", *request["argv"]]
        _reseed()
    except BaseException:
        os._exit(70)
    main()
    os._exit(0)  # main() leaves by itself; never back into the starter's loop


def _reseed() -> None:
    """Fresh random state, as a process started cold has (the fork copied the starter's)."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        with contextlib.suppress(Exception):
            numpy.random.seed()
