"""The child process: runs the user's script, unmodified, with plain-``python`` semantics.

Started by ``runner/launch.py`` as (``records.protocol.BOOTSTRAP``)::

    python -c BOOTSTRAP <fastload package dir> <ChildSpec as JSON> <script as given> [script args...]
    python -c BOOTSTRAP <fastload package dir> <ChildSpec as JSON> -m <module> [args...]

The script sees ``__name__ == "__main__"``, ``sys.argv`` = [script, args...], ``sys.path[0]`` =
the script's directory and the caller's working directory, as under ``python script.py``; a module
runs as under ``python -m``: ``sys.path[0]`` the working directory, ``sys.argv[0]`` its file,
``__spec__`` set, a package's ``__main__`` (``runpy.run_module``).
Events go to the file descriptor named by ``FASTLOAD_EVENT_FD``, never to the script's stdout.
The parent asks the child to stop with ``STOP_SIGNAL``; its handler raises ``StopRun`` in the main
thread so the script's ``finally`` blocks run, then the child leaves at once. A script that ends by
itself leaves as python would, short of the interpreter's teardown (``_shut_down_as_python``).
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import errno
import importlib.machinery
import linecache
import os
import runpy
import signal
import sys
import time
import traceback
import types
from pathlib import Path
from types import FrameType, TracebackType
from typing import NoReturn

from fastload_cli.records import ChildSpec, EventKind, Mode, StopReason
from fastload_cli.records.notebook import cells as notebook_cells
from fastload_cli.records.protocol import (
    CHANNEL_DIR_ENV,
    CHANNEL_FD_ENV,
    CHANNEL_OPEN_S,
    NEXT_SIGNAL,
    PARENT_GONE,
    STOP_SIGNAL,
)
from fastload_cli.runner.child import hooks, modes, stacks
from fastload_cli.runner.child.channel import Channel
from fastload_cli.runner.child.environment import torch_env
from fastload_cli.runner.child.modes import MeasurementDone, Stop, StopRun
from fastload_cli.runner.child.workers import end_workers, remove_leftovers, share_temp_dir

PR_SET_PDEATHSIG = 1
_INTERNAL_FILES = (__file__, runpy.__file__, "<frozen runpy>")


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    if Stop.measured and not Stop.finished:  # another thread measured what the run was for
        end_workers()
        raise MeasurementDone
    if Stop.finished or Stop.asked:
        return
    Stop.asked = True
    end_workers()  # the batches they have in hand are not measured: the run's end need not wait for them
    raise StopRun


def die_with_parent() -> None:
    """Ask Linux to kill this process if fastload dies, so no run outlives its profiler."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _prepare_sys(script_arg0: str, script_args: list[str]) -> str:
    """Set argv, sys.path[0] and return the script's ``__file__``, as ``python script.py`` would."""
    del sys.path[0]  # the fastload package directory the bootstrap put there (``records.protocol``)
    script_file = script_arg0 if os.path.isabs(script_arg0) else os.path.join(os.getcwd(), script_arg0)
    script_dir = os.path.dirname(os.path.realpath(script_file))
    if not getattr(sys.flags, "safe_path", False):  # python >= 3.11: -P / PYTHONSAFEPATH
        sys.path.insert(0, script_dir)
    sys.argv = [script_arg0, *script_args]
    return script_file


def _prepare_module(args: list[str]) -> None:
    """Set sys.path[0] and argv as ``python -m`` does: the working directory first; runpy sets
    argv[0] to the module's file once it has found it."""
    del sys.path[0]  # the fastload package directory the bootstrap put there (``records.protocol``)
    if not getattr(sys.flags, "safe_path", False):
        sys.path.insert(0, os.getcwd())
    sys.argv = ["-m", *args]


def exec_module(name: str) -> None:
    """Execute a module as ``__main__``, as ``python -m`` does: in the ``__main__`` module itself
    (what its workers re-import under spawn), with ``__spec__`` set and ``sys.argv[0]`` its file."""
    as_main = getattr(runpy, "_run_module_as_main", None)  # what `python -m` calls
    if as_main is not None:
        as_main(name, alter_argv=True)
    else:
        runpy.run_module(name, run_name="__main__", alter_sys=True)


def _user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """Drop fastload's frames from the top of a traceback."""
    while tb is not None and tb.tb_frame.f_code.co_filename in _INTERNAL_FILES:
        tb = tb.tb_next
    return tb


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)  # what python does with sys.exit("message")
    return 1


def exec_as_main(script_file: str) -> None:
    """Execute the script as the ``__main__`` module, as ``python script.py`` does.

    (``runpy.run_path`` would also set ``sys.argv[0]`` to the path it is given, while python
    keeps it as the user typed it.)
    """
    with open(script_file, "rb") as handle:
        code = compile(handle.read(), script_file, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=script_file,
        __cached__=None,
        __builtins__=builtins,
        __loader__=importlib.machinery.SourceFileLoader("__main__", script_file),
    )
    sys.modules["__main__"] = module
    exec(code, module.__dict__)


def exec_notebook(notebook: str, shown: str) -> None:
    """Run a notebook's code cells in order in the ``__main__`` module, as a kernel's "Run All"
    does (``records.notebook``): each compiled as ``NOTEBOOK [cell N]``, its lines in tracebacks."""
    module = types.ModuleType("__main__")
    module.__dict__.update(__builtins__=builtins)
    sys.modules["__main__"] = module
    for cell in notebook_cells(Path(notebook)):
        name = cell.filename(shown)
        linecache.cache[name] = (len(cell.source), None, cell.source.splitlines(True), name)
        exec(compile(cell.source, name, "exec", dont_inherit=True), module.__dict__)


def run_script(channel: Channel, script_file: str, module: str | None = None) -> tuple[StopReason, int]:
    """Run the script (the module, the notebook) to its end, a stop, or an uncaught exception."""
    try:
        if module is not None:
            exec_module(module)
        elif script_file.endswith(".ipynb"):
            exec_notebook(script_file, sys.argv[0])
        else:
            exec_as_main(script_file)
        return StopReason.SCRIPT_ENDED, 0
    except (StopRun, MeasurementDone):
        return StopReason.ENOUGH_BATCHES, 0
    except SystemExit as exc:
        return StopReason.SCRIPT_ENDED, _exit_code(exc)
    except BaseException as exc:  # the script's own failure: report it like python would
        raised_ns = time.monotonic_ns()  # before anything else: which rank of a job raised first
        if Stop.asked:
            return StopReason.ENOUGH_BATCHES, 0
        tb = _user_traceback(exc.__traceback__)
        text = "".join(traceback.format_exception(type(exc), exc, tb))
        sys.stderr.write(text)
        channel.emit(
            EventKind.EXCEPTION,
            type_name=type(exc).__qualname__,
            message=str(exc)[:2000],
            traceback=text[-8000:],
            t_ns=raised_ns,
        )
        return StopReason.SCRIPT_RAISED, 1


def main() -> NoReturn:
    spec = ChildSpec.from_json(sys.argv[1]).on_rank(_rank().get("rank"))
    script_arg0, script_args = sys.argv[2], sys.argv[3:]
    module = script_args[0] if script_arg0 == "-m" and script_args else None
    die_with_parent()  # before anything that could wait on fastload
    channel = Channel(_channel_fd(), on_broken=_stop_soon)
    stacks.register_in_child()
    if module is not None:
        _prepare_module(script_args[1:])
        script_file = ""
    else:
        script_file = _prepare_sys(script_arg0, script_args)
    installed = hooks.install(channel, spec)
    channel.emit(
        EventKind.HELLO, pid=os.getpid(), t_ns=time.monotonic_ns(), schedstat=installed.clock.schedstat, **_rank()
    )
    signal.signal(STOP_SIGNAL, _on_stop_signal)
    if spec.mode.mode in (Mode.IN_PROCESS, Mode.REAL_SYNTHETIC):
        signal.signal(NEXT_SIGNAL, modes.on_next_signal)
    temp = share_temp_dir()
    reason, code = run_script(channel, script_file, module)
    Stop.finished = True
    signal.signal(STOP_SIGNAL, signal.SIG_IGN)
    channel.emit(EventKind.ENV, **torch_env(final=True))
    channel.emit(EventKind.END, reason=reason.value, exit_code=code, t_ns=time.monotonic_ns())
    if reason is not StopReason.ENOUGH_BATCHES:
        # The script ended by itself: what python does at exit that a script can see, in its
        # order: its non-daemon threads joined, its atexit handlers run (its DataLoader workers
        # shut down among them), its open files flushed. Not the interpreter's teardown after that,
        # which with torch imported takes 1-2 s of a CPU and which a run's next mode waits for.
        _shut_down_as_python()
    # A stopped run leaves at once: the script's non-daemon threads (background prefetchers) and
    # its DataLoader workers must not keep it alive, and fastload terminates what remains.
    remove_leftovers(temp)
    _flush_stdio()
    os._exit(code)


def _shut_down_as_python() -> None:
    """Python's exit up to its teardown: non-daemon threads joined (``threading._shutdown``, as
    the interpreter calls it), atexit handlers run, every file still open flushed (teardown would
    close them). ``__del__`` of objects alive at exit is not run, which python does not promise.
    The files are found by their type among every object alive (``_buffered_types``): asking each
    of the hundreds of thousands that torch leaves alive whether it is a file took 0.4 s."""
    import atexit
    import gc
    import threading

    with contextlib.suppress(Exception):
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    buffered = _buffered_types()
    for found in [o for o in gc.get_objects() if type(o) in buffered]:
        with contextlib.suppress(Exception):  # a file may refuse, closed or broken
            if not found.closed:
                found.flush()


def _buffered_types() -> set[type]:
    """Every class of file that buffers what is written to it: io's buffered and text classes and
    all their subclasses (``gzip.GzipFile``, a script's own)."""
    import _io

    found: set[type] = set()
    todo: list[type] = [_io._BufferedIOBase, _io._TextIOBase]
    while todo:
        kind = todo.pop()
        if kind not in found:
            found.add(kind)
            todo.extend(kind.__subclasses__())
    return found


def _channel_fd() -> int:
    """The event channel: the descriptor the parent passed, or in a rank of a data-parallel job
    (started by the launcher, which passes no descriptors on) the FIFO of its local rank."""
    folder = os.environ.pop(CHANNEL_DIR_ENV, None)
    if folder is not None:
        fd = _open_fifo(os.path.join(folder, f"events.{os.environ.get('LOCAL_RANK', '0')}"))
    else:
        fd = int(os.environ.pop(CHANNEL_FD_ENV))
    os.set_inheritable(fd, False)
    return fd


def _open_fifo(path: str) -> int:
    """The rank's FIFO, opened for writing once fastload holds its read end, within
    ``CHANNEL_OPEN_S``; a rank whose fastload is gone (no reader, or no FIFO) leaves at once."""
    deadline = time.monotonic() + CHANNEL_OPEN_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:  # ENXIO: no reader yet
                os._exit(PARENT_GONE)
            time.sleep(0.05)
            continue
        os.set_blocking(fd, True)
        return fd


def _stop_soon() -> None:
    """fastload is gone (its end of the channel closed): nothing measures the run and nothing
    would stop it, so it stops, as when fastload asks."""
    with contextlib.suppress(OSError):
        os.kill(os.getpid(), STOP_SIGNAL)


def _rank() -> dict[str, int]:
    """This process's place in a data-parallel job, as the launcher set it; empty outside one."""
    names = {"rank": "RANK", "local_rank": "LOCAL_RANK", "world_size": "WORLD_SIZE"}
    found = {key: os.environ.get(name, "") for key, name in names.items()}
    return {key: int(value) for key, value in found.items() if value.isdigit()}


def _flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
