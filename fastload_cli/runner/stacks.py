"""Where the script's main thread was when a run timed out: its Python stack, read without the
script's help.

The child registers ``faulthandler`` on ``STACK_SIGNAL`` (``runner/child/stacks.py``), writing
to a file the parent names in ``STACK_FILE_ENV``. faulthandler dumps from a C-level signal
handler, so the stack arrives even while the main thread is blocked in C (a collective, a lock,
a socket read), when no Python signal handler could run. The file starts with the main thread's
id, so the parent can pick its stack among the others (workers' pin-memory thread, the script's
own threads).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time

from fastload_cli.records.protocol import STACK_SIGNAL

WAIT_S = 0.5  # how long the parent waits for the dump to appear
MAX_DUMP_BYTES = 1 << 20  # every thread's stack of a run fits
_THREAD = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+)")
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')


class StackProbe:
    """In the parent: the file the child dumps into, and reading the main thread's stack from it.

    The file is unlinked as soon as it is made: the child opens it through this process's open
    descriptor (``/proc/<pid>/fd/<n>``), so nothing of it is left on disk on any exit path, a
    SIGKILL included, and nothing can open it once fastload is gone."""

    def __init__(self) -> None:
        self._fd, name = tempfile.mkstemp(prefix="fastload-stack-", suffix=".txt")
        os.unlink(name)
        self.path = f"/proc/{os.getpid()}/fd/{self._fd}"

    def capture(self, pid: int) -> tuple[str, ...]:
        """Ask the child for its stacks and return the main thread's frames, most recent first
        (``file:line in function``); () when none arrived."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, STACK_SIGNAL)
        deadline = time.monotonic() + WAIT_S
        frames: tuple[str, ...] = ()
        while not frames and time.monotonic() < deadline:
            time.sleep(0.05)
            frames = main_thread_frames(self._read())
        return frames

    def _read(self) -> str:
        try:
            return os.pread(self._fd, MAX_DUMP_BYTES, 0).decode(errors="replace")
        except OSError:
            return ""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def main_thread_frames(dump: str) -> tuple[str, ...]:
    """The main thread's frames in a faulthandler dump whose first line names the main thread."""
    lines = dump.splitlines()
    if not lines or not lines[0].startswith("main "):
        return ()
    main, current = int(lines[0].split()[1], 16), None
    frames: list[str] = []
    for line in lines[1:]:
        if (thread := _THREAD.match(line)) is not None:
            if current == main and frames:
                break
            current, frames = int(thread.group(1), 16), []
        elif current == main and (frame := _FRAME.match(line)) is not None:
            frames.append(f"{frame['file']}:{frame['line']} in {frame['func']}")
    return tuple(frames) if current == main else ()
