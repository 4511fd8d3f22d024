"""A command's runs: which modes to run, in what order, and the report they add up to.

``run_modes`` runs ``real`` first; if it measured nothing the script cannot be diagnosed and a
``FastloadError`` says why. The other modes follow; ``no-aug`` only when there is augmentation to
remove. Ctrl-C ends the sequence: the runs so far are returned, the interrupted one included.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import fastload_cli
from fastload_cli.analyzer import (
    Analysis,
    analyze,
    current_workers,
    disturbed,
    sweep,
    sweep_limits_for,
    sweep_points,
)
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.failures import hint_for
from fastload_cli.analyzer.metrics import describe_error, primary_loader, summarize
from fastload_cli.analyzer.verdict import read_ceiling
from fastload_cli.config import DEFAULT_BREAKDOWN_ITEMS, DEFAULT_SWEEP_BATCHES, RunConfig
from fastload_cli.errors import FastloadError, NoLoaderObservedError, ScriptFailedError
from fastload_cli.records import (
    Bottleneck,
    Breakdown,
    Environment,
    GpuDevice,
    Mode,
    ModeSpec,
    Report,
    RunResult,
    RunStatus,
    StopReason,
)
from fastload_cli.runner.launch import Observer, run_mode
from fastload_cli.samplers.gpu import Nvml
from fastload_cli.samplers.host import available_memory

ObserverFactory = Callable[[ModeSpec], Observer]
NoteSink = Callable[[ModeSpec | None, str], None]  # a note on a mode's run, or on the command
NO_LOADER_HINT = (
    "fastload measures torch.utils.data.DataLoader; custom iterables, NVIDIA DALI pipelines and "
    "data already on the device are not seen"
)


@dataclass(frozen=True, slots=True)
class Outcome:
    runs: tuple[RunResult, ...]
    interrupted: bool
    breakdown: Breakdown | None = None  # the breakdown run's measurement, when one ran


@dataclass(frozen=True, slots=True)
class Runner:
    """Runs one mode at a time, with what every command's runs share."""

    base: RunConfig
    nvml: Nvml | str | None
    observe: ObserverFactory
    on_note: NoteSink = lambda spec, message: None

    def measure(self, config: RunConfig, *, first: bool = False) -> RunResult:
        """One run; measured again when other processes skewed it. ``first``: the run that must
        measure something, or the script cannot be diagnosed (a FastloadError says why)."""
        spec = config.spec
        if spec.mode is not Mode.REAL:
            config = replace(config, py_spy_s=0.0)  # only the real run is profiled
        run = run_mode(config, self.nvml, self.observe(spec))
        if first:
            check_measurable(run, config.python)
        summary = summarize(run) if run.status is RunStatus.OK else None
        if summary is not None and disturbed(summary):  # other work skewed it: measure again
            load = summary.foreign_cpu_fraction or 0.0
            self.on_note(spec, f"other processes used {100 * load:.0f}% of the CPU during this run; running it again")
            again = run_mode(config, self.nvml, self.observe(spec))
            if again.status is RunStatus.INTERRUPTED or _load_below(again, load):
                run = again
        return run


def run_modes(runner: Runner, modes: Sequence[ModeSpec], done: Sequence[RunResult] = ()) -> Outcome:
    """Run ``modes`` in order after the runs already ``done``; the real one must measure a batch."""
    runs: list[RunResult] = list(done)
    try:
        for spec in modes:
            skip = _why_skip(spec, runs, runner.base)
            if skip is not None:
                runner.on_note(spec, f"skipped: {skip}")
                continue
            run = runner.measure(runner.base.with_mode(spec), first=spec.mode is Mode.REAL)
            runs.append(run)
            if run.status is RunStatus.INTERRUPTED:
                return Outcome(runs=tuple(runs), interrupted=True)
    except KeyboardInterrupt:  # between two runs: the finished ones are kept
        return Outcome(runs=tuple(runs), interrupted=True)
    return Outcome(runs=tuple(runs), interrupted=False)


# --------------------------------------------------------------------------------------------
# num_workers sweeps
# --------------------------------------------------------------------------------------------


def sweep_limits(max_workers: int, grid: tuple[int, ...] | None = None) -> sweep.Limits:
    """The sweep's limits on this machine: its free memory now, while no run is going."""
    free = available_memory()
    budget = int(free * th.SWEEP_MEMORY_SHARE) if free is not None else None
    return sweep.Limits(max_workers=max_workers, memory_budget_bytes=budget, grid=grid)


def point_config(base: RunConfig, spec: ModeSpec, prefetch_factor: int | None) -> RunConfig:
    """A sweep point's run: at start-up every worker delivers its first ``prefetch_factor`` batches
    at once, so those are warm-up; and the window holds a few rounds of batches from all workers."""
    workers = spec.workers or 0
    burst = workers * (spec.prefetch_factor or prefetch_factor or th.DEFAULT_PREFETCH_FACTOR)
    return replace(
        base.with_child(mode=spec, warmup=max(base.warmup, burst)),
        max_batches=max(base.max_batches, th.SWEEP_ROUNDS * workers),
    )


def run_sweep(runner: Runner, limits: sweep.Limits, done: Sequence[RunResult] = ()) -> Outcome:
    """Measure num_workers settings as ``sweep.plan`` asks, after the runs already ``done`` (a real
    run among them is the script's own setting)."""
    runs = list(done)
    points = sweep_points(runs)
    try:
        while (step := sweep.plan(points, sweep_limits_for(limits, runs), current_workers(runs))).workers is not None:
            run = _sweep_run(runner, ModeSpec(mode=Mode.WORKERS, workers=step.workers), runs)
            runs.append(run)
            points.append(sweep.point(summarize(run)))
            if run.status is RunStatus.INTERRUPTED:
                return Outcome(runs=tuple(runs), interrupted=True)
    except KeyboardInterrupt:
        return Outcome(runs=tuple(runs), interrupted=True)
    return Outcome(runs=tuple(runs), interrupted=False)


def run_variants(runner: Runner, limits: sweep.Limits, done: Outcome, specs: Sequence[ModeSpec]) -> Outcome:
    """Each of ``specs`` (prefetch_factor / pin_memory overrides) at the setting the sweep chose."""
    runs = list(done.runs)
    result = sweep.conclude(sweep_points(runs), current_workers(runs), sweep_limits_for(limits, runs), None)
    if done.interrupted or result is None or result.recommended_workers is None:
        return done
    best = result.recommended_workers
    if best == 0 and any(spec.prefetch_factor is not None for spec in specs):
        runner.on_note(None, "--prefetch-factor: skipped, the best setting has no workers to prefetch.")
        specs = [spec for spec in specs if spec.prefetch_factor is None]
    try:
        for spec in specs:
            run = _sweep_run(runner, replace(spec, mode=Mode.WORKERS, workers=best), runs)
            runs.append(run)
            if run.status is RunStatus.INTERRUPTED:
                return Outcome(runs=tuple(runs), interrupted=True)
    except KeyboardInterrupt:
        return Outcome(runs=tuple(runs), interrupted=True)
    return Outcome(runs=tuple(runs), interrupted=False)


def _sweep_run(runner: Runner, spec: ModeSpec, runs: Sequence[RunResult]) -> RunResult:
    loader = next((primary_loader(r) for r in runs if r.batches), None)
    config = point_config(runner.base, spec, loader.prefetch_factor if loader is not None else None)
    return runner.measure(config, first=not any(r.batches for r in runs))


# --------------------------------------------------------------------------------------------
# What each command runs
# --------------------------------------------------------------------------------------------


class Plan(Protocol):
    """A command's runs: ``execute`` runs them; ``limits`` are the sweep's, for the analysis."""

    def execute(self, runner: Runner) -> Outcome: ...

    def limits(self) -> sweep.Limits | None: ...


@dataclass
class Diagnose:
    """The modes in order; then, when loading is the limit and the cores are not all busy, a short
    num_workers sweep (``max_workers`` None: never)."""

    modes: Sequence[ModeSpec]
    max_workers: int | None
    breakdown: bool = False  # time each loading step even when the verdict is not cpu
    _limits: sweep.Limits | None = field(default=None, init=False)

    def limits(self) -> sweep.Limits | None:
        if self._limits is None and self.max_workers is not None:
            self._limits = sweep_limits(self.max_workers)
        return self._limits

    def execute(self, runner: Runner) -> Outcome:
        outcome = run_modes(runner, self.modes)
        if outcome.interrupted:
            return outcome
        analysis = analyze(outcome.runs)
        if self.max_workers is not None:
            outcome = self._sweep(runner, outcome, analysis)
        if not outcome.interrupted and (self.breakdown or analysis.verdict.bottleneck is Bottleneck.CPU):
            return run_breakdown(runner, outcome)
        return outcome

    def _sweep(self, runner: Runner, outcome: Outcome, analysis: Analysis) -> Outcome:
        why_not = why_not_sweep(analysis)
        if why_not is not None:
            if why_not != NOT_INPUT_BOUND:
                runner.on_note(None, f"No num_workers sweep: {why_not}.")
            return outcome
        why = (
            "Handing batches over from workers may cost more than building them"
            if analysis.facts.cheap_batches is not None
            else "Loading is the limit and the cores are not all busy"
        )
        runner.on_note(None, f"{why}: measuring num_workers settings.")
        limits = self.limits()
        assert limits is not None
        if analysis.verdict.bottleneck is Bottleneck.IO and analysis.facts.cheap_batches is None:
            # Loading waits on latency: fewer workers only put fewer reads in flight.
            self._limits = limits = replace(limits, min_workers=analysis.facts.num_workers or 0)
        short = replace(
            runner, base=replace(runner.base, max_batches=min(runner.base.max_batches, DEFAULT_SWEEP_BATCHES))
        )
        return run_sweep(short, limits, done=outcome.runs)


def run_breakdown(runner: Runner, done: Outcome) -> Outcome:
    """One more run of the script that times each loading step on a sample of items, in-process,
    at the first DataLoader iteration, and ends there."""
    runner.on_note(None, f"Timing each loading step on {DEFAULT_BREAKDOWN_ITEMS} samples (breakdown).")
    config = replace(
        runner.base.with_child(mode=ModeSpec(mode=Mode.BREAKDOWN), breakdown_items=DEFAULT_BREAKDOWN_ITEMS),
        py_spy_s=0.0,
    )
    try:
        run = run_mode(config, None, Observer())
    except KeyboardInterrupt:
        return replace(done, interrupted=True)
    if run.status is RunStatus.INTERRUPTED:
        return replace(done, interrupted=True)
    found = run.breakdown
    if found is None:
        why = describe_error(run) or "the script did not iterate a DataLoader"
        found = Breakdown(loader_id=None, items=0, threads=1, ms_per_sample=None, steps=(), unavailable=why)
    return replace(done, breakdown=found)


NOT_INPUT_BOUND = "loading is not the limit"


def why_not_sweep(analysis: Analysis) -> str | None:
    """Why measuring num_workers settings would not help, or None when it may."""
    if analysis.verdict.bottleneck not in (Bottleneck.CPU, Bottleneck.IO):
        return NOT_INPUT_BOUND
    facts = analysis.facts
    if facts.restarts_dominate:
        return "the workers' start-up every epoch is the limit, and more workers only start more of them"
    if facts.cheap_batches is not None:
        return None  # fewer workers can help however busy the cores are
    busy = facts.real.system_cpu_busy_fraction if facts.real is not None else None
    if busy is not None and busy >= th.CPU_SATURATED:
        return f"the cores were {100 * busy:.0f}% busy: more workers cannot help"
    return None


@dataclass
class Sweep:
    """``sweep-workers``: the num_workers search (or ``grid``), then prefetch_factor and pin_memory
    variants at the setting it found best."""

    max_workers: int
    grid: tuple[int, ...] | None = None
    prefetch_factors: tuple[int, ...] = ()
    pin_both: bool = False
    _limits: sweep.Limits | None = field(default=None, init=False)

    def limits(self) -> sweep.Limits:
        if self._limits is None:
            self._limits = sweep_limits(self.max_workers, self.grid)
        return self._limits

    def execute(self, runner: Runner) -> Outcome:
        outcome = run_sweep(runner, self.limits())
        variants = self.variants(outcome.runs, runner.on_note)
        return run_variants(runner, self.limits(), outcome, variants) if variants else outcome

    def variants(self, runs: Sequence[RunResult], on_note: NoteSink) -> list[ModeSpec]:
        loader = next((primary_loader(r) for r in runs if r.batches), None)
        if loader is None:
            return []
        found = []
        own_factor = loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR
        found += [ModeSpec(mode=Mode.WORKERS, prefetch_factor=f) for f in self.prefetch_factors if f != own_factor]
        if self.pin_both:
            if any(r.env.cuda_available for r in runs):
                found.append(ModeSpec(mode=Mode.WORKERS, pin_memory=not loader.pin_memory))
            else:
                on_note(
                    None,
                    "--pin-memory both: skipped, CUDA is not available (pinned memory only speeds up copies to a GPU).",
                )
        return found


def _load_below(run: RunResult, load: float) -> bool:
    """The run finished well and other processes took less of the CPU during it than ``load``."""
    found = summarize(run).foreign_cpu_fraction if run.status is RunStatus.OK else None
    return found is not None and found < load


def _why_skip(spec: ModeSpec, done: list[RunResult], base: RunConfig) -> str | None:
    if spec.mode is not Mode.NO_AUG or base.child.drop_transforms:
        return None
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    if real is not None and not any(lo.augmentations for lo in real.loaders):
        return "no random augmentation found in the datasets' transforms"
    return None


def check_measurable(run: RunResult, python: str | None = None) -> None:
    """Raise when the real run measured no batch: there is nothing to diagnose."""
    if run.batches:
        return
    tail = run.output_tail
    if run.error is not None:
        message = f"{run.error.type_name}: {run.error.message}"
        first_line = message.strip().splitlines()[0] if message.strip() else message
        raise ScriptFailedError(
            f"the script failed before its first batch: {first_line}",
            hint_for(message, tail, python) or "it must run under plain `python` first; its output is shown above",
            f"{tail.rstrip()}\n{message}" if message not in tail else tail,
        )
    if run.status is RunStatus.TIMEOUT:
        raise FastloadError(
            "no DataLoader batch arrived before the timeout",
            "raise --timeout if the script needs longer to start, or check that it iterates a DataLoader",
        )
    if run.signal_name is not None:
        raise ScriptFailedError(
            f"the script was killed by {run.signal_name} before its first batch",
            hint_for("", tail) or "SIGKILL usually means the machine ran out of memory",
            tail,
        )
    if run.stop_reason is StopReason.SCRIPT_ENDED and run.exit_code not in (0, None):
        raise ScriptFailedError(
            f"the script exited with status {run.exit_code} before its first batch", hint_for("", tail), tail
        )
    if run.loaders:
        raise NoLoaderObservedError("the script created a DataLoader but never took a batch from it", NO_LOADER_HINT)
    raise NoLoaderObservedError("the script ended without iterating a torch DataLoader", NO_LOADER_HINT)


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


def environment(runs: Sequence[RunResult], nvml: Nvml | str | None) -> Environment:
    env = next((r.env for r in runs if r.env.torch is not None), None)
    cuda = next((r.env.cuda_available for r in runs if r.env.cuda_available is not None), None)
    gpus: tuple[GpuDevice, ...] = nvml.devices() if isinstance(nvml, Nvml) else ()
    status = "available" if isinstance(nvml, Nvml) else f"unavailable: {nvml or 'not asked'}"
    return Environment(
        python=(env.python if env and env.python else platform.python_version()),
        torch=env.torch if env else None,
        cuda_available=cuda,
        gpus=gpus,
        cpu_count=next((r.cpu_count for r in runs), None),
        nvml=status,
    )


def build_report(command: str, base: RunConfig, outcome: Outcome, analysis: Analysis, env: Environment) -> Report:
    no_aug = next((r for r in outcome.runs if r.spec.mode is Mode.NO_AUG), None)
    return Report(
        command=command,
        script=base.script_arg0,
        script_args=base.script_args,
        fastload_version=fastload_cli.__version__,
        environment=env,
        runs=analysis.summaries,
        verdict=analysis.verdict,
        recommendations=analysis.recommendations,
        substitutions=no_aug.substitutions if no_aug is not None else (),
        interrupted=outcome.interrupted,
        reading=read_ceiling(analysis.facts, analysis.verdict) if command == "synthetic-compare" else None,
        sweep=analysis.facts.sweep,
        breakdown=outcome.breakdown,
        batch=analysis.facts.batch,
        profile=next((r.profile for r in outcome.runs if r.spec.mode is Mode.REAL and r.profile), None),
    )
