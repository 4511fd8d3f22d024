"""Pathologies: the input-pipeline failures and slowdowns users report most, each found in what the
real run measured and said with the number it rests on.

``detect(run, facts)`` is the entry point: every detector is a function ``(RunResult, Facts) ->
Pathology | None`` over the real run (its batches, its processes' samples, the limits the child
read), listed in ``DETECTORS``; a correctness finding (duplicated samples) comes first. ``advice``
turns those with a fix fastload can apply into recommendations, which diagnose verifies by a run
with the fix applied. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from fastload_cli.analyzer.advice.shared import bounded
from fastload_cli.analyzer.facts import Facts
from fastload_cli.analyzer.facts.gather import of_run
from fastload_cli.analyzer.pathologies.delivery import duplicate_samples, idle_workers, slow_samples
from fastload_cli.analyzer.pathologies.memory import priced, shared_memory, worker_bytes
from fastload_cli.analyzer.pathologies.processes import descriptors, memory_growth, oversubscription
from fastload_cli.records import Pathology, PathologyKind, Recommendation, RunResult, Verdict

__all__ = ["DETECTORS", "advice", "detect", "explaining", "priced_all"]

Detector = Callable[[RunResult, Facts], "Pathology | None"]
DETECTORS: tuple[Detector, ...] = (
    duplicate_samples,
    idle_workers,
    slow_samples,
    oversubscription,
    memory_growth,
    shared_memory,
    descriptors,
)


# A pathology that explains what another's detector read: the other is not raised beside it. Workers
# whose thread pools fight over the cores stall the loop now and then for seconds, whichever worker
# the fight slowed, while the others' batches are ready: what slow samples look like. Its fix comes
# first; a run after it shows whether slow samples remain.
SHADOWS = {PathologyKind.THREAD_OVERSUBSCRIPTION: PathologyKind.SLOW_SAMPLES}


# What the run with a pathology's fix applied measured, after its advice; its recommendation
# says it as the runs that verify advice do (``advice.promises.verified``), and leaves this out.
MEASURED = "\nMeasured with --fix "


def detect(run: RunResult | None, f: Facts) -> tuple[Pathology, ...]:
    """Every pathology the real run shows, correctness first, each with what its fix measured
    where a run with it applied ran (``Facts.tried``); none another explains (``SHADOWS``)."""
    if run is None:
        return ()
    found = [p for detector in DETECTORS if (p := detector(run, f)) is not None]
    shadowed = {SHADOWS.get(p.kind) for p in found}
    found = [_measured(p, f) for p in found if p.kind not in shadowed]
    return tuple(sorted(found, key=lambda p: not p.kind.correctness))


def explaining(run: RunResult) -> str | None:
    """Where a run ended before its first batch because a pathology stopped it (a worker out of
    /dev/shm, open descriptors run out), the hint that says so: its title and kind, the numbers
    and what to change."""
    f = of_run(run)
    found = next((p for d in (shared_memory, descriptors) if (p := d(run, f)) is not None), None)
    return f"{found.title} [{found.kind.value}]: {found.finding} {found.advice}" if found is not None else None


def _measured(p: Pathology, f: Facts) -> Pathology:
    tried = next((t for t in f.tried if p.fix is not None and t.name == p.fix), None)
    if tried is None or not tried.measured:
        return p
    return replace(p, advice=f"{p.advice}{MEASURED}{p.fix}: {tried.reason}.")


def advice(found: Sequence[Pathology], f: Facts, v: Verdict) -> tuple[Recommendation, ...]:
    """The recommendations of the pathologies fastload can fix from outside the script."""
    recs = []
    for p in found:
        if p.recommendation is None:
            continue
        recs.append(
            Recommendation(
                id=p.recommendation,
                title=_TITLES.get(p.kind, p.title),
                detail=p.advice.split(MEASURED)[0],  # the finding is its evidence; the verifying run says the rest
                expected_speedup=_estimate(p, v),
                measured=False,
                evidence=(p.finding,),
            )
        )
    return tuple(recs)


_TITLES = {
    PathologyKind.SLOW_SAMPLES: "Let ready batches overtake slow ones: DataLoader(in_order=False)",
    PathologyKind.THREAD_OVERSUBSCRIPTION: "One thread per worker: limit the thread pools in worker_init_fn",
}


def _estimate(p: Pathology, v: Verdict) -> float | None:
    """Slow samples: the stalls' excess over the median wait, gone (bounded by the ceiling). The
    other pathologies' gains are not estimated: the run with the fix applied measures them."""
    if p.kind is not PathologyKind.SLOW_SAMPLES:
        return None
    wall, excess = p.values.get("wall_s"), p.values.get("stall_excess_s")
    if not wall or excess is None or excess >= wall:
        return None
    return bounded(wall / (wall - excess), v.speedup_ceiling)


def priced_all(recs: Sequence[Recommendation], run: RunResult | None, f: Facts) -> tuple[Recommendation, ...]:
    """Every recommendation with the memory it costs, checked against the memory available."""
    per_worker = worker_bytes(run) if run is not None else None
    return tuple(priced(rec, f, per_worker) for rec in recs)
