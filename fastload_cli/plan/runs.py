"""One run as every command makes it: its configuration made ready, whether a mode is worth it,
and the rules that judge the run once it ended (it measured something; it must be measured again).

The session runs, and asks these: a mode ends once its estimate is stable, only the real run is
profiled, a run other processes skewed is measured again and the quieter kept, and the command's
first run must measure a batch or the script cannot be diagnosed (a ``FastloadError`` says why).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace

from fastload_cli.analyzer import pathologies, split, trials
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.caveats import disturbed
from fastload_cli.analyzer.failures import (
    LOST_BATCH_HINT,
    NO_LOADER_HINT,
    hint_for,
    killed_hint,
    lost_batch,
    timeout_hint,
)
from fastload_cli.analyzer.in_turn import REAL, SYNTHETIC, part_settled
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.search.in_process import setting_settled
from fastload_cli.analyzer.settle import epoch_end_near, settled, settled_against
from fastload_cli.analyzer.window import first_loader
from fastload_cli.config import DEFAULT_BREAKDOWN_ITEMS, Launcher, RunConfig, SettleRule
from fastload_cli.errors import FastloadError, NoLoaderObservedError, ScriptFailedError
from fastload_cli.plan.state import State
from fastload_cli.plan.step import Keep, Part, Step
from fastload_cli.records import Measured, Mode, ModeSpec, RunResult, RunStatus, StopReason, Streamed

CACHING = (Mode.CACHED, Mode.CACHED_NO_AUG)  # the modes that decode samples into memory first
APART = (
    "Real and synthetic run as two starts of the script: the ranks of a data-parallel job are not "
    "switched to replays within one run."
)


def prepared(config: RunConfig) -> RunConfig:
    """``config`` as it runs: a mode ends once its estimate is stable (an in-process run's
    settings, each; a real+synthetic run's parts, each), unless its batches are fixed; only the
    real run is profiled."""
    spec = config.spec
    real = spec.mode in (Mode.REAL, Mode.REAL_SYNTHETIC)
    if not config.fixed_batches:
        settle = {Mode.IN_PROCESS: setting_settled, Mode.REAL_SYNTHETIC: part_settled}.get(spec.mode, settled)
        config = replace(config, settle=settle, reach=epoch_end_near if real else None)
    if not real:
        config = replace(config, py_spy_s=0.0)
    return config


def run_step(
    part: Part,
    config: RunConfig,
    *,
    keep: Keep = Keep.RUN,
    first: bool = False,
    notes: tuple[tuple[ModeSpec | None, str], ...] = (),
    mode: ModeSpec | None = None,
) -> Step:
    """A step that runs ``config`` (made ready, ``prepared``), told by ``notes``."""
    return Step(part=part, config=prepared(config), keep=keep, first=first, notes=notes, mode=mode)


def measured(run: RunResult) -> Measured:
    """``run`` with its summary, computed once."""
    return Measured(run, summarize(run))


def why_again(found: Measured, config: RunConfig) -> str | None:
    """Why a finished run is measured again at once, or None: other processes used enough of the
    CPU to skew it (``disturbed``). Never in a job over several nodes: every node runs the same
    runs in turn, and none may run one again alone."""
    if config.launcher is not None and config.launcher.multi_node:
        return None
    if found.run.status is not RunStatus.OK or not disturbed(found.summary):
        return None
    load = found.summary.foreign_cpu_fraction or 0.0
    return f"other processes used {100 * load:.0f}% of the CPU during this run; running it again"


def kept(first: Measured, again: Measured) -> Measured:
    """Of a disturbed run and its second measurement, the one kept: the second where it was
    interrupted, or finished well with other processes taking less of the CPU."""
    if again.run.status is RunStatus.INTERRUPTED:
        return again
    load = first.summary.foreign_cpu_fraction or 0.0
    found = again.summary.foreign_cpu_fraction if again.run.status is RunStatus.OK else None
    return again if found is not None and found < load else first


def mode_step(state: State, spec: ModeSpec, config: RunConfig, part: Part = Part.MODES) -> Step:
    """The step for a mode asked for: its run (``config``), or a note that says why it measures
    nothing new, or nothing where the mode means nothing for this script."""
    if not applies(spec, state.runs):
        return Step(part=part, mode=spec)
    skip = why_skip(spec, state.runs, state.base.child.drop_transforms)
    if skip is not None:
        return Step(part=part, mode=spec, notes=((spec, f"skipped: {skip}"),))
    step = run_step(part, config, first=spec.mode is Mode.REAL, mode=spec)
    if spec.mode is Mode.FIX and trials.only_at_epoch_starts(spec.fix_specs):
        return holding_an_epoch_start(step)
    if spec.mode is Mode.NO_AUG:
        return _against_real(state, step)
    return _in_an_epoch(state, step) if spec.mode in CACHING else step


def holding_an_epoch_start(step: Step) -> Step:
    """``step``, not over before its window holds an epoch's start (``trials.epoch_starts``): all
    that keeping the workers saves is what an epoch's start costs. Its batches still bound it."""
    ready = step.config
    if ready is None or ready.settle is None:
        return step
    return replace(step, config=replace(ready, settle=functools.partial(_with_an_epoch_start, ready.settle)))


def _with_an_epoch_start(rule: SettleRule, run: Streamed) -> bool:
    return trials.epoch_starts(run) > 0 and rule(run)


def _against_real(state: State, step: Step) -> Step:
    """``step`` (no-aug's) stopping once its rate against the real run's is decided against
    augmentation's line as the cause (``settle.settled_against``), in one epoch where
    ``one_epoch`` holds; where a settle rule stops it at all (``_stops_early``)."""
    ready, rate = _stops_early(step), real_rate(state)
    if ready is None or not rate:
        return step
    line, across = th.AUG_SPEEDUP_SIGNIFICANT, not one_epoch(state)
    decided = functools.partial(settled_against, rate=rate, line=line, across_epochs=across)
    return replace(step, config=replace(ready, settle=decided))


def _in_an_epoch(state: State, step: Step) -> Step:
    """``step`` (cached's) stopping once its estimate is stable, in one epoch where ``one_epoch``
    holds (``settle.settled`` not ``across_epochs``); where a settle rule stops it at all
    (``_stops_early``), as no-aug's (``_against_real``)."""
    ready = _stops_early(step)
    if ready is None or not one_epoch(state):
        return step
    return replace(step, config=replace(ready, settle=functools.partial(settled, across_epochs=False)))


def _stops_early(step: Step) -> RunConfig | None:
    """``step``'s config where a settle rule stops it: its batches not fixed, one process (a
    data-parallel job's real throughput is its ranks' sum, and a rank's stream one rank's)."""
    ready = step.config
    return None if ready is None or ready.settle is None or ready.launcher is not None else ready


def one_epoch(state: State) -> bool:
    """The runs read against the real run by their steady windows alone (no-aug, cached) may stop
    before the next epoch starts: the real run's window crossed no epoch boundary, and what an
    epoch costs besides its steps is the real run's to say."""
    real = state.analysis.facts.real
    return real is not None and real.epoch_boundaries == 0


def real_rate(state: State) -> float | None:
    """The real run's throughput, as the verdict reads the runs that remove part of loading
    against it (``Facts.real``)."""
    real = state.analysis.facts.real
    return real.throughput_samples_per_s if real is not None else None


def in_turn_step(state: State, specs: Sequence[ModeSpec], config: RunConfig, part: Part = Part.MODES) -> Step:
    """The step for the first of ``specs``, and where the second follows it in one run of the
    script, for both: real, then synthetic (``Mode.REAL_SYNTHETIC``), where one process runs the
    script; a data-parallel job runs them as two starts, and says so."""
    spec = specs[0]
    if spec != REAL or len(specs) < 2 or specs[1] != SYNTHETIC:
        return mode_step(state, spec, config, part)
    if config.launcher is not None:
        step = mode_step(state, spec, config, part)
        return replace(step, notes=((None, APART), *step.notes))
    both = config.with_mode(ModeSpec(mode=Mode.REAL_SYNTHETIC))
    return replace(run_step(part, both, keep=Keep.MODES_IN_TURN, first=True, mode=spec), then=specs[1])


def covered(steps: Sequence[Step]) -> int:
    """The modes ``steps`` stand for: one each, two for a step that measured a second in turn."""
    return sum(1 + (s.then is not None) for s in steps)


def why_skip(spec: ModeSpec, done: tuple[RunResult, ...], drop_transforms: tuple[str, ...]) -> str | None:
    """Why a mode would measure nothing new, or None: no-aug (or cached-no-aug) without
    augmentation to remove."""
    if spec.mode not in (Mode.NO_AUG, Mode.CACHED_NO_AUG) or drop_transforms:
        return None
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    if real is not None and not any(lo.augmentations for lo in real.loaders):
        return "no random augmentation found in the datasets' transforms"
    return None


def applies(spec: ModeSpec, done: tuple[RunResult, ...]) -> bool:
    """Whether a mode means anything for this script: the device-resident replay only where the
    real run trained on CUDA (on the CPU nothing is copied to a device)."""
    if spec.mode is not Mode.SYNTHETIC_DEVICE:
        return True
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    return real is not None and bool(real.env.cuda_in_use)


def split_step(state: State, part: Part, keep: Keep = Keep.SPLIT) -> Step:
    """The split run: the real, no-aug, cached and cached-no-aug pipelines taking turns in one run
    of the script, sized from the training loader the runs so far saw (``split.split_batches``);
    with ``Keep.SPLIT_MODES``, measuring no-aug and cached for the modes too, and over once its
    first round of turns has decided no-aug's answer (``split.decided``)."""
    note = "Splitting the real pipeline's time: real, no-aug, cached and cached-no-aug in turns (split)."
    if keep is Keep.SPLIT_MODES:
        note = (
            "Loading is the limit: measuring no-aug and cached, with real and cached-no-aug, in turns in one run "
            "of the script (split)."
        )
    turn, batches = split.split_batches(first_loader(state.runs))
    config = state.with_cache(replace(state.base, max_batches=batches, fixed_batches=True))
    config = config.with_child(mode=ModeSpec(mode=Mode.SPLIT), phase_batches=turn)
    step = run_step(part, config, keep=keep, notes=((None, note),))
    rate = real_rate(state)
    if keep is not Keep.SPLIT_MODES or step.config is None or not rate:
        return step
    return replace(step, config=replace(step.config, settle=functools.partial(split.decided, rate=rate)))


def split_unfit(state: State) -> str | None:
    """Why no split run measures this script, or None where one can: a run of it ended with the
    script before every pipeline of a split run could take its turns (``split.too_short``)."""
    taken = split.too_short(state.runs, state.base.warmup)
    if taken is None:
        return None
    return (
        f"Not measured: split (the script's training loop ended after {taken} batches, fewer than "
        "its pipelines' turns need); no-aug and cached are measured in runs of their own."
    )


def breakdown_step(base: RunConfig) -> Step:
    """One more run of the script that times each loading step on a sample of items, in-process,
    at the first DataLoader iteration, and ends there; one rank's pipeline, never a rendezvous."""
    note = f"Timing each loading step on {DEFAULT_BREAKDOWN_ITEMS} samples (breakdown)."
    mode = ModeSpec(mode=Mode.BREAKDOWN)
    config = replace(base.with_child(mode=mode, breakdown_items=DEFAULT_BREAKDOWN_ITEMS), py_spy_s=0.0)
    if config.launcher is not None:
        config = replace(config, launcher=Launcher(nproc_per_node=1))
    return Step(part=Part.BREAKDOWN, config=config, keep=Keep.BREAKDOWN, notes=((None, note),))


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
    if run.stop_reason is StopReason.BATCH_LOST:
        raise ScriptFailedError(
            f"before its first batch, {lost_batch(tail)}",
            pathologies.explaining(run) or LOST_BATCH_HINT,
            tail,
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
