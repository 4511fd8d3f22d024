"""A command's parts in their order: the next step is the first part's that has one, starting
at the part of the last step taken (the parts before it are over)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from fastload_cli.plan.state import State
from fastload_cli.plan.step import Part, Step

Decide = Callable[[State], Step | None]  # a part's next step, or None when it has no more
T = TypeVar("T")


def next_in(parts: Sequence[tuple[Part, Decide]], state: State) -> Step | None:
    """The next step of the first part, from the current one on, that has one; None at the end."""
    taken = state.outcome.taken
    order = [part for part, _ in parts]
    start = order.index(taken[-1].part) if taken else 0
    for _, decide in parts[start:]:
        step = decide(state)
        if step is not None:
            return step
    return None


def queued(taken: Sequence[Step], planned: Sequence[T]) -> T | None:
    """The next of ``planned``, which a part's first step (no run: its decision) carried to the
    steps after it; None once each has been taken."""
    done = len(taken) - 1
    return planned[done] if done < len(planned) else None
