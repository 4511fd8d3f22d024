"""Runs of one mode measured more than once, read as one: their windows joined.

A ceiling within its noise of the line between compute-bound and partly input-bound is measured
again (``plan.again.measure_again``); the verdict then reads the real and synthetic runs pooled, so
that neither run's luck decides it alone, and their disagreement counts as noise. The ceiling and
the step's slowdown are read pair by pair instead (``Facts.pairs``): a shared machine's pace drifts
between the pairs, which a ratio of pooled runs would mix in.
"""

from __future__ import annotations

from dataclasses import fields, replace

from fastload_cli.analyzer import noise
from fastload_cli.records import RunSummary

# Figures that add up across runs; throughput is recomputed from them. The rest of the floats are
# weighed by each run's window, the others taken from the first run.
SUMMED = ("batches", "samples", "wall_s")


def pooled(runs: list[RunSummary]) -> RunSummary:
    """``runs`` of one mode as one run over their windows joined: samples and windows summed,
    throughput from them, the other figures weighed by each window, and a spread that is at least
    half the range of the runs' throughputs (relative to the pooled one)."""
    first = runs[0]
    timed = [r for r in runs if r.wall_s and r.throughput_samples_per_s is not None]
    if len(runs) == 1 or len(timed) < 2:
        return first
    wall = sum(r.wall_s or 0.0 for r in timed)
    samples = sum(r.samples for r in timed)
    changes: dict[str, object] = {
        "batches": sum(r.batches for r in timed),
        "samples": samples,
        "wall_s": wall,
        "throughput_samples_per_s": samples / wall,
        "throughput_batches_per_s": sum(r.batches for r in timed) / wall,
    }
    for f in fields(RunSummary):
        if f.name in changes or f.name in SUMMED:
            continue
        values = [(getattr(r, f.name), r.wall_s or 0.0) for r in timed]
        if all(isinstance(v, float) for v, _ in values):
            changes[f.name] = sum(v * w for v, w in values) / wall
    rates = [r.throughput_samples_per_s or 0.0 for r in timed]
    within = max(first.throughput_spread or 0.0, *(r.throughput_spread or 0.0 for r in timed))
    changes["throughput_spread"] = noise.pooled_spread(rates, samples / wall, within)
    return replace(first, **changes)  # type: ignore[arg-type]
