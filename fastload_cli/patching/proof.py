"""A patch proven in plain runs: each round runs the script as it is and each patched copy, one
after the other (the order turned round every other round, so neither side always runs on a
machine warmed by the other), and a patch's gain in a round is its rate over the unchanged
script's in that round. A patch wins when it was faster in every round: the slowest round's
gain, the low end of its interval, is above 1. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

UNCHANGED = "unchanged"  # the arm that runs the script as it is


@dataclass(frozen=True, slots=True, kw_only=True)
class Proven:
    """One patch measured in plain runs against the script as it is."""

    name: str
    ratios: tuple[float, ...]  # per round: patched / unchanged batches per second
    failed: str | None = None  # its plain run failed: what the script said last

    @property
    def gain(self) -> float:
        return statistics.median(self.ratios)

    @property
    def low(self) -> float:
        return min(self.ratios)

    @property
    def high(self) -> float:
        return max(self.ratios)

    @property
    def wins(self) -> bool:
        """Faster than the unchanged script in every round."""
        return bool(self.ratios) and self.low > 1.0

    @property
    def said(self) -> str:
        if self.failed is not None:
            return f"its plain run failed: {self.failed}"
        rounds = len(self.ratios)
        span = f"{self.low:.2f}x-{self.high:.2f}x over {rounds} rounds" if rounds > 1 else "one round"
        return f"{self.gain:.2f}x ({span})"


def order(arms: Sequence[str], round_index: int) -> list[str]:
    """The runs of one round: the unchanged script and each patch, reversed every other round."""
    runs = [UNCHANGED, *arms]
    return runs if round_index % 2 == 0 else runs[::-1]


def proven(rates: dict[str, list[float]], failed: dict[str, str] | None = None) -> tuple[Proven, ...]:
    """Each patch's gains, round by round, from every arm's rates (the same rounds, in order); a
    patch whose plain run failed (``failed``: its name -> what the script said) has none."""
    base = rates[UNCHANGED]
    found = [
        Proven(name=name, ratios=tuple(r / b for r, b in zip(arm, base, strict=False) if b > 0))
        for name, arm in rates.items()
        if name != UNCHANGED and name not in (failed or {})
    ]
    return (*found, *(Proven(name=name, ratios=(), failed=why) for name, why in (failed or {}).items()))


def winners(found: Sequence[Proven]) -> list[Proven]:
    """The patches that won, the largest gain first."""
    return sorted((p for p in found if p.wins), key=lambda p: p.gain, reverse=True)


def chosen(alone: Sequence[Proven], combined: Proven | None) -> Proven | None:
    """The patch to keep: the winners combined where that won and gained at least as much as the
    best alone, else the best alone; None where nothing won."""
    best = next(iter(winners(alone)), None)
    if combined is not None and combined.wins and (best is None or combined.gain >= best.gain):
        return combined
    return best
