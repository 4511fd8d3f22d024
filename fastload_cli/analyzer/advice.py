"""What every recommendation rule shares: the evidence it cites and the bounds on its gain."""

from __future__ import annotations

from fastload_cli.analyzer.facts import Facts
from fastload_cli.records import Bottleneck, FindingKind, Verdict

# The findings that say what the loading processes did.
LOADER_ACTIVITY = (
    FindingKind.LOADERS_BUSY,
    FindingKind.LOADERS_IDLE,
    FindingKind.LOADERS_MIXED,
    FindingKind.LOADERS_COMPETE,
    FindingKind.HANDOFF,
    FindingKind.KERNEL_READS,
)


def cited(v: Verdict, *kinds: FindingKind) -> tuple[str, ...]:
    """The verdict's evidence a recommendation rests on: its findings of these kinds."""
    return tuple(finding.sentence for finding in v.of(*kinds))


def bounded(gain: float | None, ceiling: float | None) -> float | None:
    """A gain capped by the ceiling; unknown without one. Not rounded here: reporters round the
    gain and the ceiling alike, so a gain equal to the ceiling is shown equal to it.

    A gain is at least 1.0x unless the ceiling itself is below 1 (the input pipeline cannot help).
    """
    if gain is None or ceiling is None:
        return None
    return min(max(1.0, gain), ceiling)


def input_bound(v: Verdict) -> bool:
    return v.bottleneck in (Bottleneck.CPU, Bottleneck.IO)


def pipeline_bound(f: Facts, v: Verdict) -> bool:
    """Input-bound by building batches in the steady state: not by workers starting again every
    epoch, nor by handing cheap batches over from workers (their own rules speak for those)."""
    return input_bound(v) and not f.restarts_dominate and f.cheap_batches is None


def capped(gain: float | None, ceiling: float | None) -> float | None:
    """A measured gain, capped by the ceiling when one was measured."""
    if gain is None:
        return None
    return gain if ceiling is None else min(gain, ceiling)
