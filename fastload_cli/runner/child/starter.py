"""The warm starter's server: a process of its own (``python -c STARTER``) that imports the
script's libraries once, then forks one run per request from the parent (``runner/warm.py``).
Each forked run takes its own session, output and event pipes, environment and working
directory, fresh random state, and runs the script through ``main.main`` as a cold child does;
the starter reports its exit status and adopts what it orphans.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
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
    why = _preload([n for n in os.environ.pop(PRELOADS_ENV, "").split(",") if n])
    if why is not None:
        _reply(sock, {"error": why})
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


def _preload(listed: list[str]) -> str | None:
    """Import the libraries ``listed``, then best effort what the script imports from them
    (``module:name``) and ``WITH_TORCH``; why the runs cannot be forked from here, or None."""
    names = [n for n in listed if ":" not in n]
    # as python train.py imports them: the script's directory first (a torch/ there is its torch);
    # then off again, so each forked run sets up its sys.path as a cold child does
    first = os.environ.pop(PRELOAD_DIR_ENV, "")
    sys.path[:0] = [first] if first else []
    try:
        for name in names:
            __import__(name)
    except BaseException as exc:  # the script would fail the same way, cold: let it say so itself
        return f"importing {name}: {type(exc).__name__}: {exc}"
    for name in WITH_TORCH if "torch" in names else ():
        with contextlib.suppress(Exception):
            __import__(name)
    named = [found.split(":", 1) for found in listed if ":" in found]
    if named and _safe_to_import(named):
        for module, name in named:
            _import_from(module, name)
    del sys.path[: 1 if first else 0]
    import threading

    # Forking copies one thread: a Python thread's locks would stay held in the run. Native pools
    # (OpenBLAS's, started by importing numpy) are what every DataLoader worker is forked beside.
    if threading.active_count() > 1:
        running = ", ".join(t.name for t in threading.enumerate())
        return f"importing {', '.join(names)} left Python threads running ({running})"
    if _cuda_poisoned():
        return f"importing {', '.join(names)} initialised CUDA, which a forked run could not use"
    return None


def _import_from(module: str, name: str) -> None:
    """``from module import name`` (``import module`` where name is empty), best effort: a lazy
    package (transformers) imports the module that defines ``name`` on first use."""
    with contextlib.suppress(Exception):
        found = importlib.import_module(module)
        if name and not hasattr(found, name):
            importlib.import_module(f"{module}.{name}")


def _safe_to_import(named: list[list[str]]) -> bool:
    """Importing ``named`` in a forked trial left no Python thread and did not ask CUDA for its
    devices (``torch.utils.benchmark`` does, on import): only then does the starter import them,
    so that a script importing such a module still has its runs forked, that module imported by
    each run as before."""
    import threading

    pid = os.fork()
    if pid == 0:
        for module, name in named:
            _import_from(module, name)
        os._exit(1 if threading.active_count() > 1 or _cuda_poisoned() else 0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def _cuda_poisoned() -> bool:
    """Something imported asked CUDA for its devices (``torch.cuda.is_available()``), which marks
    every process forked after it unable to use CUDA: a forked probe says whether it is."""
    torch = sys.modules.get("torch")
    probe = getattr(getattr(torch, "_C", None), "_cuda_isInBadFork", None)
    if probe is None:
        return False
    pid = os.fork()
    if pid == 0:
        os._exit(1 if probe() else 0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0


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
