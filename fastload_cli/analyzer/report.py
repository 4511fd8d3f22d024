"""The report, assembled in one place: what a command measured, analysed, as one ``Report``."""

from __future__ import annotations

from typing import Protocol

import fastload_cli
from fastload_cli.analyzer import analyze, search, split, trials
from fastload_cli.analyzer.reading import read_ceiling
from fastload_cli.analyzer.window import primary_loader_id, steady_steps
from fastload_cli.config import RunConfig
from fastload_cli.records import Breakdown, Command, Environment, FixSpec, Mode, Report, RunResult, RunSummary, Timeline


class Measured(Protocol):
    """What a command's runs measured (the session's ``Outcome``)."""

    @property
    def runs(self) -> tuple[RunResult, ...]: ...
    @property
    def summaries(self) -> tuple[RunSummary, ...]: ...
    @property
    def interrupted(self) -> bool: ...
    @property
    def breakdown(self) -> Breakdown | None: ...
    @property
    def limits(self) -> search.Limits | None: ...
    @property
    def fixes(self) -> tuple[FixSpec, ...]: ...
    @property
    def unverified(self) -> tuple[str, ...]: ...
    @property
    def split_run(self) -> RunResult | None: ...


def build_report(command: Command, base: RunConfig, measured: Measured, environment: Environment) -> Report:
    """Analyse what was measured and assemble the report every output format renders."""
    analysis = analyze(measured.runs, measured.limits, measured.breakdown, summaries=measured.summaries)
    no_aug = next((r for r in measured.runs if r.spec.mode is Mode.NO_AUG), None)
    facts = analysis.facts
    return Report(
        command=command,
        script=base.script_arg0,
        script_args=base.script_args,
        fastload_version=fastload_cli.__version__,
        environment=environment,
        runs=analysis.summaries,
        verdict=analysis.verdict,
        recommendations=trials.not_verified(analysis.recommendations, measured.unverified, facts.loader),
        substitutions=no_aug.substitutions if no_aug is not None else (),
        interrupted=measured.interrupted,
        reading=read_ceiling(analysis.facts, analysis.verdict) if command is Command.SYNTHETIC_COMPARE else None,
        sweep=analysis.facts.sweep,
        breakdown=measured.breakdown,
        batch=analysis.facts.batch,
        profile=next((r.profile for r in measured.runs if r.spec.mode is Mode.REAL and r.profile), None),
        timelines=tuple(timeline(run) for run in measured.runs),
        fixes=trials.results(measured.fixes, measured.runs, measured.summaries) if measured.fixes else (),
        pathologies=analysis.pathologies,
        split=split.interleaved_split(measured.split_run, facts.synthetic)
        or split.input_split(facts.real, facts.cached, facts.no_aug, facts.cached_no_aug, facts.synthetic),
    )


def timeline(run: RunResult) -> Timeline:
    """One run over time, as the child and the samplers recorded it."""
    measured = {id(step.batch) for step in steady_steps(run)}
    return Timeline(
        mode=run.label,
        variant=run.spec.variant,
        started_ns=run.started_ns,
        ended_ns=run.ended_ns,
        warmup_batches=run.warmup_batches,
        loader_id=primary_loader_id(run),
        iterators=run.iterators,
        batches=run.batches,
        measured=tuple(i for i, batch in enumerate(run.batches) if id(batch) in measured),
        host_samples=run.host_samples,
        gpu_samples=run.gpu_samples,
    )
