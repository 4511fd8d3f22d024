"""A plain run, as ``fastload fix`` proves a patch with: the script (or its patched copy) run as
``python SCRIPT`` would, nothing of fastload measuring inside it. Only its epochs are timed: every
DataLoader's ``iter()`` is noted (each epoch then runs from one ``iter()`` of its loader to the
next, the last one to the script's end, so start-up, the last step and the shutdown of its
workers all count), each epoch is cut after ``epoch_batches`` batches, and the script ends when
its busiest loader starts epoch ``epochs + 1``.

The patched copy's files stand in for the originals under the originals' names: the script is
compiled from the patched text with its own path as its file name, and a module it imports from
a patched file is loaded from the patched text, so ``__file__``, relative paths and tracebacks are
the script's own. Started as ``python -c PLAIN <package parent> <settings JSON> SCRIPT ARGS...``
(``records/protocol.py``); it writes the epochs it timed, as JSON, to the settings' ``result`` file
at exit. Only the stdlib (and torch, through the class it patches) is used here.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import runpy
import sys
import time
import types
from collections.abc import Iterator
from typing import Any

_epochs: dict[int, list[list[float]]] = {}  # id(loader) -> each epoch's [iter() time, batches]


def main() -> None:
    settings = json.loads(sys.argv.pop(1))
    sources: dict[str, str] = settings["sources"]  # original path -> patched copy
    sys.meta_path.insert(0, _Patched(sources))
    _time_epochs(int(settings["epochs"]), int(settings["epoch_batches"]))
    atexit.register(_write, settings["result"])
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    if settings.get("module"):
        runpy.run_module(script, run_name="__main__", alter_sys=True)
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as python SCRIPT would
    _run_script(script, sources.get(os.path.abspath(script)))


def _run_script(script: str, patched: str | None) -> None:
    """``script`` as ``__main__``, from its patched copy's text where it has one."""
    if patched is None:
        runpy.run_path(script, run_name="__main__")
        return
    main = types.ModuleType("__main__")
    main.__file__ = os.path.abspath(script)
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    with open(patched, encoding="utf-8") as handle:
        code = compile(handle.read(), main.__file__, "exec")
    exec(code, main.__dict__)


class _Patched(importlib.abc.MetaPathFinder):
    """Modules whose file has a patched copy: loaded from the copy's text under the original's name."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not self.sources:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.origin is None or os.path.abspath(spec.origin) not in self.sources:
            return None
        copy = self.sources[os.path.abspath(spec.origin)]
        return importlib.util.spec_from_file_location(name, spec.origin, loader=_CopyLoader(name, spec.origin, copy))


class _CopyLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name: str, path: str, copy: str) -> None:
        super().__init__(name, path)
        self.copy = copy

    def get_data(self, path: str) -> bytes:
        if path == self.path:
            with open(self.copy, "rb") as handle:
                return handle.read()
        return super().get_data(path)

    def path_stats(self, path: str) -> dict[str, Any]:
        raise OSError("a patched copy is compiled afresh, never from the original's bytecode cache")


def _time_epochs(epochs: int, epoch_batches: int) -> None:
    from torch.utils.data import DataLoader

    built = DataLoader.__iter__

    def __iter__(loader: Any) -> Iterator[Any]:
        started = _epochs.setdefault(id(loader), [])
        if len(started) == epochs:
            raise SystemExit(0)  # enough epochs: the last one ends now
        started.append([time.perf_counter(), 0])
        return _counted(built(loader), started[-1], epoch_batches)

    DataLoader.__iter__ = __iter__  # type: ignore[assignment]


def _counted(batches: Iterator[Any], epoch: list[float], limit: int) -> Iterator[Any]:
    """The epoch's first ``limit`` batches, counted: the script's loop then ends the epoch."""
    for batch in batches:
        if epoch[1] == limit:
            return
        epoch[1] += 1
        yield batch


def _write(path: str) -> None:
    busiest = max(_epochs.values(), key=lambda e: sum(b for _, b in e), default=[])
    document = {"epochs": busiest, "end": time.perf_counter()}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
