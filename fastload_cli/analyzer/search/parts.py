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

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search.points import per_setting, throughput, usable
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
    below the fastest setting measured after it, and not ahead of it beyond their own run's noise.
    The first epoch only slows a setting: one that read faster there than every setting after it
    would read faster still after it, and a second run of it would not make theirs less noisy.
    Each is measured once more, after it."""
    top = max((throughput(p) for p in usable(points) if p.after_first_epoch), default=0.0)
    inside = per_setting(p for p in points if not p.after_first_epoch)  # several runs of one as one
    found = {p.workers: p for p in usable(inside) if p.variant is None}
    return [
        w
        for w in inside_first_epoch(points)
        if throughput(found[w]) * th.FIRST_EPOCH_MARGIN >= top
        and throughput(found[w]) <= top * (1 + noise.floored(found[w].spread or 0.0))
    ]


def apart(measured: dict[int, SweepPoint]) -> tuple[str, ...]:
    """Settings measured only inside the script's first epoch beside others measured after it:
    far below them (``FIRST_EPOCH_MARGIN``), or their second run failed or was interrupted."""
    inside = ", ".join(f"workers={w}" for w in inside_first_epoch(list(measured.values())))
    return (f"{inside}: {INSIDE_FIRST_EPOCH}",) if inside else ()
