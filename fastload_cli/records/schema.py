"""What a report read back must be: the JSON of ``Report`` (``fastload.report/1``), checked against
the records' own annotations before anything reads it.

Reports come from other machines and CI artifacts (``compare``, ``merge``, ``--baseline``), so
nothing in one is trusted: every key a record knows must hold the type its field declares (an
enum's value, a finite number, a string or list of bounded length, a nested record), the keys the
readers need must be there, and unknown keys are ignored (a later fastload may add fields). The
first problem found is raised as ``Malformed``, naming the field. Pure; stdlib only.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from functools import cache
from typing import Any, Union

from fastload_cli.records.modes import SCHEMA
from fastload_cli.records.report import Report, RunSummary, Verdict

MAX_STRING = 100_000  # characters: a traceback tail fits, a document of garbage does not
MAX_ITEMS = 100_000  # items in one list or object
MAX_INT = 2**63  # beyond any count or byte size a run measures
# The keys the readers use, which a report of this schema always has.
REQUIRED: dict[type, tuple[str, ...]] = {
    Report: ("schema", "command", "script", "runs", "verdict"),
    RunSummary: ("mode", "status", "batches"),
    Verdict: ("bottleneck", "label"),
}


# Records the report shows otherwise than as their fields: a field left out, and the keys shown instead.
SHOWN: dict[type, tuple[str, dict[str, Any]]] = {RunSummary: ("spec", {"mode": str, "variant": str | None})}


class Malformed(ValueError):
    """A report that does not hold what its schema says; ``field`` names where (``runs[2].mode``)."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}" if field else why)
        self.field, self.why = field, why


def check_report(document: object) -> None:
    """Raise ``Malformed`` where ``document`` is not a ``fastload.report/1`` report."""
    if not isinstance(document, dict):
        raise Malformed("", "not a fastload report (not a JSON object)")
    if "schema" not in document:
        raise Malformed("", "not a fastload report (it has no schema)")
    if document["schema"] != SCHEMA:
        raise Malformed("schema", f"{_shown(document['schema'])}, not {SCHEMA}")
    _record(document, Report, "")


def _record(value: object, kind: type, where: str) -> None:
    if not isinstance(value, dict):
        raise Malformed(where, f"expected an object ({kind.__name__}), got {_kind(value)}")
    if len(value) > MAX_ITEMS:
        raise Malformed(where, f"more than {MAX_ITEMS} keys")
    for name in REQUIRED.get(kind, ()):
        if name not in value:
            raise Malformed(_at(where, name), "missing")
    hints = _hints(kind)
    for name, item in value.items():
        if name in hints:
            _check(item, hints[name], _at(where, name))


def _check(value: object, hint: Any, where: str) -> None:
    """``value`` is of the type ``hint`` declares, or ``Malformed`` says how it is not."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        _one_of(value, args, where)
    elif origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        _fixed(value, args, where)
    elif origin in (tuple, list):
        _items(value, args[0], where)
    elif origin is dict:
        _mapping(value, args[1], where)
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
        _record(value, hint, where)
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        if value not in {m.value for m in hint}:
            raise Malformed(where, f"{_shown(value)} is not one of {', '.join(str(m.value) for m in hint)}")
    else:
        _scalar(value, hint, where)


def _one_of(value: object, options: tuple[Any, ...], where: str) -> None:
    if value is None and type(None) in options:
        return
    problems = []
    for option in (o for o in options if o is not type(None)):
        try:
            _check(value, option, where)
            return
        except Malformed as problem:
            problems.append(problem)
    raise problems[0] if len(problems) == 1 else Malformed(where, f"unexpected {_kind(value)}")


def _items(value: object, item: Any, where: str) -> None:
    if not isinstance(value, list):
        raise Malformed(where, f"expected a list, got {_kind(value)}")
    if len(value) > MAX_ITEMS:
        raise Malformed(where, f"more than {MAX_ITEMS} items")
    for index, each in enumerate(value):
        _check(each, item, f"{where}[{index}]")


def _fixed(value: object, items: tuple[Any, ...], where: str) -> None:
    """A tuple of fixed length (``tuple[int, float]``): each item of its own type."""
    if not isinstance(value, list):
        raise Malformed(where, f"expected a list, got {_kind(value)}")
    if len(value) != len(items):
        raise Malformed(where, f"expected {len(items)} items, got {len(value)}")
    for index, (each, item) in enumerate(zip(value, items, strict=True)):
        _check(each, item, f"{where}[{index}]")


def _mapping(value: object, item: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise Malformed(where, f"expected an object, got {_kind(value)}")
    if len(value) > MAX_ITEMS:
        raise Malformed(where, f"more than {MAX_ITEMS} keys")
    for key, each in value.items():
        _check(each, item, _at(where, str(key)))


def _scalar(value: object, hint: Any, where: str) -> None:
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and abs(value) < MAX_INT
    elif hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    elif hint is str:
        ok = isinstance(value, str) and len(value) <= MAX_STRING
    else:
        ok = True  # a field typed loosely (Any): anything JSON holds
    if not ok:
        raise Malformed(where, f"expected {_name(hint)}, got {_kind(value)}")


@cache
def _hints(kind: type) -> dict[str, Any]:
    hints = typing.get_type_hints(kind)
    if kind not in SHOWN:
        return hints
    left_out, shown = SHOWN[kind]
    return {**{k: v for k, v in hints.items() if k != left_out}, **shown}


def _at(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _name(hint: Any) -> str:
    return {bool: "true or false", int: "a whole number", float: "a finite number", str: "a string"}.get(
        hint, "a value"
    )


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, str):
        return "a string" if len(value) <= MAX_STRING else f"a string of {len(value)} characters"
    if isinstance(value, int):
        return "a whole number" if abs(value) < MAX_INT else "a whole number out of range"
    if isinstance(value, float):
        return "a number" if math.isfinite(value) else "a number that is not finite"
    return {type(None): "null", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
