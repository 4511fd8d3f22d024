"""A record read back from its JSON: each field decoded by the type its record declares.

Pure and generic: enums from their values, tuples and lists item by item, nested records by their
own annotations, a record shown otherwise than as its fields by a reader of its own (``special``).
A key a record does not know is ignored (a later fastload may add fields); a field that is
missing takes its default, or None where its type allows it. Check a document first
(``records.schema.check_report``): this reads, it does not judge.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Collection, Mapping
from functools import cache
from typing import Any, TypeVar, Union

T = TypeVar("T")
Special = Mapping[type, Callable[[Mapping[str, Any]], Any]]


def record(kind: type[T], raw: Mapping[str, Any], special: Special) -> T:
    """``raw`` as a ``kind``."""
    if kind in special:
        return typing.cast(T, special[kind](raw))
    return kind(**fields(kind, raw, special))


def fields(kind: type, raw: Mapping[str, Any], special: Special, skip: Collection[str] = ()) -> dict[str, Any]:
    """The fields of a ``kind`` in ``raw``, decoded, but those in ``skip``; ValueError for a
    required field that is missing and cannot be None."""
    hints = _hints(kind)
    found: dict[str, Any] = {}
    for f in dataclasses.fields(kind):
        if f.name in skip:
            continue
        if f.name in raw:
            found[f.name] = value(raw[f.name], hints[f.name], special)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if not _optional(hints[f.name]):
                raise ValueError(f"{kind.__name__}.{f.name} is missing")
            found[f.name] = None
    return found


def value(raw: Any, hint: Any, special: Special) -> Any:
    """``raw`` as the type ``hint`` declares."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if raw is None:
        return None
    if origin in (Union, types.UnionType):
        return _one_of(raw, [a for a in args if a is not type(None)], special)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(value(item, args[0], special) for item in raw)
        return tuple(value(item, each, special) for item, each in zip(raw, args, strict=True))
    if origin is list:
        return [value(item, args[0], special) for item in raw]
    if origin is dict:
        return {key: value(item, args[1], special) for key, item in raw.items()}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return record(hint, raw, special)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(raw)
    if hint is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    return raw


def _one_of(raw: Any, options: list[Any], special: Special) -> Any:
    """``raw`` as the first of ``options`` it reads as: a record from an object, a sequence from a
    list, a scalar as it is."""
    for option in options:
        origin = typing.get_origin(option) or option
        if isinstance(raw, dict) and (origin is dict or dataclasses.is_dataclass(origin)):
            return value(raw, option, special)
        if isinstance(raw, list) and origin in (tuple, list):
            return value(raw, option, special)
        if not isinstance(raw, (dict, list)) and not (
            origin in (dict, tuple, list) or dataclasses.is_dataclass(origin)
        ):
            return value(raw, option, special)
    return raw


def _optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType) and type(None) in typing.get_args(hint)


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)
