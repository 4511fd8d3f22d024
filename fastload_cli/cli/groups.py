"""Option groups: options declared once, as the fields of a record, and added to any command.

A group is a frozen dataclass whose fields are annotated with their ``typer.Option`` (``Annotated``)
and carry their defaults. A command names a group as one parameter (``measure: Measure``, with a
preset instance as its default where the command's defaults differ); ``@grouped`` puts the group's
fields in the signature typer reads and hands the command the record built from what was given.
Adding an option to every command that takes a group is one field in the group.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

F = TypeVar("F", bound=Callable[..., Any])
_GROUPS: set[type] = set()
T = TypeVar("T", bound=type)


def group(cls: T) -> T:
    """Register a dataclass of options as a group ``@grouped`` expands."""
    assert dataclasses.is_dataclass(cls), f"{cls.__name__}: a group is a dataclass"
    _GROUPS.add(cls)
    return cls


def grouped(command: F) -> F:
    """``command`` with each group parameter replaced by the group's options, keyword-only at the
    end of the signature; each group reaches the command as one record."""
    signature = inspect.signature(command)
    hints = get_type_hints(command, include_extras=True)  # the command's own, resolved where it is defined
    own: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, Any]] = {}
    for parameter in signature.parameters.values():
        kind = hints.get(parameter.name)
        if isinstance(kind, type) and kind in _GROUPS:
            groups[parameter.name] = (kind, parameter.default)
        else:
            own.append(parameter.replace(annotation=hints[parameter.name]))
    added = [option for kind, preset in groups.values() for option in _options(kind, preset)]
    names = {name: [f.name for f in dataclasses.fields(kind)] for name, (kind, _) in groups.items()}

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name, (kind, _) in groups.items():
            kwargs[name] = kind(**{field: kwargs.pop(field) for field in names[name]})
        return command(*args, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in (*own, *added)}
    del wrapper.__wrapped__  # typer must read the signature above, not the command's
    return wrapper  # type: ignore[return-value]


def _options(kind: type, preset: Any) -> list[inspect.Parameter]:
    """The group's fields as keyword-only parameters; ``preset`` (an instance) overrides defaults."""
    hints = get_type_hints(kind, include_extras=True)
    given = preset if isinstance(preset, kind) else None
    return [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=getattr(given, f.name) if given is not None else _default(f),
            annotation=hints[f.name],
        )
        for f in dataclasses.fields(kind)
    ]


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default
