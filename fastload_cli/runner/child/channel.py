"""Inside the child: the event channel to the parent, one JSON line per event on its own fd."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

from fastload_cli.records import EventKind


class Channel:
    """Writes one JSON line per event to the parent's pipe; silent in forked workers. When the
    parent's end is gone, reporting stops and ``on_broken`` is called once."""

    def __init__(self, fd: int, on_broken: Callable[[], None] | None = None) -> None:
        self._fd = fd
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._broken = False
        self._on_broken = on_broken

    def emit(self, kind: EventKind, **fields: Any) -> None:
        if self._broken or os.getpid() != self._pid:
            return
        fields["kind"] = kind.value
        data = (json.dumps(fields, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:  # the parent is gone: stop reporting, and say so once
                self._broken = True
                if self._on_broken is not None:
                    self._on_broken()

    def substitution(
        self, loader_id: int, location: str, original: str, replacement: str, guessed: bool = False, undone: str = ""
    ) -> None:
        """Something the mode changed in a loader (or could not change, and why); ``undone``: why
        it was changed back, where it was."""
        self.emit(
            EventKind.SUBSTITUTION,
            loader_id=loader_id,
            location=location,
            original=original,
            replacement=replacement,
            guessed=guessed,
            undone=bool(undone),
            reason=undone,
        )
