"""What a terminal renderer is handed, made safe to show: every string of a report (this run's,
or one read from a file) without control characters (``formatting.printable``). Markup is never
read from strings: every console that prints a report is made with ``markup=False``."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from fastload_cli.formatting import printable

T = TypeVar("T")


def shown(value: T) -> T:
    """``value`` (a record, a JSON document, or what they hold) with every string printable."""
    return _shown(value)


def _shown(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _shown(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_shown(v) for v in value)
    if isinstance(value, dict):
        return {_shown(k): _shown(v) for k, v in value.items()}
    return value
