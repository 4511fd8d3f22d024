"""Data-parallel jobs: each rank's figures, the job's, and the rank that holds the job back.

In a job whose ranks meet at every step (DistributedDataParallel's all-reduce), every rank runs at
the pace of the slowest, so throughput alone cannot name it. What tells the straggler from its
victims is where each rank waits: the rank whose input pipeline is slow waits for its data, while
the others wait inside their step, for it, at the all-reduce. A rank whose step itself is slow
waits for neither: its loop's thread is busy (on a CPU, or runnable) for longer per step than the
others', which spend the difference blocked in the all-reduce (``metrics.step_split``). Ranks
that never form a process group are independent copies, each at its own pace: there the slowest
throughput names the straggler.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from fastload_cli.analyzer import thresholds as th
from fastload_cli.formatting import ms, num, pct
from fastload_cli.records import Finding, FindingKind, Mode, ModeSpec, RunResult, RunStatus, RunSummary, Verdict


@dataclass(frozen=True, slots=True)
class Straggler:
    rank: int
    input_bound: bool  # its own input pipeline (True) or its step (False)
    finding: Finding
    where: str  # how a verdict's headline names it, after the label


if TYPE_CHECKING:
    from fastload_cli.analyzer.window import LoopStep


def job_summary(own: RunSummary, ranks: Sequence[RunSummary]) -> RunSummary:
    """The job's figures: ``own`` (the rank the job is seen from) with throughput summed over the
    ranks, and every rank's figures inside."""
    return replace(
        own,
        throughput_samples_per_s=_sum(r.throughput_samples_per_s for r in ranks),
        training_samples_per_s=_sum(r.training_samples_per_s for r in ranks),
        ranks=tuple(ranks),
    )


@dataclass(frozen=True, slots=True)
class StepSplit:
    busy_ms_p50: float | None = None
    busy_ms_p90: float | None = None
    blocked_fraction: float | None = None


def with_step_split(summary: RunSummary, run: RunResult, steps: Sequence[LoopStep]) -> RunSummary:
    """``summary`` with how the loop's thread spent its steps (``step_split``)."""
    split = step_split(run, steps)
    return replace(
        summary,
        step_busy_ms_p50=split.busy_ms_p50,
        step_busy_ms_p90=split.busy_ms_p90,
        step_blocked_fraction=split.blocked_fraction,
    )


def step_split(run: RunResult, steps: Sequence[LoopStep]) -> StepSplit:
    """How the loop's thread spent its steps outside the data wait: busy (on a CPU or runnable,
    median and 90th percentile per step) and blocked (its share of those steps). On the CPU
    backend what blocks the loop's thread inside a step is waiting in the collectives for the
    other ranks. Where the script drives a CUDA device the thread also blocks on (or spins in)
    the device's work, so nothing is said there."""
    timed = [s for s in steps if s.batch.step_cpu_ns is not None]
    if not timed or len(timed) < len(steps) / 2 or run.env.cuda_in_use:
        return StepSplit()
    outside = [max(s.step_ns - s.tail_ns - s.wait_ns, 0) for s in timed]
    on_cpu = [(s.batch.step_cpu_ns or 0) + (s.batch.step_runq_ns or 0) for s in timed]
    busy = [min(c, o) for c, o in zip(on_cpu, outside, strict=True)]
    total = sum(outside)
    busy_ms = [b / 1e6 for b in busy]
    return StepSplit(
        busy_ms_p50=statistics.median(busy_ms),
        busy_ms_p90=statistics.quantiles(busy_ms, n=10, method="inclusive")[-1] if len(busy_ms) > 1 else busy_ms[0],
        blocked_fraction=(total - sum(busy)) / total if total > 0 else None,
    )


def _sum(values: Iterable[float | None]) -> float | None:
    found = list(values)
    return None if not found or any(v is None for v in found) else sum(v for v in found if v is not None)


def synced(run: RunResult) -> bool:
    """The ranks formed a process group: they meet at every step's collectives."""
    return any(r.env.process_group for r in run.ranks)


def straggler(
    ranks: Sequence[RunSummary], grouped: bool, elsewhere: Sequence[Sequence[RunSummary]] = ()
) -> Straggler | None:
    """The rank that holds a job back, beyond noise, and why; None for one process or a balanced job.
    ``grouped``: the ranks formed a process group. ``elsewhere``: the ranks of the job's other runs
    whose mode applied to every rank. A rank's step is the same in every mode, so a rank named for
    its step must stand out so in each of those that split the ranks' steps: in one run alone, other
    work on the machine that came and went can make any rank's step the slowest."""
    measured = [s for s in ranks if s.rank is not None and s.batches]
    if len(measured) < 2:
        return None
    if not grouped:
        return _slowest(measured)
    found = _waits_longest(measured)
    if found is not None:
        return found
    found = _busiest_step(measured)
    split = [run for run in elsewhere if _steps_split(run)]
    if found is None or any(_named(_busiest_step(list(run))) != found.rank for run in split):
        return None
    return _held(found, len(split)) if split else found


def _steps_split(ranks: Sequence[RunSummary]) -> bool:
    return sum(s.step_busy_ms_p50 is not None and s.step_busy_ms_p90 is not None for s in ranks) >= 2


def _named(found: Straggler | None) -> int | None:
    return found.rank if found is not None else None


def _held(found: Straggler, others: int) -> Straggler:
    """``found`` with the runs it held in said: the real run and ``others`` more."""
    runs = "the other run" if others == 1 else f"each of the {others} other runs"
    line = f"{found.finding.sentence} It stands out so in {runs} that split the ranks' steps too."
    values = {**found.finding.values, "runs": others + 1}
    return replace(found, finding=replace(found.finding, sentence=line, values=values))


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
    finding = Finding(kind=FindingKind.STRAGGLER, sentence=line, values=values)
    return Straggler(worst, True, finding, f"on rank {worst}")


def _busiest_step(ranks: list[RunSummary]) -> Straggler | None:
    """The rank whose step keeps its loop busy longest, beyond the others' spread: they finish
    first and wait for it in the all-reduce."""
    busy = {s.rank: s for s in ranks if s.step_busy_ms_p50 is not None and s.step_busy_ms_p90 is not None}
    if len(busy) < 2:
        return None
    worst = max(busy, key=lambda r: busy[r].step_busy_ms_p50 or 0.0)
    others = [s for r, s in busy.items() if r != worst]
    top = busy[worst].step_busy_ms_p50 or 0.0
    middle = statistics.median(s.step_busy_ms_p50 or 0.0 for s in others)
    if middle <= 0 or top < th.STRAGGLER_STEP_RATIO * middle or top <= max(s.step_busy_ms_p90 or 0.0 for s in others):
        return None
    assert worst is not None
    ratio = top / middle
    whom = f"rank {others[0].rank}'s" if len(others) == 1 else "the other ranks' (median)"
    blocked = statistics.median(s.step_blocked_fraction or 0.0 for s in others)
    line = (
        f"Rank {worst}'s step takes {ratio:.1f}x {whom}: its loop is busy {ms(top)} a step against "
        f"{ms(middle)}, and the others wait for it in the all-reduce, blocked {pct(blocked)} of their step "
        "outside the data wait. Its input pipeline is not the cause: its step is (slower hardware, a "
        "larger share of the work, or other work on its device)."
    )
    values: dict[str, float | int | None] = {
        "rank": worst,
        "rank_step_busy_ms": top,
        "others_step_busy_ms": middle,
        "ratio": ratio,
        "others_blocked": blocked,
        "rank_step_ms": busy[worst].step_ms_p50,
    }
    finding = Finding(kind=FindingKind.STRAGGLER, sentence=line, values=values)
    short = f"rank {others[0].rank}'s" if len(others) == 1 else "the others'"
    return Straggler(worst, False, finding, f"· rank {worst}'s step takes {ratio:.1f}x {short}")


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
    finding = Finding(kind=FindingKind.STRAGGLER, sentence=line, values=values)
    return Straggler(worst, input_bound, finding, f"(rank {worst} is the slowest)")


def seen_from(run: RunResult, rank: int) -> RunResult:
    """The job's run seen from ``rank`` (its events and its roles), with the job's outcome."""
    own = next((r for r in run.ranks if r.rank == rank), None)
    if own is None or run.rank == rank:
        return run
    return replace(own, status=run.status, stop_reason=run.stop_reason, error=run.error or own.error, ranks=run.ranks)


def real_job(runs: Sequence[RunResult]) -> RunResult | None:
    return next((r for r in runs if r.spec.mode is Mode.REAL and r.ranks), None)


def counterfactual(lagging: Straggler) -> ModeSpec | None:
    """The run that measures what freeing the straggler's input pipeline gives the job: synthetic
    inputs on its rank alone, the others real. None where its step, not its input, is the cause:
    fastload cannot make one rank's step faster from outside."""
    return ModeSpec(mode=Mode.SYNTHETIC, ranks=(lagging.rank,)) if lagging.input_bound else None


def freed(
    lagging: Straggler, real: RunSummary | None, one_rank: Sequence[tuple[RunResult, RunSummary]], noise: float
) -> Finding | None:
    """What the job gained in the run with the straggler's input pipeline free (``counterfactual``),
    against the real run, or None where that run was not made or measured nothing."""
    run = next((s for r, s in one_rank if r.spec == counterfactual(lagging) and r.status is RunStatus.OK), None)
    base = real.throughput_samples_per_s if real is not None else None
    if run is None or not base or not run.throughput_samples_per_s:
        return None
    gain = run.throughput_samples_per_s / base
    beyond = gain > 1 + noise
    line = (
        f"With rank {lagging.rank}'s input pipeline free (synthetic inputs on rank {lagging.rank} alone, "
        f"the other ranks real), the job ran {gain:.2f}x as fast ({num(base)} -> "
        f"{num(run.throughput_samples_per_s)} samples/s, noise ±{100 * noise:.0f}%): "
        + (
            f"that is what making rank {lagging.rank}'s loading keep up with the others' gives the job."
            if beyond
            else "freeing it alone gives the job nothing measurable."
        )
    )
    values: dict[str, float | int | None] = {
        "rank": lagging.rank,
        "job_gain": gain,
        "noise": noise,
        "throughput": run.throughput_samples_per_s,
    }
    return Finding(kind=FindingKind.STRAGGLER_FREED, sentence=line, values=values)


def naming(verdict: Verdict, lagging: Straggler, gain: Finding | None = None) -> Verdict:
    """The verdict with the straggler named: in the headline, and first in the evidence with what
    freeing it gave the job, when that was measured."""
    found = (lagging.finding, *((gain,) if gain is not None else ()))
    return replace(
        verdict,
        label=f"{verdict.label} {lagging.where}",
        slowest_rank=lagging.rank,
        rank_named=lagging.where,
        evidence=(*(f.sentence for f in found), *verdict.evidence),
        findings=(*found, *verdict.findings),
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
