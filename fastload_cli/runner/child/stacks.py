"""In the child: dump every thread's stack to the file the parent names, on ``STACK_SIGNAL``
(``runner/stacks.py`` reads it). faulthandler dumps from a C-level signal handler, so the stack
arrives even while the main thread is blocked in C (a collective, a lock, a socket read).
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import threading
from typing import IO

from fastload_cli.records.protocol import STACK_FILE_ENV, STACK_SIGNAL

_handle: list[IO[str]] = []  # the child's open dump file, kept alive for faulthandler


def register_in_child() -> None:
    """In the child: dump every thread's stack to the parent's file on ``STACK_SIGNAL``."""
    path = os.environ.pop(STACK_FILE_ENV, None)
    if not path:
        return
    with contextlib.suppress(OSError, ValueError, RuntimeError):
        handle = open(path, "w")  # noqa: SIM115 (faulthandler writes to it until the process ends)
        handle.write(f"main {threading.main_thread().ident:#x}\n")
        handle.flush()
        faulthandler.register(STACK_SIGNAL, file=handle, all_threads=True, chain=False)
        _handle.append(handle)
