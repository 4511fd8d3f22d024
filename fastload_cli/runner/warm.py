"""Runs started warm: forked from a process that has already imported the script's libraries.

Every run of a command is a fresh process of the script, and importing torch (with torchvision,
timm, Lightning or transformers) costs each one seconds before the script's first line. A warm
starter pays that once per command: a process that imports them, then forks one child per run on
request. The forked child is a run like a cold one: its own session, its output and events on the
pipes the parent made, its environment and working directory as the parent gives them, and the
script run by ``child.main.main`` as ``python script.py`` would. The starter
(``runner/child/starter.py``) reports its exit status.
The starter is single-threaded in Python when it forks; native thread pools that the imports
start (OpenBLAS's) are forked beside, as every DataLoader worker is.

A run starts cold (``subprocess.Popen``, as before) where forking could change what the script
does: a script that sets environment variables in its own code (a library imported before the
script could not see them, ``OMP_NUM_THREADS`` say), a preload that left Python threads running
(not safe to fork; every later run of the command then starts cold) or asked CUDA for its
devices (no process forked after it could use CUDA), a data-parallel job (the
launcher starts its ranks), ``FASTLOAD_WARM_START=0``, or a starter that failed. Nothing here
imports torch in the parent; only the starter does.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import json
import os
import re
import select
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from fastload_cli.records.protocol import PRELOAD_DIR_ENV, PRELOADS_ENV, STARTER, WARM_FD_ENV, WARM_START_ENV

READY_TIMEOUT_S = 120.0  # importing the libraries: slow disks and first imports (.pyc) take long
MAX_MESSAGE = 1 << 20
WAIT_POLL_S = 0.02  # how often a forked run's exit status is looked for
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
    "datasets",
    "albumentations",
    "cv2",
)
SETS_ENVIRONMENT = re.compile(r"\b(environ|putenv)\b")


class WarmStartFailed(Exception):
    """The starter could not fork the run; the caller starts it cold."""


def preloads_for(script: Path) -> tuple[str, ...] | None:
    """The libraries to import before forking the script's runs, or None where it must start cold
    (its source sets environment variables, or cannot be read); then, as ``module:name``, what the
    script imports from them (``from transformers import Trainer`` imports the trainer's module
    on first use: seconds that every run would pay again), which the starter imports best effort."""
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
    names: dict[str, None] = {}  # module:name, in the script's order
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
            names.update((f"{alias.name}:", None) for alias in node.names if "." in alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imported.add(node.module.split(".")[0])
            names.update((f"{node.module}:{alias.name}", None) for alias in node.names if alias.name != "*")
    found = tuple(name for name in PRELOADS if name in imported)
    if "torch" not in found:
        return None
    return found + tuple(n for n in names if n.partition(":")[0].partition(".")[0] in found)


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
            time.sleep(WAIT_POLL_S)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class WarmStarter:
    """The starter process of one interpreter, set of preloads and script directory (the
    preloads are imported with it first on sys.path, as ``python train.py`` would import them),
    and the socket to it."""

    def __init__(self, python: str, package_parent: str, preloads: tuple[str, ...], script_dir: str) -> None:
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            **os.environ,
            WARM_FD_ENV: str(theirs.fileno()),
            PRELOADS_ENV: ",".join(preloads),
            PRELOAD_DIR_ENV: script_dir,
        }
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


StarterKey = tuple[str, str, tuple[str, ...], str]  # python, package, preloads, script dir
_STARTERS: dict[StarterKey, WarmStarter] = {}
_FAILED: set[StarterKey] = set()  # starters that failed once: this command's runs start cold


def starter(python: str, package_parent: str, preloads: tuple[str, ...], script_dir: str) -> WarmStarter | None:
    """The command's starter for this interpreter, preloads and script directory, started at first
    use; None where one failed before."""
    key = (python, package_parent, preloads, script_dir)
    if key in _FAILED:
        return None
    found = _STARTERS.get(key)
    if found is None or found.proc.poll() is not None:
        try:
            found = _STARTERS[key] = WarmStarter(*key)
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
