"""A command's runs: which modes to run, in what order, and the report they add up to.

``run_modes`` runs ``real`` first; if it measured nothing the script cannot be diagnosed and a
``FastloadError`` says why. The other modes follow; ``no-aug`` only when there is augmentation to
remove. Ctrl-C ends the sequence: the runs so far are returned, the interrupted one included.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import fastload_cli
from fastload_cli.analyzer import Analysis, disturbed
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.config import RunConfig
from fastload_cli.errors import FastloadError, NoLoaderObservedError, ScriptFailedError
from fastload_cli.records import (
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

ObserverFactory = Callable[[ModeSpec], Observer]
NO_LOADER_HINT = (
    "fastload measures torch.utils.data.DataLoader; custom iterables, NVIDIA DALI pipelines and "
    "data already on the device are not seen"
)


@dataclass(frozen=True, slots=True)
class Outcome:
    runs: tuple[RunResult, ...]
    interrupted: bool


def run_modes(
    base: RunConfig,
    modes: Sequence[ModeSpec],
    nvml: Nvml | str | None,
    observe: ObserverFactory,
    on_note: Callable[[ModeSpec, str], None] = lambda spec, message: None,
) -> Outcome:
    runs: list[RunResult] = []
    try:
        for spec in modes:
            skip = _why_skip(spec, runs, base)
            if skip is not None:
                on_note(spec, f"skipped: {skip}")
                continue
            run = run_mode(base.with_mode(spec), nvml, observe(spec))
            if spec.mode is Mode.REAL:
                check_measurable(run)
            summary = summarize(run) if run.status is RunStatus.OK else None
            if summary is not None and disturbed(summary):  # other work skewed it: measure again
                load = summary.foreign_cpu_fraction or 0.0
                on_note(spec, f"other processes used {100 * load:.0f}% of the CPU during this run; running it again")
                again = run_mode(base.with_mode(spec), nvml, observe(spec))
                if again.status is RunStatus.INTERRUPTED or _load_below(again, load):
                    run = again
            runs.append(run)
            if run.status is RunStatus.INTERRUPTED:
                return Outcome(runs=tuple(runs), interrupted=True)
    except KeyboardInterrupt:  # between two runs: the finished ones are kept
        return Outcome(runs=tuple(runs), interrupted=True)
    return Outcome(runs=tuple(runs), interrupted=False)


def _load_below(run: RunResult, load: float) -> bool:
    """The run finished well and other processes took less of the CPU during it than ``load``."""
    found = summarize(run).foreign_cpu_fraction if run.status is RunStatus.OK else None
    return found is not None and found < load


def _why_skip(spec: ModeSpec, done: list[RunResult], base: RunConfig) -> str | None:
    if spec.mode is not Mode.NO_AUG or base.drop_transforms:
        return None
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    if real is not None and not any(lo.augmentations for lo in real.loaders):
        return "no random augmentation found in the datasets' transforms"
    return None


def check_measurable(run: RunResult) -> None:
    """Raise when the real run measured no batch: there is nothing to diagnose."""
    if run.batches:
        return
    tail = run.output_tail
    if run.error is not None:
        raise ScriptFailedError(
            f"the script failed before its first batch: {run.error.type_name}: {run.error.message}",
            "it must run under plain `python` first; its output is shown above",
            tail,
        )
    if run.status is RunStatus.TIMEOUT:
        raise FastloadError(
            "no DataLoader batch arrived before the timeout",
            "raise --timeout if the script needs longer to start, or check that it iterates a DataLoader",
        )
    if run.signal_name is not None:
        raise ScriptFailedError(
            f"the script was killed by {run.signal_name} before its first batch",
            "SIGKILL usually means the machine ran out of memory",
            tail,
        )
    if run.stop_reason is StopReason.SCRIPT_ENDED and run.exit_code not in (0, None):
        raise ScriptFailedError(f"the script exited with status {run.exit_code} before its first batch", None, tail)
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
    )
