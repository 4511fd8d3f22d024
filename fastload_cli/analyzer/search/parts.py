"""Settings compared in one part of training.

A DataLoader's workers are forked by the process that trains, with its malloc thresholds; the
first epoch's, forked before it has trained, can run up to a fifth slower than later epochs'
(docs/benchmarks.md, "The first epoch runs slower"). A sweep compares settings measured in one
part: once one is measured after the first epoch (over whole epochs, whose warm-up is an epoch),
the others are measured after it too (``step.after_first_epoch``), and these functions say
which measurements count and which settings to measure again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search.points import faster, throughput, usable
from fastload_cli.records import SweepPoint

INSIDE_FIRST_EPOCH = (
    "measured only inside the script's first epoch and the other settings after it; the first epoch's "
    "workers can run slower than later epochs', so the comparison is not like with like: it can only "
    "understate them"
)


def comparable(points: Iterable[SweepPoint]) -> list[SweepPoint]:
    """``points`` less those a setting measured inside the script's first epoch where it was also
    measured after it: an epoch's workers are started by the process that trains, and the first
    epoch's, started before it has trained, can run slower than later epochs' (glibc's malloc
    thresholds, which they inherit, have not risen yet), so settings are compared in one part."""
    found = list(points)
    later = {(p.workers, p.variant) for p in usable(found) if p.after_first_epoch}
    return [p for p in found if p.after_first_epoch or (p.workers, p.variant) not in later]


def inside_first_epoch(points: Sequence[SweepPoint]) -> list[int]:
    """Settings measured only inside the first epoch while another was measured after it (over
    whole epochs, which start after one)."""
    if not any(p.after_first_epoch for p in usable(points)):
        return []
    later = {p.workers for p in points if p.after_first_epoch and p.variant is None}
    return list(dict.fromkeys(p.workers for p in usable(points) if p.variant is None and p.workers not in later))


def again_after_first_epoch(points: Sequence[SweepPoint]) -> list[int]:
    """Of ``inside_first_epoch``, those the comparison could turn on: within ``FIRST_EPOCH_MARGIN``
    below the fastest setting measured after it, and not faster than it beyond the noise (the first
    epoch only slows a setting: one that beat every setting after it there would beat them by more
    after it). Each is measured once more, after it."""
    later = usable(p for p in points if p.after_first_epoch)
    if not later:
        return []
    top = max(later, key=throughput)
    found = {p.workers: p for p in usable(points) if p.variant is None and not p.after_first_epoch}
    return [
        w
        for w in inside_first_epoch(points)
        if throughput(found[w]) * th.FIRST_EPOCH_MARGIN >= throughput(top) and not faster(found[w], top)
    ]


def apart(measured: dict[int, SweepPoint]) -> tuple[str, ...]:
    """Settings measured only inside the script's first epoch beside others measured after it:
    far below them (``FIRST_EPOCH_MARGIN``), or their second run failed or was interrupted."""
    inside = ", ".join(f"workers={w}" for w in inside_first_epoch(list(measured.values())))
    return (f"{inside}: {INSIDE_FIRST_EPOCH}",) if inside else ()
