"""What a terminal renderer is handed, made safe to show: every string of a report (this run's,
or one read from a file) without control characters (``formatting.printable``). Markup is never
read from strings: every console that prints a report is made with ``markup=False``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from fastload_cli.formatting import printable

T = TypeVar("T")


def shown(value: T) -> T:
    """``value`` (a record, a JSON document, or what they hold) with every string printable."""
    return strings_changed(value, printable)


def strings_changed(value: T, change: Callable[[str], str], *, keys: bool = True) -> T:
    """``value`` with ``change`` applied to every string it holds, record by record, mapping keys
    too unless ``keys`` is False."""
    return _changed(value, change, keys)


def _changed(value: Any, change: Callable[[str], str], keys: bool) -> Any:
    if isinstance(value, str):
        return change(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _changed(getattr(value, f.name), change, keys) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_changed(v, change, keys) for v in value)
    if isinstance(value, dict):
        return {(_changed(k, change, keys) if keys else k): _changed(v, change, keys) for k, v in value.items()}
    return value
