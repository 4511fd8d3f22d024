"""Inside the child: find random augmentation in a dataset's transform pipelines, and (for the
``no-aug`` mode) replace it with deterministic, shape-preserving stand-ins.

Runs at ``DataLoader`` construction, before workers start, so forked and spawned workers both get
the substituted pipeline. Only the stdlib is imported at module level; torch and torchvision are
used through the objects found in the dataset.
"""

from __future__ import annotations

import functools
import re
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.runner.child import albumentations_standins as album
from fastload_cli.runner.child.standins import (
    GUESS_PATTERN,
    callable_name,
    is_torchvision,
    standin,
    tv_module,
)

# Containers whose members are substituted one by one (torchvision's, torch's, albumentations').
CONTAINERS = frozenset({"Compose", "RandomOrder", "Sequential", "ReplayCompose"})

# Dataset attributes that hold transform pipelines (plus any name containing these words).
PIPELINE_ATTR = re.compile(r"transform|aug", re.IGNORECASE)
MAX_DEPTH = 8
MAX_CHAIN = 64  # steps followed down a Hugging Face iterable dataset's chain (map, filter, shuffle, ...)


@dataclass(slots=True)
class Found:
    """One random transform: where it is, what it is, what replaces it."""

    location: str
    original: str
    replacement: str
    guessed: bool


@dataclass(slots=True)
class Walk:
    keep: frozenset[str]
    drop: frozenset[str]
    dry: bool = False  # only find: change nothing
    found: list[Found] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)  # functions already searched for the pipelines they use
    undo: list[tuple[Any, str, Any]] = field(default_factory=list)  # (object, attribute, old value)

    def restore(self) -> None:
        """Put every replaced pipeline back, last replaced first."""
        for obj, attr, old in reversed(self.undo):
            setattr(obj, attr, old)
        self.undo.clear()


def describe(obj: object) -> str:
    if album.is_albumentations(obj):
        return album.describe(obj)
    text = repr(obj) if is_torchvision(obj) else callable_name(obj)
    text = " ".join(text.split())
    return text if len(text) <= 120 else text[:117] + "..."


# --------------------------------------------------------------------------------------------
# Walking pipelines and datasets
# --------------------------------------------------------------------------------------------


def substitute(obj: Any, location: str, walk: Walk, depth: int = 0) -> Any:
    """``obj`` with every random transform in it replaced; records each replacement in ``walk``.

    Returns ``obj`` itself when nothing inside it changed.
    """
    if obj is None or depth > MAX_DEPTH:
        return obj
    name = callable_name(obj)
    if name == "RandomChoice" and is_torchvision(obj) and name not in walk.keep:
        first = substitute(obj.transforms[0], f"{location}.transforms[0]", walk, depth + 1)
        walk.found.append(Found(location, describe(obj), f"its first choice, {describe(first)}", False))
        return first
    if name == "StandardTransform":
        return _substitute_attrs(obj, location, ("transform", "target_transform"), walk, depth)
    if name in CONTAINERS and name not in walk.keep:
        return _substitute_container(obj, location, walk, depth)
    if isinstance(obj, (list, tuple)):
        items = [substitute(item, f"{location}[{i}]", walk, depth + 1) for i, item in enumerate(obj)]
        return obj if all(a is b for a, b in zip(items, obj, strict=True)) else type(obj)(items)
    if isinstance(obj, dict):
        new = {k: substitute(v, f"{location}[{k!r}]", walk, depth + 1) for k, v in obj.items()}
        return obj if all(new[k] is v for k, v in obj.items()) else new
    if holds_pipelines(obj):
        already = len(walk.found)
        _substitute_attrs(obj, location, held_pipelines(obj), walk, depth)  # the holder stays; its pipelines change
        if len(walk.found) > already:
            return obj
    if isinstance(obj, types.FunctionType) and name not in walk.drop:
        already = len(walk.found)
        _substitute_around(obj, location, walk, depth)  # the function stays; what it uses is replaced
        if len(walk.found) > already:
            return obj
    found = standin(obj, walk.keep, walk.drop)  # a function that uses no pipeline: by its name
    if found is None and isinstance(obj, functools.partial):
        return _substitute_partial(obj, location, walk, depth)
    if found is None:
        return obj
    replacement, guessed = found
    walk.found.append(Found(location, describe(obj), describe(replacement), guessed))
    return replacement


def holds_pipelines(obj: object) -> bool:
    """An object of the script's own class (or its project's) that applies pipelines it holds:
    torchvision's reference presets (``self.transforms = T.Compose([...])``, called from
    ``__call__``), a class around an albumentations ``Compose``, a ``nn.Module`` of transforms."""
    if isinstance(obj, (type, types.FunctionType, types.MethodType, functools.partial)) or not callable(obj):
        return False
    if is_torchvision(obj) or album.is_albumentations(obj) or not _user_code(type(obj)):
        return False
    if GUESS_PATTERN.search(callable_name(obj)):
        return False  # named as random augmentation (timm's RandAugment): replaced whole, by its name
    return bool(held_pipelines(obj))


def held_pipelines(obj: object) -> tuple[str, ...]:
    """The names of ``obj``'s attributes that hold pipelines and that its ``__call__`` (or
    ``forward``) reads, directly or through the methods it calls: a Compose, a list, tuple or
    dict of transforms, a function of the script's, or another object that holds pipelines."""
    attrs = getattr(obj, "__dict__", None)
    if not isinstance(attrs, dict):
        return ()
    read = _names_read(type(obj))
    return tuple(
        name
        for name, value in attrs.items()
        if name in read and not name.startswith("__") and (_holds_transforms(value) or _holder_like(value))
    )


def _names_read(cls: type) -> set[str]:
    """The attribute names the class's ``__call__`` and ``forward`` read, and those of the methods
    they call on ``self``, a few calls deep."""
    names: set[str] = set()
    todo = [m for m in ("__call__", "forward") if isinstance(getattr(cls, m, None), types.FunctionType)]
    for _ in range(MAX_DEPTH):
        if not todo:
            break
        fresh = set(global_names(getattr(cls, todo.pop()).__code__)) - names
        names |= fresh
        todo += [n for n in fresh if isinstance(getattr(cls, n, None), types.FunctionType)]
    return names


def _holds_transforms(value: object) -> bool:
    if isinstance(value, dict):
        return bool(value) and all(callable(v) and not isinstance(v, type) for v in value.values())
    return pipeline_like(value)


def _holder_like(value: object) -> bool:
    """Another object of the script's classes with pipelines inside (searched no deeper than this:
    ``holds_pipelines`` asks again when the walk gets there)."""
    if isinstance(value, (type, types.FunctionType, functools.partial)) or not callable(value):
        return False
    if is_torchvision(value) or album.is_albumentations(value) or not _user_code(type(value)):
        return False
    inner = getattr(value, "__dict__", None)
    return isinstance(inner, dict) and any(_holds_transforms(v) for v in inner.values())


def _substitute_container(obj: Any, location: str, walk: Walk, depth: int) -> Any:
    torch_sequential = type(obj).__name__ == "Sequential" and not album.is_albumentations(obj)
    members = list(obj.children()) if torch_sequential else getattr(obj, "transforms", None)
    if not isinstance(members, (list, tuple)):
        return obj
    new = [substitute(m, f"{location}[{i}]", walk, depth + 1) for i, m in enumerate(members)]
    if all(a is b for a, b in zip(new, members, strict=True)):
        return obj
    if album.is_albumentations(obj):
        return album.with_members(obj, new)
    if torch_sequential:
        import torch

        return type(obj)(*[m if isinstance(m, torch.nn.Module) else torch.nn.Identity() for m in new])
    if type(obj).__name__ == "RandomOrder":
        return tv_module(obj).Compose(new)
    return type(obj)(new)


def _substitute_attrs(obj: Any, location: str, names: tuple[str, ...], walk: Walk, depth: int) -> Any:
    """Substitute the pipelines held in ``obj``'s attributes ``names``, in place."""
    for attr in names:
        _replace(obj, attr, f"{location}.{attr}", walk, depth)
    return obj


def _replace(holder: Any, attr: str, location: str, walk: Walk, depth: int) -> None:
    """Substitute the pipeline ``holder.attr`` holds, in place, where it changed (not when dry)."""
    current = getattr(holder, attr, None)
    if current is None:
        return
    new = substitute(current, location, walk, depth + 1)
    if new is not current and not walk.dry:
        try:
            setattr(holder, attr, new)
            walk.undo.append((holder, attr, current))
        except (AttributeError, TypeError) as exc:
            walk.problems.append(f"cannot replace {location}: {exc}")


class Entry:
    """A mapping's item as an attribute (``value``): a pipeline held in a dict (a function's
    module globals, a Hugging Face dataset's format arguments) is replaced, restored and swapped
    like one held in an attribute."""

    __slots__ = ("key", "mapping")

    def __init__(self, mapping: dict[str, Any], key: str) -> None:
        self.mapping, self.key = mapping, key

    @property
    def value(self) -> Any:
        return self.mapping.get(self.key)

    @value.setter
    def value(self, new: Any) -> None:
        self.mapping[self.key] = new


def pipeline_like(value: object) -> bool:
    """A transform pipeline, or a function or partial that may use one: what a function's closure
    or globals are searched for (never arbitrary objects, modules or classes)."""
    if isinstance(value, (types.FunctionType, functools.partial)):
        return _user_code(value)
    if isinstance(value, (list, tuple)):
        return bool(value) and all(callable(v) and not isinstance(v, type) for v in value)
    if isinstance(value, type) or not callable(value):
        return False
    name = callable_name(value)
    return is_torchvision(value) or name in CONTAINERS or bool(GUESS_PATTERN.search(name))


def _user_code(fn: Any) -> bool:
    """A function of the script's (or its project's), not of Python's, torch's or a library's."""
    module = getattr(fn.func if isinstance(fn, functools.partial) else fn, "__module__", None) or ""
    return module.split(".")[0] not in LIBRARY_MODULES


# Top-level packages whose functions are never searched for the script's pipelines.
LIBRARY_MODULES = frozenset(
    {"torch", "torchvision", "numpy", "PIL", "datasets", "transformers", "functools", "builtins", "albumentations",
     "cv2"}
)  # fmt: skip


def _substitute_around(fn: types.FunctionType, location: str, walk: Walk, depth: int) -> None:
    """The pipelines a plain function uses, replaced where they live: in its closure (a Compose
    built in an enclosing function) and in its module's globals (a Compose at module level), and
    in the functions it calls from there. The function itself is not changed."""
    if depth > MAX_DEPTH or not _user_code(fn) or id(fn) in walk.seen:
        return
    walk.seen.add(id(fn))
    holders: list[tuple[Any, str, str]] = [
        (cell, "cell_contents", f"{fn.__qualname__} (its {var})")
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False)
    ]
    holders += [(Entry(fn.__globals__, var), "value", f"{fn.__module__}.{var}") for var in global_names(fn.__code__)
                if var in fn.__globals__]  # fmt: skip
    for holder, attr, where in holders:
        try:
            held = getattr(holder, attr)
        except ValueError:  # a closure's variable not bound yet
            continue
        if isinstance(held, types.FunctionType):  # a helper it calls: searched in turn, never replaced itself
            _substitute_around(held, where, walk, depth + 1)
        elif pipeline_like(held) or holds_pipelines(held):
            _replace(holder, attr, where, walk, depth)


def global_names(code: types.CodeType, depth: int = 0) -> list[str]:
    """The names ``code`` may read from its module's globals, its comprehensions' and inner
    functions' included (before Python 3.12 a comprehension is a code object of its own)."""
    inner = [c for c in code.co_consts if isinstance(c, types.CodeType)] if depth < MAX_DEPTH else []
    return list(dict.fromkeys([*code.co_names, *(n for c in inner for n in global_names(c, depth + 1))]))


def _substitute_partial(obj: functools.partial, location: str, walk: Walk, depth: int) -> Any:
    """A ``functools.partial``: the pipelines among its arguments replaced (a new partial where any
    was), and those its function uses, where they live."""
    if isinstance(obj.func, types.FunctionType):
        _substitute_around(obj.func, location, walk, depth)
    args = [substitute(a, f"{location}.args[{i}]", walk, depth + 1) if pipeline_like(a) else a
            for i, a in enumerate(obj.args)]  # fmt: skip
    keywords = {k: substitute(v, f"{location}.{k}", walk, depth + 1) if pipeline_like(v) else v
                for k, v in obj.keywords.items()}  # fmt: skip
    same = all(a is b for a, b in zip(args, obj.args, strict=True)) and all(
        keywords[k] is v for k, v in obj.keywords.items()
    )
    return obj if same else functools.partial(obj.func, *args, **keywords)


def pipeline_attrs(dataset: Any) -> list[str]:
    """Names of the dataset's attributes that hold transform pipelines."""
    attrs = getattr(dataset, "__dict__", {})
    return [
        name
        for name, value in attrs.items()
        if PIPELINE_ATTR.search(name) and value is not None and (callable(value) or isinstance(value, (list, tuple)))
    ]


def nested_datasets(dataset: Any) -> Iterator[tuple[str, Any]]:
    """(attribute path, dataset) for datasets inside ``dataset``: Subset, ConcatDataset, wrappers."""
    for name, value in getattr(dataset, "__dict__", {}).items():
        if _is_dataset(value):
            yield name, value
        elif isinstance(value, (list, tuple)) and name == "datasets":
            for i, item in enumerate(value):
                if _is_dataset(item):
                    yield f"{name}[{i}]", item


def _is_dataset(value: object) -> bool:
    return any(
        base.__name__ in ("Dataset", "IterableDataset") and base.__module__.startswith("torch.utils.data")
        for base in type(value).__mro__
    )


def walk_dataset(dataset: Any, walk: Walk, location: str = "dataset", seen: set[int] | None = None) -> None:
    """Substitute the random transforms of ``dataset`` and of every dataset nested in it."""
    seen = set() if seen is None else seen
    if id(dataset) in seen or len(seen) > 64:
        return
    seen.add(id(dataset))
    # ``transforms`` last: torchvision's StandardTransform wraps ``transform`` and
    # ``target_transform``, which were substituted just before.
    names = sorted(pipeline_attrs(dataset), key=lambda n: n == "transforms")
    formats = getattr(dataset, "_format_kwargs", None)  # Hugging Face datasets: set_transform, with_transform
    if isinstance(formats, dict) and formats.get("transform") is not None:
        _replace(Entry(formats, "transform"), "value", f"{location}.set_transform", walk, 0)
    for i, mapped in enumerate(on_the_fly_maps(dataset)):
        _replace(mapped, "function", f"{location}.map[{i}]", walk, 0)
    for name in names:
        current = getattr(dataset, name)
        if name == "transforms" and callable_name(current) == "StandardTransform":
            if not walk.dry:
                _rebuild_standard_transform(dataset, current, walk)
            continue
        _substitute_attrs(dataset, location, (name,), walk, 0)
    for name, inner in nested_datasets(dataset):
        walk_dataset(inner, walk, f"{location}.{name}", seen)


def on_the_fly_maps(dataset: Any) -> list[Any]:
    """The steps of a Hugging Face ``datasets.IterableDataset`` that apply a ``map`` function as
    examples stream (each holds it in ``function``), in the order they apply: the chain of
    examples iterables runs from the last ``map`` in to the source."""
    found, node = [], getattr(dataset, "_ex_iterable", None)
    for _ in range(MAX_CHAIN):
        if node is None:
            break
        if type(node).__name__ == "MappedExamplesIterable" and callable(getattr(node, "function", None)):
            found.append(node)
        node = getattr(node, "ex_iterable", None)
    return found[::-1]


def _rebuild_standard_transform(dataset: Any, current: Any, walk: Walk) -> None:
    transform = getattr(dataset, "transform", current.transform)
    target = getattr(dataset, "target_transform", current.target_transform)
    if transform is not current.transform or target is not current.target_transform:
        dataset.transforms = type(current)(transform, target)
        walk.undo.append((dataset, "transforms", current))


def find_augmentations(dataset: Any, keep: frozenset[str], drop: frozenset[str]) -> list[Found]:
    """What ``no-aug`` would replace, without changing the dataset."""
    walk = Walk(keep=keep, drop=drop, dry=True)
    walk_dataset(dataset, walk)
    return walk.found


def derandomize(dataset: Any, keep: frozenset[str], drop: frozenset[str]) -> Walk:
    """Replace, in place, the random transforms of ``dataset``; the walk says what changed."""
    walk = Walk(keep=keep, drop=drop)
    walk_dataset(dataset, walk)
    return walk
