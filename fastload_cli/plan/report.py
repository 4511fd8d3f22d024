"""The report, assembled in one place: what a command's steps measured, analysed, as one ``Report``."""

from __future__ import annotations

import fastload_cli
from fastload_cli.analyzer import analyze, split, time_spent, trials
from fastload_cli.analyzer.reading import read_ceiling
from fastload_cli.analyzer.timelines import timeline
from fastload_cli.config import RunConfig
from fastload_cli.plan.outcome import Outcome
from fastload_cli.records import Command, Environment, Mode, Report


def build_report(
    command: Command, base: RunConfig, outcome: Outcome, environment: Environment, total_s: float | None = None
) -> Report:
    """Analyse what was measured and assemble the report every output format renders; ``total_s``:
    the command's time so far, which the report accounts for (``time_spent``)."""
    analysis = analyze(outcome.runs, outcome.limits, outcome.breakdown, summaries=outcome.summaries)
    no_aug = next((r for r in outcome.runs if r.spec.mode is Mode.NO_AUG), None)
    facts = analysis.facts
    return Report(
        command=command,
        script=base.script_arg0,
        script_args=base.script_args,
        fastload_version=fastload_cli.__version__,
        environment=environment,
        runs=analysis.summaries,
        verdict=analysis.verdict,
        recommendations=trials.not_verified(analysis.recommendations, outcome.unverified, facts.loader),
        substitutions=no_aug.substitutions if no_aug is not None else (),
        interrupted=outcome.interrupted,
        reading=read_ceiling(analysis.facts, analysis.verdict) if command is Command.SYNTHETIC_COMPARE else None,
        sweep=analysis.facts.sweep,
        breakdown=outcome.breakdown,
        batch=analysis.facts.batch,
        profile=next((r.profile for r in outcome.runs if r.spec.mode is Mode.REAL and r.profile), None),
        timelines=tuple(timeline(run) for run in outcome.runs),
        fixes=trials.results(outcome.fixes, outcome.runs, outcome.summaries) if outcome.fixes else (),
        pathologies=analysis.pathologies,
        time_spent=time_spent.account(outcome.timed, outcome.summaries, total_s),
        split=split.interleaved_split(outcome.split_run, facts.synthetic)
        or split.input_split(facts.real, facts.cached, facts.no_aug, facts.cached_no_aug, facts.synthetic),
    )
