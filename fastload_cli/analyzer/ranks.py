"""Data-parallel jobs: each rank's figures, the job's, and the rank that holds the job back.

In a job whose ranks meet at every step (DistributedDataParallel's all-reduce), every rank runs at
the pace of the slowest, so throughput alone cannot name it. What tells the straggler from its
victims is where each rank waits: the rank whose input pipeline is slow waits for its data, while
the others wait inside their step, for it, at the all-reduce. Ranks that never form a process group
are independent copies, each at its own pace: there the slowest throughput names the straggler.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.formatting import num, pct
from fastload_cli.records import Finding, FindingKind, Mode, RunResult, RunSummary, Verdict


@dataclass(frozen=True, slots=True)
class Straggler:
    rank: int
    input_bound: bool  # its own input pipeline (True) or its step (False)
    finding: Finding

    @property
    def where(self) -> str:
        """How a verdict's headline names it."""
        return f"on rank {self.rank}" if self.input_bound else f"(rank {self.rank} is the slowest)"


def job_summary(own: RunSummary, ranks: Sequence[RunSummary]) -> RunSummary:
    """The job's figures: ``own`` (the rank the job is seen from) with throughput summed over the
    ranks, and every rank's figures inside."""
    return replace(
        own,
        throughput_samples_per_s=_sum(r.throughput_samples_per_s for r in ranks),
        training_samples_per_s=_sum(r.training_samples_per_s for r in ranks),
        ranks=tuple(ranks),
    )


def _sum(values: Iterable[float | None]) -> float | None:
    found = list(values)
    return None if not found or any(v is None for v in found) else sum(v for v in found if v is not None)


def synced(run: RunResult) -> bool:
    """The ranks formed a process group: they meet at every step's collectives."""
    return any(r.env.process_group for r in run.ranks)


def straggler(ranks: Sequence[RunSummary], grouped: bool) -> Straggler | None:
    """The rank that holds a job back, beyond noise, and why; None for one process or a balanced job.
    ``grouped``: the ranks formed a process group."""
    measured = [s for s in ranks if s.rank is not None and s.batches]
    if len(measured) < 2:
        return None
    return _waits_longest(measured) if grouped else _slowest(measured)


def _waits_longest(ranks: list[RunSummary]) -> Straggler | None:
    waits = {s.rank: s.data_wait_fraction for s in ranks if s.data_wait_fraction is not None}
    if len(waits) < 2:
        return None
    worst = max(waits, key=lambda r: waits[r])
    others = statistics.median(w for r, w in waits.items() if r != worst)
    top = waits[worst]
    if top - others < th.STRAGGLER_WAIT_GAP or top < th.STRAGGLER_WAIT_RATIO * others:
        return None
    line = (
        f"Rank {worst} waited for its data {pct(top)} of the time, the other ranks {pct(others)} (median): "
        f"they wait for rank {worst} inside their step, at the all-reduce, so rank {worst}'s input pipeline "
        "sets the job's pace."
    )
    values: dict[str, float | int | None] = {"rank": worst, "rank_wait": top, "others_wait": others}
    assert worst is not None
    return Straggler(worst, True, Finding(kind=FindingKind.STRAGGLER, sentence=line, values=values))


def _slowest(ranks: list[RunSummary]) -> Straggler | None:
    rates = {s.rank: s.throughput_samples_per_s for s in ranks if s.throughput_samples_per_s}
    if len(rates) < 2:
        return None
    worst = min(rates, key=lambda r: rates[r] or 0.0)
    others = statistics.median(v for r, v in rates.items() if r != worst and v is not None)
    rate = rates[worst] or 0.0
    spread = max((s.throughput_spread or 0.0 for s in ranks), default=0.0)
    if others < rate * (1 + max(th.STRAGGLER_THROUGHPUT_GAP, 2 * spread)):
        return None
    summary = next(s for s in ranks if s.rank == worst)
    wait = summary.data_wait_fraction or 0.0
    input_bound = wait >= th.STRAGGLER_WAIT_GAP
    why = f"waiting for its data {pct(wait)} of the time" if input_bound else f"in its step {pct(1 - wait)} of the time"
    line = (
        f"The ranks formed no process group, so each ran at its own pace: rank {worst} was the slowest, "
        f"{num(rate)} samples/s against {num(others)} for the others (median), {why}."
    )
    assert worst is not None
    values: dict[str, float | int | None] = {"rank": worst, "throughput": rate, "others_throughput": others}
    return Straggler(worst, input_bound, Finding(kind=FindingKind.STRAGGLER, sentence=line, values=values))


def seen_from(run: RunResult, rank: int) -> RunResult:
    """The job's run seen from ``rank`` (its events and its roles), with the job's outcome."""
    own = next((r for r in run.ranks if r.rank == rank), None)
    if own is None or run.rank == rank:
        return run
    return replace(own, status=run.status, stop_reason=run.stop_reason, error=run.error or own.error, ranks=run.ranks)


def real_job(runs: Sequence[RunResult]) -> RunResult | None:
    return next((r for r in runs if r.spec.mode is Mode.REAL and r.ranks), None)


def naming(verdict: Verdict, lagging: Straggler) -> Verdict:
    """The verdict with the straggler named: in the headline when its own input pipeline holds the
    job back, and first in the evidence."""
    return replace(
        verdict,
        label=f"{verdict.label} {lagging.where}",
        slowest_rank=lagging.rank,
        evidence=(lagging.finding.sentence, *verdict.evidence),
        findings=(lagging.finding, *verdict.findings),
    )


def caveats(runs: Sequence[RunResult]) -> list[str]:
    """What a reader of a job's figures must know: a node that sees only its own ranks, and ranks
    that never formed a process group."""
    job = real_job(runs)
    if job is None or not any(r.batches for r in job.ranks):
        return []
    if job.world_size is not None and job.world_size > len(job.ranks):
        return [
            f"This node ran {len(job.ranks)} of the job's {job.world_size} ranks: a rank on another node may hold "
            "these back, which this report cannot see. `fastload merge` combines the nodes' reports into the job's."
        ]
    if synced(job):
        return []
    return [
        f"The {len(job.ranks)} ranks formed no process group (torch.distributed.init_process_group was not "
        "called, or not before the first batch): they ran as independent copies of the script, each with its "
        "own data and model. The job's throughput is their sum, and no rank waited for another."
    ]
