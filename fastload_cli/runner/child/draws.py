"""Inside the child: which samples each batch of a map-style loader was drawn for, as a digest of
its indices, for the runs whose batches are compared (the data guard, ``analyzer/same_batches.py``).

The main process draws each batch's indices from the sampler (``_next_index``) in order, ahead of
the batches the workers deliver; in order, the k-th batch an epoch delivers is its k-th draw. Each
epoch's iterator keeps its draws' digests until its batches take them (a few batches ahead, as
many as the workers prefetch). Only the stdlib is used here.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Callable
from typing import Any

DRAWN = "_fastload_drawn"  # the iterator's digests of its draws, oldest first
# Draws not yet taken by a batch past which an epoch stops noting them (its batches are taken
# elsewhere, as inside a subclass's own iterator): memory stays bounded, and nothing misaligns.
MAX_AHEAD = 1024
MASK = (1 << 64) - 1


def install(iter_cls: type) -> None:
    """Note every draw of ``_BaseDataLoaderIter`` (and its subclasses), from each epoch's start."""
    iter_cls._reset = _resetting(iter_cls._reset)  # type: ignore[attr-defined]
    iter_cls._next_index = _noting(iter_cls._next_index)  # type: ignore[attr-defined]


def next_key(iterator: Any) -> str | None:
    """The digest of the draw behind the batch ``iterator`` just delivered, or None."""
    drawn = getattr(iterator, DRAWN, None)
    return drawn.popleft() if drawn else None


def _resetting(original: Callable[..., Any]) -> Callable[..., Any]:
    def _reset(iterator: Any, *args: Any, **kwargs: Any) -> Any:
        setattr(iterator, DRAWN, collections.deque())
        return original(iterator, *args, **kwargs)

    return _reset


def _noting(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def _next_index(iterator: Any) -> Any:
        found = original(iterator)
        drawn = getattr(iterator, DRAWN, None)
        if drawn is not None and len(drawn) >= MAX_AHEAD:
            setattr(iterator, DRAWN, None)
        elif drawn is not None:
            drawn.append(_digest(found))
        return found

    return _next_index


def _digest(indices: Any) -> str:
    """The indices of one draw (a batch's list, or one index), as a short digest: the hash of their
    tuple where they are whole numbers (the same in every process: an int's hash is not salted, and
    a few microseconds for a batch of 256), else a digest of their text."""
    items = indices if isinstance(indices, (list, tuple)) else [indices]
    try:
        return format(hash(tuple(map(int, items))) & MASK, "016x")
    except (TypeError, ValueError):
        return hashlib.blake2b(repr(items).encode(), digest_size=8).hexdigest()
