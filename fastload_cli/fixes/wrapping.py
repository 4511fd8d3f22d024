"""What the fixes share: what a wrapper passes through to what it wraps, and a batch's tensors mapped."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def passed_through(wrapper: Any, inner: str, name: str) -> Any:
    """An attribute the wrapper does not have, looked up on what it wraps: never a special name
    (a wrapped dataset's ``__getitems__`` would bypass the wrapper's own ``__getitem__``), and never
    while the wrapper is being unpickled, when it wraps nothing yet."""
    wrapped = wrapper.__dict__.get(inner)
    if wrapped is None or name.startswith("__"):
        raise AttributeError(name)
    return getattr(wrapped, name)


def map_tensors(batch: Any, fn: Callable[[Any], Any]) -> Any:
    """``batch`` with ``fn`` applied to every tensor in it, through tuples, lists, named tuples and
    dicts; anything else is kept as it is."""
    torch = sys.modules.get("torch")
    return map_leaves(batch, lambda x: torch is not None and isinstance(x, torch.Tensor), fn)


def map_leaves(value: Any, is_leaf: Callable[[Any], bool], fn: Callable[[Any], Any]) -> Any:
    """``value`` with ``fn`` applied to each leaf ``is_leaf`` picks, through dicts, named tuples,
    tuples and lists; anything else is kept as it is."""
    if is_leaf(value):
        return fn(value)
    if isinstance(value, dict):
        return type(value)({k: map_leaves(v, is_leaf, fn) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(map_leaves(v, is_leaf, fn) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(map_leaves(v, is_leaf, fn) for v in value)
    return value
