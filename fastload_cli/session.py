"""A command's runs, executed: which runs follow is decided by ``analyzer.next_runs``, never here.

``run_modes`` runs ``real`` first; if it measured nothing the script cannot be diagnosed and a
``FastloadError`` says why. The other modes follow. Ctrl-C ends the sequence: the runs so far
are kept, the interrupted one included. Every command returns an ``Outcome``: each run with its
summary (computed once, here), the sweep limits in force, and the breakdown when one ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from fastload_cli.analyzer import Analysis, analyze, disturbed, next_runs, pathologies, search, split
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.failures import NO_LOADER_HINT, describe_error, hint_for, killed_hint, timeout_hint
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.search.in_process import runs_of, setting_settled
from fastload_cli.analyzer.settle import epoch_end_near, settled
from fastload_cli.analyzer.trials import cuda_available
from fastload_cli.analyzer.window import first_loader
from fastload_cli.config import (
    DEFAULT_BREAKDOWN_ITEMS,
    DEFAULT_FOLLOW_UP_BUDGET_S,
    DEFAULT_SWEEP_BATCHES,
    Launcher,
    RunConfig,
)
from fastload_cli.errors import FastloadError, NoLoaderObservedError, ScriptFailedError
from fastload_cli.records import (
    Breakdown,
    FixSpec,
    Mode,
    ModeSpec,
    RunResult,
    RunStatus,
    RunSummary,
    StopReason,
)
from fastload_cli.runner.launch import Observer, run_mode
from fastload_cli.samplers.gpu import Nvml
from fastload_cli.samplers.host import available_memory

ObserverFactory = Callable[[ModeSpec], Observer]
NoteSink = Callable[[ModeSpec | None, str], None]  # a note on a mode's run, or on the command
CACHING = (Mode.CACHED, Mode.CACHED_NO_AUG)  # the modes that decode samples into memory first


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command's runs measured: each run with its summary, in the order they ran."""

    runs: tuple[RunResult, ...] = ()
    summaries: tuple[RunSummary, ...] = ()
    interrupted: bool = False
    breakdown: Breakdown | None = None  # the breakdown run's measurement, when one ran
    limits: search.Limits | None = None  # the num_workers sweep's limits, when a sweep ran
    in_process_short: bool = False  # an in-process run gave fewer settings their turn than it asked
    fixes: tuple[FixSpec, ...] = ()  # ``try``: the fixes asked for, refused ones included
    unverified: tuple[str, ...] = ()  # follow-up runs past diagnose's time budget ("cached", fix names)
    split_run: RunResult | None = None  # the split run, when one ran: the pipelines of the split in turns

    def adding(self, run: RunResult, summary: RunSummary) -> Outcome:
        return replace(self, runs=(*self.runs, run), summaries=(*self.summaries, summary))

    def without_last(self) -> Outcome:
        return replace(self, runs=self.runs[:-1], summaries=self.summaries[:-1])


@dataclass(frozen=True, slots=True)
class ModeRunner:
    """Runs one mode at a time, with what every command's runs share."""

    base: RunConfig
    nvml: Nvml | str | None
    observe: ObserverFactory
    on_note: NoteSink = lambda spec, message: None

    def measure(self, config: RunConfig, *, first: bool = False) -> tuple[RunResult, RunSummary]:
        """One run and its summary; measured again when other processes skewed it. ``first``: the
        run that must measure something, or the script cannot be diagnosed (a FastloadError says why)."""
        spec = config.spec
        if not config.fixed_batches:  # a mode ends once its estimate is stable (an in-process run's settings, each)
            settle = setting_settled if spec.mode is Mode.IN_PROCESS else settled
            config = replace(config, settle=settle, reach=epoch_end_near if spec.mode is Mode.REAL else None)
        if spec.mode is not Mode.REAL:
            config = replace(config, py_spy_s=0.0)  # only the real run is profiled
        run = run_mode(config, self.nvml, self.observe(spec))
        if first:
            check_measurable(run, config.python)
        summary = summarize(run)
        if config.launcher is not None and config.launcher.multi_node:
            return run, summary  # every node runs the same modes in turn: none may run one again alone
        if run.status is RunStatus.OK and disturbed(summary):  # other work skewed it: measure again
            load = summary.foreign_cpu_fraction or 0.0
            self.on_note(spec, f"other processes used {100 * load:.0f}% of the CPU during this run; running it again")
            again = run_mode(config, self.nvml, self.observe(spec))
            again_summary = summarize(again)
            if again.status is RunStatus.INTERRUPTED or _quieter(again, again_summary, load):
                return again, again_summary
        return run, summary


def _quieter(run: RunResult, summary: RunSummary, load: float) -> bool:
    """The run finished well and other processes took less of the CPU during it than ``load``."""
    found = summary.foreign_cpu_fraction if run.status is RunStatus.OK else None
    return found is not None and found < load


def run_modes(runner: ModeRunner, modes: Sequence[ModeSpec], done: Outcome | None = None) -> Outcome:
    """Run ``modes`` in order after the runs already ``done``; the real one must measure a batch."""
    outcome = done or Outcome()
    try:
        for spec in modes:
            if not next_runs.applies(spec, outcome.runs):
                continue
            skip = next_runs.why_skip(spec, outcome.runs, runner.base.child.drop_transforms)
            if skip is not None:
                runner.on_note(spec, f"skipped: {skip}")
                continue
            outcome = outcome.adding(*runner.measure(runner.base.with_mode(spec), first=spec.mode is Mode.REAL))
            if outcome.runs[-1].status is RunStatus.INTERRUPTED:
                return replace(outcome, interrupted=True)
    except KeyboardInterrupt:  # between two runs: the finished ones are kept
        return replace(outcome, interrupted=True)
    return outcome


# --------------------------------------------------------------------------------------------
# num_workers sweeps
# --------------------------------------------------------------------------------------------


def sweep_limits(max_workers: int, grid: tuple[int, ...] | None = None) -> search.Limits:
    """The sweep's limits on this machine: its free memory now, while no run is going."""
    free = available_memory()
    budget = int(free * th.SWEEP_MEMORY_SHARE) if free is not None else None
    return search.Limits(max_workers=max_workers, memory_budget_bytes=budget, grid=grid)


def run_sweep(runner: ModeRunner, limits: search.Limits, done: Outcome | None = None) -> Outcome:
    """The num_workers search: measure each step ``search.next_step`` asks for, after the runs
    already ``done`` (a real run among them is the script's own setting), until it asks for none."""
    outcome = replace(done or Outcome(), limits=limits)
    return run_steps(runner, outcome, lambda so_far: search.next_step(search_state(runner, so_far)))


def run_steps(runner: ModeRunner, done: Outcome, next_step: Callable[[Outcome], search.Step | None]) -> Outcome:
    """Each step ``next_step`` gives, until it gives none or a run is interrupted (Ctrl-C keeps the runs so far)."""
    outcome = done
    try:
        while (step := next_step(outcome)) is not None:
            outcome = run_step(runner, step, outcome)
            if outcome.interrupted:
                return outcome
    except KeyboardInterrupt:
        return replace(outcome, interrupted=True)
    return outcome


def search_state(runner: ModeRunner, outcome: Outcome) -> search.State:
    """What the search knows after the runs of ``outcome``."""
    base = runner.base
    sizing = search.Sizing(warmup=base.warmup, max_batches=base.max_batches, job=base.launcher is not None)
    limits = outcome.limits or search.Limits()
    return search.state(outcome.runs, outcome.summaries, limits, sizing, in_process_short=outcome.in_process_short)


def run_step(runner: ModeRunner, step: search.Step, done: Outcome) -> Outcome:
    """One step of the search: its settings in turn in one run of the script, or its one setting in
    a run of its own (in place of the last run where it measures that again; never stopped early where fixed)."""
    if step.fixed:
        runner = replace(runner, base=replace(runner.base, fixed_batches=True))
    if step.in_process:
        return _in_process(runner, step, done)
    spec = step.specs[0]
    if step.note:
        runner.on_note(spec, step.note)
    outcome = done.without_last() if step.again else done
    config = replace(runner.base.with_child(mode=spec, warmup=step.warmup), max_batches=step.max_batches)
    run, summary = runner.measure(config, first=step.first)
    return replace(outcome.adding(run, summary), interrupted=run.status is RunStatus.INTERRUPTED)


def _in_process(runner: ModeRunner, step: search.Step, done: Outcome) -> Outcome:
    """``step``'s settings measured in turn in one run of the script, each kept as its workers=N run."""
    mode = ModeSpec(mode=Mode.IN_PROCESS)
    if step.note:
        runner.on_note(mode, step.note)
    child = runner.base.with_child(mode=mode, warmup=step.warmup, turns=step.turns, turn_at_epochs=step.at_epochs)
    run, _ = runner.measure(replace(child, max_batches=step.max_batches), first=step.first)
    found = runs_of(run, at_epochs=step.at_epochs)
    outcome = replace(done, runs=(*done.runs, *found), summaries=(*done.summaries, *map(summarize, found)))
    short = outcome.in_process_short or len(found) < len(step.turns)
    return replace(outcome, interrupted=run.status is RunStatus.INTERRUPTED, in_process_short=short)


def run_variants(runner: ModeRunner, steps: Sequence[search.Step], done: Outcome) -> Outcome:
    """Each of ``steps`` (prefetch_factor / pin_memory variants of one setting)."""
    pending = iter(steps)
    return run_steps(runner, done, lambda _: next(pending, None))


# --------------------------------------------------------------------------------------------
# What each command runs
# --------------------------------------------------------------------------------------------


class CommandRuns(Protocol):
    """A command's runs: ``execute`` runs them and returns all they measured."""

    def execute(self, runner: ModeRunner) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class DiagnoseRuns:
    """The modes in order; then what ``next_runs.after_modes`` asks for: a short num_workers
    sweep (never when ``max_workers`` is None) and the breakdown."""

    modes: Sequence[ModeSpec]
    max_workers: int | None
    breakdown: bool = False  # time each loading step even when the verdict is not cpu
    follow_ups: bool = False  # the cached run and the runs that verify fixes, when loading is the limit

    def execute(self, runner: ModeRunner) -> Outcome:
        started = time.monotonic()
        modes = self.modes
        if any(spec.mode in CACHING for spec in modes):
            runner = replace(runner, base=with_cache(runner.base))
        outcome = run_modes(runner, modes)
        if wants_split(modes) and not outcome.interrupted:
            outcome = run_split(runner, outcome)
        if outcome.interrupted:
            return outcome
        analysis = analyze(outcome.runs, summaries=outcome.summaries)
        if (again := next_runs.measure_again(analysis, outcome.runs, time.monotonic() - started)) is not None:
            runner.on_note(None, again)
            outcome = run_modes(runner, next_runs.AGAIN, outcome)
            analysis = analyze(outcome.runs, summaries=outcome.summaries)
        if not outcome.interrupted:
            outcome = free_the_straggler(runner, analysis, outcome)
        if outcome.interrupted:
            return outcome
        then = next_runs.after_modes(analysis, may_sweep=self.max_workers is not None, breakdown_asked=self.breakdown)
        if then.why:
            runner.on_note(None, then.why)
        if then.sweep and self.max_workers is not None:
            limits = replace(sweep_limits(self.max_workers), min_workers=then.min_workers, guided=then.guided)
            short = replace(runner.base, max_batches=min(runner.base.max_batches, DEFAULT_SWEEP_BATCHES))
            outcome = run_sweep(replace(runner, base=short), limits, done=outcome)
        if then.breakdown and not outcome.interrupted:
            outcome = run_breakdown(runner, outcome)
        if outcome.interrupted or not self.follow_ups:
            return outcome
        return follow_up(runner, outcome, then.cached, started + DEFAULT_FOLLOW_UP_BUDGET_S)


def free_the_straggler(runner: ModeRunner, analysis: Analysis, done: Outcome) -> Outcome:
    """A data-parallel job held back by one rank's input pipeline: the job measured with that rank's
    inputs free and the others real, where ``next_runs`` asks for it."""
    launcher = runner.base.launcher
    multi_node = launcher is not None and launcher.multi_node
    spec = next_runs.freeing_the_straggler(analysis, done.runs, multi_node=multi_node)
    if spec is None:
        return done
    rank = spec.ranks[0]
    runner.on_note(None, f"Rank {rank} holds the job back: measuring the job with its input pipeline free.")
    return run_modes(runner, (spec,), done)


def follow_up(runner: ModeRunner, done: Outcome, cached: bool, deadline: float) -> Outcome:
    """The runs that measure what the verdict's advice would gain: a run with the fix of each
    pathology found, the cached run (what storage and decoding cost), then a run with each other
    recommendation's fix that fastload can apply (``next_runs.follow_ups``). Each starts only while
    it would end by ``deadline`` and the seconds past it that run is allowed (a run takes about as
    long as the median run so far); those that would not are named, so their recommendations say
    they were not verified."""
    analysis = analyze(done.runs, done.limits, done.breakdown, summaries=done.summaries)
    splitting = cached and analysis.facts.no_aug is not None  # the split run: its turns give every part
    outcome, left = done, []  # left: the runs past the budget
    for spec, extra_s in next_runs.follow_ups(analysis, done.runs, cached=cached):
        if not _fits(outcome, deadline + extra_s):
            left.append(_named(spec))
            continue
        if spec.mode is Mode.CACHED:
            runner.on_note(None, "Loading is the limit: measuring it with every sample decoded into memory (cached).")
        else:
            runner.on_note(None, f"Verifying what fastload can apply itself: {_named(spec)}.")
        chosen = replace(runner, base=with_cache(runner.base)) if spec.mode in CACHING else runner
        outcome = run_modes(chosen, (spec,), outcome)
        if outcome.interrupted:
            return outcome
    if left:
        named = [*left, "split"] if splitting else left
        runner.on_note(None, f"Not measured within diagnose's time budget: {', '.join(named)}.")
        return replace(outcome, unverified=tuple(left))
    if not splitting:  # the split last: a verified fix matters more
        return outcome
    expected = split.split_run_s(first_loader(outcome.runs), outcome.summaries)
    if expected is None or time.monotonic() + expected > deadline:
        runner.on_note(None, "Not measured within diagnose's time budget: split.")
        return outcome
    return run_split(replace(runner, base=with_cache(runner.base)), outcome)


def _named(spec: ModeSpec) -> str:
    """A follow-up run as the notes and ``Outcome.unverified`` name it: its fixes, or its mode."""
    return "+".join(spec.fixes) if spec.mode is Mode.FIX else spec.label


def _fits(outcome: Outcome, deadline: float) -> bool:
    """A run as long as the median one so far would end by ``deadline``."""
    walls = sorted(s.run_wall_s for s in outcome.summaries if s.run_wall_s is not None)
    expected = walls[len(walls) // 2] if walls else 0.0
    return time.monotonic() + expected <= deadline


@dataclass(frozen=True, slots=True)
class SweepRuns:
    """``sweep-workers``: the script's own setting, the num_workers search predicted from it (or
    ``grid``), then prefetch_factor and pin_memory variants at the setting it found best."""

    max_workers: int
    grid: tuple[int, ...] | None = None
    prefetch_factors: tuple[int, ...] = ()
    pin_both: bool = False
    in_process: bool = False  # settings in turn in one run of the script where the loader allows it

    def execute(self, runner: ModeRunner) -> Outcome:
        limits = replace(sweep_limits(self.max_workers, self.grid), in_process=self.in_process)
        # The search predicts from the script's own setting: measured first, as the script is.
        own = run_modes(runner, (ModeSpec(mode=Mode.REAL),)) if self.grid is None else None
        if own is not None and own.interrupted:
            return own
        outcome = run_sweep(runner, limits, done=own)
        if outcome.interrupted:
            return outcome
        cuda = cuda_available(outcome.runs)
        found = search.variants(search_state(runner, outcome), self.prefetch_factors, self.pin_both, cuda)
        for note in found.notes:
            runner.on_note(None, note)
        return run_variants(runner, found.steps, outcome) if found.steps else outcome


@dataclass(frozen=True, slots=True)
class TryRuns:
    """``try``: the real run, then one run per fix that applies to its loader, then every fix
    that applies at once; the analyzer says which apply (``next_runs.fix_runs``)."""

    fixes: tuple[FixSpec, ...]

    def execute(self, runner: ModeRunner) -> Outcome:
        runner = replace(runner, base=with_cache(runner.base))
        outcome = replace(run_modes(runner, (ModeSpec(mode=Mode.REAL),)), fixes=self.fixes)
        if outcome.interrupted:
            return outcome
        planned = next_runs.fix_runs(self.fixes, outcome.runs)
        for note in planned.notes:
            runner.on_note(None, note)
        return run_modes(runner, planned.specs, done=outcome)


def wants_split(modes: Sequence[ModeSpec]) -> bool:
    """Cached and no-aug are among ``modes``: the split of the real pipeline's time is asked for,
    and the split run measures it (``run_split``)."""
    return {Mode.CACHED, Mode.NO_AUG} <= {spec.mode for spec in modes}


def run_split(runner: ModeRunner, done: Outcome) -> Outcome:
    """The split run: the real, no-aug, cached and cached-no-aug pipelines taking turns in one run
    of the script, sized from the training loader the runs so far saw (``split.split_batches``)."""
    runner.on_note(None, "Splitting the real pipeline's time: real, no-aug, cached and cached-no-aug in turns (split).")
    turn, batches = split.split_batches(first_loader(done.runs))
    config = with_cache(replace(runner.base, max_batches=batches, fixed_batches=True))
    config = config.with_child(mode=ModeSpec(mode=Mode.SPLIT), phase_batches=turn)
    try:
        run, _ = runner.measure(config)
    except KeyboardInterrupt:  # between its run and the one measured again: what ran is kept
        return replace(done, interrupted=True)
    return replace(done, split_run=run, interrupted=run.status is RunStatus.INTERRUPTED)


def with_cache(config: RunConfig) -> RunConfig:
    """``config`` with what the cached mode (and the cache-decoded fix) may decode into memory:
    the samples of every batch the run asks for, in at most a share of the memory free now."""
    free = available_memory()
    bound = int(free * th.RAM_CACHE_SHARE) if free is not None else 0
    return config.with_child(cache_batches=config.requested_batches, cache_bytes=bound)


def run_breakdown(runner: ModeRunner, done: Outcome) -> Outcome:
    """One more run of the script that times each loading step on a sample of items, in-process,
    at the first DataLoader iteration, and ends there."""
    runner.on_note(None, f"Timing each loading step on {DEFAULT_BREAKDOWN_ITEMS} samples (breakdown).")
    mode = ModeSpec(mode=Mode.BREAKDOWN)
    config = replace(runner.base.with_child(mode=mode, breakdown_items=DEFAULT_BREAKDOWN_ITEMS), py_spy_s=0.0)
    if config.launcher is not None:  # one rank's pipeline is timed: a one-rank job here, never a rendezvous
        config = replace(config, launcher=Launcher(nproc_per_node=1))
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
            pathologies.explaining(run)
            or hint_for(message, tail, python, run.oom_kills)
            or "its output and traceback are shown above",
            f"{tail.rstrip()}\n{message}" if message not in tail else tail,
        )
    if run.status is RunStatus.TIMEOUT:
        raise FastloadError(
            "no DataLoader batch arrived before the timeout",
            pathologies.explaining(run)
            or (timeout_hint(run.stuck_at) if run.stuck_at else "raise --timeout if the script needs longer to start"),
        )
    if run.signal_name is not None:
        raise ScriptFailedError(
            f"the script was killed by {run.signal_name} before its first batch",
            hint_for("", tail, oom_kills=run.oom_kills)
            or killed_hint(f"the script got {run.signal_name}", run.oom_kills),
            tail,
        )
    if run.stop_reason is StopReason.SCRIPT_ENDED and run.exit_code not in (0, None):
        raise ScriptFailedError(
            f"the script exited with status {run.exit_code} before its first batch",
            hint_for("", tail, oom_kills=run.oom_kills),
            tail,
        )
    if run.loaders:
        raise NoLoaderObservedError("the script created a DataLoader but never took a batch from it", NO_LOADER_HINT)
    raise NoLoaderObservedError("the script ended without iterating a torch DataLoader", NO_LOADER_HINT)
