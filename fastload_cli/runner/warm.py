"""Runs started warm: forked from a process that has already imported the script's libraries.

Every run of a command is a fresh process of the script, and importing torch (with torchvision,
timm, Lightning or transformers) costs each one seconds before the script's first line. A warm
starter pays that once per command: a process that imports them, then forks one child per run on
request. The forked child is a run like a cold one: its own session, its output and events on the
pipes the parent made, its environment and working directory as the parent gives them, and the
script run by ``child.main`` as ``python script.py`` would. The starter reports its exit status.
The starter is single-threaded in Python when it forks; native thread pools that the imports
start (OpenBLAS's) are forked beside, as every DataLoader worker is.

A run starts cold (``subprocess.Popen``, as before) where forking could change what the script
does: a script that sets environment variables in its own code (a library imported before the
script could not see them, ``OMP_NUM_THREADS`` say), a preload that left Python threads running
(not safe to fork; every later run of the command then starts cold), a data-parallel job (the
launcher starts its ranks), ``FASTLOAD_WARM_START=0``, or a starter that failed. Nothing here
imports torch in the parent; only the starter does.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import ctypes
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, NoReturn

from fastload_cli.records import CHANNEL_FD_ENV

WARM_FD_ENV = "FASTLOAD_WARM_FD"  # the starter's end of its socket with the parent
WARM_START_ENV = "FASTLOAD_WARM_START"  # "0": every run starts cold
READY_TIMEOUT_S = 120.0  # importing the libraries: slow disks and first imports (.pyc) take long
REAP_S = 0.02  # how often the starter looks for children that exited
MAX_MESSAGE = 1 << 20
PR_SET_CHILD_SUBREAPER = 36
# What the starter imports when the script's own source imports it (anywhere in the file).
PRELOADS = (
    "torch",
    "numpy",
    "PIL",
    "torchvision",
    "timm",
    "lightning",
    "pytorch_lightning",
    "transformers",
    "accelerate",
)
SETS_ENVIRONMENT = re.compile(r"\b(environ|putenv)\b")
STARTER = "import sys; sys.path.insert(0, sys.argv[1]); from fastload_cli.runner.warm import serve; serve()"


class WarmStartFailed(Exception):
    """The starter could not fork the run; the caller starts it cold."""


def preloads_for(script: Path) -> tuple[str, ...] | None:
    """The libraries to import before forking the script's runs, or None where it must start cold
    (its source sets environment variables, or cannot be read)."""
    if os.environ.get(WARM_START_ENV, "1") == "0":
        return None
    try:
        source = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if SETS_ENVIRONMENT.search(source):
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # python will say what is wrong with it, cold
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
    found = tuple(name for name in PRELOADS if name in imported)
    return found if "torch" in found else None


# --------------------------------------------------------------------------------------------
# The parent's side
# --------------------------------------------------------------------------------------------


class ForkedProcess:
    """A run forked by the starter, with the part of ``subprocess.Popen`` the runner uses."""

    def __init__(self, starter: WarmStarter, pid: int, stdout: IO[bytes], args: list[str]) -> None:
        self.starter, self.pid, self.args = starter, pid, args
        self.stdout: IO[bytes] | None = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self.starter.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
            time.sleep(REAP_S)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class WarmStarter:
    """The starter process of one interpreter and set of preloads, and the socket to it."""

    def __init__(self, python: str, package_parent: str, preloads: tuple[str, ...]) -> None:
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**os.environ, WARM_FD_ENV: str(theirs.fileno()), "FASTLOAD_PRELOADS": ",".join(preloads)}
        try:
            self.proc = subprocess.Popen(
                [python, "-c", STARTER, package_parent],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                env=env,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self.ready = False
        self.exits: dict[int, int] = {}

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], stdout_fd: int, event_fd: int) -> int:
        """Fork a run: ``argv`` as ``child.main`` reads it; returns its pid."""
        if not self.ready:
            self._expect("ready", READY_TIMEOUT_S)
            self.ready = True
        request = json.dumps({"argv": argv, "cwd": str(cwd), "env": env}).encode()
        try:
            socket.send_fds(self.sock, [request], [stdout_fd, event_fd])
        except OSError as exc:
            raise WarmStartFailed(f"the warm starter is gone ({exc})") from exc
        return int(self._expect("started", 10.0)["started"])

    def exit_code(self, pid: int) -> int | None:
        """The run's exit code once the starter has reaped it (a signal: its negative number)."""
        self._drain(0.0)
        if pid not in self.exits and self.proc.poll() is not None:
            return -signal.SIGKILL  # the starter died and took its runs with it
        return self.exits.get(pid)

    def _expect(self, key: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            message = self._receive(max(0.0, deadline - time.monotonic()))
            if message is None:
                self.close()
                raise WarmStartFailed(f"the warm starter did not answer '{key}' within {timeout_s:.0f} s")
            if key in message:
                return message
            if "error" in message:
                self.close()
                raise WarmStartFailed(message["error"])

    def _drain(self, timeout_s: float) -> None:
        while self._receive(timeout_s) is not None:
            timeout_s = 0.0

    def _receive(self, timeout_s: float) -> dict[str, Any] | None:
        """One message (exits are kept as they come), or None when none came or the starter left."""
        try:
            ready, _, _ = select.select([self.sock], [], [], timeout_s)
            data = self.sock.recv(MAX_MESSAGE) if ready else b""
        except (OSError, ValueError):
            return None
        if not data:
            return None
        message: dict[str, Any] = json.loads(data)
        if "exited" in message:
            self.exits[int(message["exited"])] = int(message["code"])
        return message

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


StarterKey = tuple[str, str, tuple[str, ...]]
_STARTERS: dict[StarterKey, WarmStarter] = {}
_FAILED: set[StarterKey] = set()  # starters that failed once: this command's runs start cold


def starter(python: str, package_parent: str, preloads: tuple[str, ...]) -> WarmStarter | None:
    """The command's starter for this interpreter and preloads, started at first use; None where
    one failed before."""
    key = (python, package_parent, preloads)
    if key in _FAILED:
        return None
    found = _STARTERS.get(key)
    if found is None or found.proc.poll() is not None:
        try:
            found = _STARTERS[key] = WarmStarter(python, package_parent, preloads)
        except OSError:  # no such interpreter, say: the cold start says so in its own words
            _FAILED.add(key)
            return None
    return found


def forget(found: WarmStarter) -> None:
    """A starter that failed: closed, and the command's later runs start cold."""
    found.close()
    for key, value in list(_STARTERS.items()):
        if value is found:
            del _STARTERS[key]
            _FAILED.add(key)


@atexit.register
def close_all() -> None:
    """No starter outlives the command."""
    for found in _STARTERS.values():
        found.close()
    _STARTERS.clear()


# --------------------------------------------------------------------------------------------
# The starter's side (a process of its own; it imports the preloads, then forks runs)
# --------------------------------------------------------------------------------------------


def serve() -> NoReturn:
    """Import the preloads, say ready, then fork a run per request until the parent goes."""
    from fastload_cli.runner import child  # before the fork: every run shares the import

    child.die_with_parent()
    _adopt_orphans()
    sock = socket.socket(fileno=int(os.environ.pop(WARM_FD_ENV)))
    names = [n for n in os.environ.pop("FASTLOAD_PRELOADS", "").split(",") if n]
    try:
        for name in names:
            __import__(name)
    except BaseException as exc:  # the script would fail the same way, cold: let it say so itself
        _reply(sock, {"error": f"importing {name}: {type(exc).__name__}: {exc}"})
        os._exit(1)
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
                _become_run(sock, json.loads(message), fds, child.main)
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
