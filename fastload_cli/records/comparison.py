"""Two reports side by side: the figures of each, and what changed between them (``fastload
compare``, the ``--baseline`` gate). ``analyzer.compare`` fills them in."""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeFigures:
    """One run of a report: the figures a comparison puts side by side."""

    mode: str
    ok: bool  # the run measured batches and ended as asked
    batches: int
    throughput: float | None  # samples/s
    spread: float | None  # relative noise of the throughput
    data_wait: float | None  # share of the step, 0..1
    step_ms: float | None  # median
    cpu_percent: float | None  # the main process and its workers, % of one core
    rss_bytes: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """What a report measured, as a comparison needs it."""

    source: str  # where it came from: a path, or "this run"
    schema: str
    command: str
    script: str
    script_args: tuple[str, ...]
    bottleneck: str
    label: str
    confidence: float | None
    ceiling: float | None
    modes: tuple[ModeFigures, ...]

    def mode(self, name: str) -> ModeFigures | None:
        return next((m for m in self.modes if m.mode == name), None)


class Direction(enum.Enum):
    HIGHER = "higher is better"
    LOWER = "lower is better"


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One figure of one mode, before and after."""

    figure: str  # "throughput", "data wait", "step time", "CPU", "memory"
    before: float | None
    after: float | None
    change: float | None  # relative (after / before - 1), or in points for the data wait
    noise: float | None  # what the runs' steadiness allows, same unit; None: not measured
    direction: Direction

    @property
    def beyond_noise(self) -> bool | None:
        """The change is larger than the noise (None: no change, or no noise, to judge by)."""
        if self.change is None or self.noise is None:
            return None
        return abs(self.change) > self.noise

    @property
    def worse(self) -> float | None:
        """How much worse the after is, in the change's unit (negative: better)."""
        if self.change is None:
            return None
        return -self.change if self.direction is Direction.HIGHER else self.change


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeChange:
    mode: str
    before: ModeFigures | None
    after: ModeFigures | None
    changes: tuple[Change, ...]  # empty unless the mode ran, and measured, in both

    def figure(self, name: str) -> Change | None:
        return next((c for c in self.changes if c.figure == name), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    before: Figures
    after: Figures
    modes: tuple[ModeChange, ...]  # the before's modes in order, then the after's new ones

    @property
    def same_script(self) -> bool:
        return self.before.script == self.after.script
