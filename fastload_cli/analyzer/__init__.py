"""From measured runs to a verdict and recommendations: pure functions, no I/O, no clock.

``analyze(runs)`` is the entry point; it never returns None: without enough data the verdict is
``inconclusive`` and the caveats say why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import pathologies, ranks, search, trials
from fastload_cli.analyzer.advice import advise
from fastload_cli.analyzer.caveats import caveats
from fastload_cli.analyzer.facts.gather import gather_facts
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.verdict import Facts, decide
from fastload_cli.records import (
    Breakdown,
    Finding,
    FindingKind,
    Mode,
    Pathology,
    Recommendation,
    RunResult,
    RunStatus,
    RunSummary,
    SweepResult,
    Verdict,
)


@dataclass(frozen=True, slots=True)
class Analysis:
    summaries: tuple[RunSummary, ...]
    verdict: Verdict
    recommendations: tuple[Recommendation, ...]
    facts: Facts
    straggler: ranks.Straggler | None = None  # a data-parallel job's rank that holds it back
    pathologies: tuple[Pathology, ...] = ()  # named failures and slowdowns the real run shows


def analyze(
    runs: Sequence[RunResult],
    limits: search.Limits | None = None,
    breakdown: Breakdown | None = None,
    *,
    summaries: Sequence[RunSummary] | None = None,
) -> Analysis:
    """``limits``: the sweep's limits, when the runs include a num_workers sweep; ``breakdown``:
    the per-step loading times, when they were measured; ``summaries``: the runs' summaries, when
    they were already computed (in the runs' order)."""
    every = tuple(summaries) if summaries is not None else tuple(summarize(run) for run in runs)
    seen, lagging = from_straggler(runs, every)
    if lagging is not None:  # the job's runs are now seen from the straggler
        runs, every = seen, tuple(summarize(run) for run in seen)
    # Runs whose mode applied on some ranks alone answer one question (``ranks.freed``), not the job's.
    one_rank = [(r, s) for r, s in zip(runs, every, strict=True) if r.spec.ranks]
    job_wide = [(r, s) for r, s in zip(runs, every, strict=True) if not r.spec.ranks]
    runs, summaries = [r for r, _ in job_wide], tuple(s for _, s in job_wide)
    facts = replace(gather_facts(runs, summaries, limits or search.Limits()), breakdown=breakdown)
    facts = replace(facts, tried=trials.results((), runs, summaries))
    sweep_caveats = facts.sweep.caveats if facts.sweep is not None else ()
    verdict = decide(facts, (*caveats(runs, summaries), *sweep_caveats))
    if facts.sweep is not None:
        line = sweep_evidence(facts.sweep)
        verdict = replace(verdict, evidence=(*verdict.evidence, line.sentence), findings=(*verdict.findings, line))
    if lagging is not None:
        verdict = ranks.naming(verdict, lagging, ranks.freed(lagging, facts.real, one_rank, facts.noise))
    real = next((r for r in runs if r.spec.mode is Mode.REAL), None)
    found = pathologies.detect(real, facts)
    fixes = pathologies.advice(found, facts, verdict)
    advised: tuple[Recommendation, ...] = tuple(fixes)
    without_gain: tuple[Finding, ...] = ()
    if real is None or real.status is not RunStatus.FAILED:
        # Where the script failed, its rate, which every other recommendation is weighed against,
        # is no rate (a few batches, then the error): a named pathology's fix is the advice, alone.
        advised, without_gain = advise(facts, verdict, fixes)
    verdict = replace(
        verdict,
        evidence=(*verdict.evidence, *(line.sentence for line in without_gain)),
        findings=(*verdict.findings, *without_gain),
    )
    return Analysis(every, verdict, pathologies.priced_all(advised, real, facts), facts, lagging, found)


def from_straggler(
    runs: Sequence[RunResult], summaries: Sequence[RunSummary]
) -> tuple[Sequence[RunResult], ranks.Straggler | None]:
    """The runs, a data-parallel job's seen from its straggler (as the real run names it), and the
    straggler; the runs as they are when there is no job or no rank stands out, or when the job
    failed: its ranks ran a few steps, then waited for the one that raised, which is no straggler.
    ``summaries``: the runs' summaries, in their order."""
    real = ranks.real_job(runs)
    if real is None or real.status is RunStatus.FAILED:
        return runs, None
    own = next(s for r, s in zip(runs, summaries, strict=True) if r is real)
    elsewhere = [
        s.ranks
        for r, s in zip(runs, summaries, strict=True)
        if r is not real and r.ranks and not r.spec.ranks and r.status is not RunStatus.FAILED
    ]
    lagging = ranks.straggler(own.ranks, ranks.synced(real), elsewhere)
    if lagging is None:
        return runs, None
    return [ranks.seen_from(r, lagging.rank) if r.ranks else r for r in runs], lagging


def sweep_evidence(result: SweepResult) -> Finding:
    tried = ", ".join(str(p.workers) for p in result.points if p.variant is None)
    line = f"num_workers sweep ({tried}; noise ±{100 * result.noise:.0f}%): {search.conclusion(result)}"
    return Finding(kind=FindingKind.SWEEP, sentence=line, values={"speedup": result.speedup, "noise": result.noise})
