"""The ``fastload`` command line: the only place that prints, writes files and picks exit codes.

Exit codes: 0 report produced · 1 fastload error · 2 usage error · 3 a CI gate failed ·
129 hung up (SIGHUP) · 130 interrupted (Ctrl-C) · 143 terminated (SIGTERM). A partial report is still written when a run
was interrupted after measuring something.
"""

from __future__ import annotations

import enum
import inspect
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from fastload_cli import __version__
from fastload_cli.cli.gating import make_gates
from fastload_cli.cli.groups import grouped
from fastload_cli.cli.launcher import LaunchOptions, fixed_plan, launched, with_launcher
from fastload_cli.cli.options import (
    Apply,
    Breakdown,
    Chatter,
    Debug,
    EpochBatches,
    FixOption,
    GateOptions,
    InProcess,
    JsonPath,
    MaxWorkers,
    Measure,
    Modes,
    NoSweep,
    Outputs,
    PatchPath,
    PlainEpochs,
    PySpy,
    Rounds,
    Script,
    ScriptArgs,
    Target,
    Transforms,
    Yes,
)
from fastload_cli.cli.run import STDOUT, Output, check_writable, error_boundary, note, outputs, run_command
from fastload_cli.cli.typed import Typed, given
from fastload_cli.config import DEFAULT_MAX_WORKERS, DEFAULT_SWEEP_BATCHES, RunConfig
from fastload_cli.errors import UsageError
from fastload_cli.records import Command

app = typer.Typer(
    name="fastload",
    help="Find out why PyTorch training is slow: fastload runs your unmodified training script under "
    "counterfactual input-pipeline modes, measures each, and tells you what limits it and what to change.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


F = TypeVar("F", bound=Callable[..., Any])


def command(name: str | None = None) -> Callable[[F], F]:
    """``app.command``, its help the function's docstring with each paragraph's lines joined, so
    the terminal wraps a sentence where its width ends, not where the source's line did."""

    def register(function: F) -> F:
        paragraphs = inspect.cleandoc(function.__doc__ or "").split("\n\n")
        text = "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)
        return app.command(name, help=escape(text))(function)

    return register


SWEEP_MEASURE = Measure(max_batches=DEFAULT_SWEEP_BATCHES)  # a sweep measures many settings: fewer batches each
DEMO_MEASURE = Measure(max_batches=30)


class PinMemory(str, enum.Enum):
    BOTH = "both"


Workers = Annotated[
    str | None,
    typer.Option(
        "--workers", help="Measure exactly these num_workers settings, e.g. 0,2,4,8 (default: adaptive search)."
    ),
]
PrefetchFactor = Annotated[
    str | None,
    typer.Option("--prefetch-factor", help="Also try these prefetch_factor values at the best setting, e.g. 2,4."),
]
PinMemoryBoth = Annotated[
    PinMemory | None,
    typer.Option("--pin-memory", help="'both': also try the other pin_memory setting at the best (CUDA only)."),
]


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


@command()
@grouped
def diagnose(
    script: Script = None,
    script_args: ScriptArgs = None,
    modes: Modes = None,
    max_workers: MaxWorkers = DEFAULT_MAX_WORKERS,
    no_sweep: NoSweep = False,
    breakdown: Breakdown = False,
    py_spy: PySpy = False,
    *,
    target: Target,
    measure: Measure,
    transforms: Transforms,
    outputs: Outputs,
    gates: GateOptions,
    chatter: Chatter,
    launch: LaunchOptions,
) -> None:
    """Run SCRIPT under the real, synthetic and no-aug modes; print the verdict and what to change.

    When loading is the limit and the cores are not all busy, a short num_workers sweep follows and
    its best setting becomes the first recommendation.

    What runs, as you would start it: a script (fastload diagnose train.py -- ARGS), a notebook
    (fastload diagnose notebook.ipynb), a module (fastload diagnose -m package.train -- ARGS), or
    after -- the command as you type it: python train.py ARGS, python -m package.train ARGS,
    torchrun --nproc-per-node N train.py ARGS, python -m torch.distributed.run ..., accelerate
    launch --num_processes N train.py ARGS.
    """
    with error_boundary(chatter.output()) as out:
        from fastload_cli.config import DEFAULT_PY_SPY_S, DIAGNOSE_MODES, parse_modes
        from fastload_cli.runner.start import prestart

        specs = parse_modes(modes) if modes else DIAGNOSE_MODES
        what = given(script, script_args, target.module)
        out, base = prepare(Command.DIAGNOSE, what, measure, outputs, gates, launch, out, transforms)
        prestart(base)  # the input checked: the script's imports overlap fastload's own from here
        from fastload_cli.plan import Diagnose

        base = replace(base, py_spy_s=DEFAULT_PY_SPY_S) if py_spy else base
        auto_sweep = not no_sweep and modes is None and not fixed_plan(base, out)
        runs = Diagnose(specs, max_workers if auto_sweep else None, breakdown, follow_ups=auto_sweep)
        run_command(Command.DIAGNOSE, base, runs, out)


@command("synthetic-compare")
@grouped
def synthetic_compare(
    script: Script = None,
    script_args: ScriptArgs = None,
    *,
    target: Target,
    measure: Measure,
    transforms: Transforms,
    outputs: Outputs,
    gates: GateOptions,
    chatter: Chatter,
    launch: LaunchOptions,
) -> None:
    """Real inputs vs one cached batch replayed (and vs no augmentation): the speedup ceiling of any
    input-pipeline fix, read in a paragraph."""
    with error_boundary(chatter.output()) as out:
        from fastload_cli.config import DIAGNOSE_MODES
        from fastload_cli.plan import Diagnose

        what = given(script, script_args, target.module)
        out, base = prepare(Command.SYNTHETIC_COMPARE, what, measure, outputs, gates, launch, out, transforms)
        run_command(Command.SYNTHETIC_COMPARE, base, Diagnose(DIAGNOSE_MODES, None), out)


@command("sweep-workers")
@grouped
def sweep_workers(
    script: Script = None,
    script_args: ScriptArgs = None,
    workers: Workers = None,
    max_workers: MaxWorkers = DEFAULT_MAX_WORKERS,
    prefetch_factor: PrefetchFactor = None,
    pin_memory: PinMemoryBoth = None,
    in_process: InProcess = False,
    *,
    target: Target,
    measure: Measure = SWEEP_MEASURE,
    outputs: Outputs,
    gates: GateOptions,
    chatter: Chatter,
    launch: LaunchOptions,
) -> None:
    """Measure num_workers settings under the script's real training step: throughput, data wait,
    CPU, memory and start-up per setting, the best setting and where returns end."""
    with error_boundary(chatter.output()) as out:
        from fastload_cli.config import parse_counts
        from fastload_cli.plan import Sweep

        what = given(script, script_args, target.module)
        out, base = prepare(Command.SWEEP_WORKERS, what, measure, outputs, gates, launch, out)
        grid = parse_counts("--workers", workers, minimum=0) if workers else None
        factors = parse_counts("--prefetch-factor", prefetch_factor, minimum=1) if prefetch_factor else ()
        if grid is None and fixed_plan(base, out):
            raise UsageError("an adaptive sweep cannot run on several nodes", "give the settings: --workers 0,2,4,8")
        pin_both = pin_memory is PinMemory.BOTH
        runs = Sweep(max_workers, grid, factors, pin_both, in_process=in_process)
        run_command(Command.SWEEP_WORKERS, base, runs, out)


@command("try")
@grouped
def try_fixes(
    script: Script = None,
    script_args: ScriptArgs = None,
    fix: FixOption = [],  # noqa: B006 (typer reads the default; it is never mutated)
    *,
    target: Target,
    measure: Measure,
    outputs: Outputs,
    gates: GateOptions,
    chatter: Chatter,
    launch: LaunchOptions,
) -> None:
    """Run SCRIPT as it is and with each --fix applied inside it (no code change): the measured gain
    with its noise, the memory it costs, and the code change that makes it permanent."""
    with error_boundary(chatter.output()) as out:
        from fastload_cli.config import parse_fixes
        from fastload_cli.plan import TryFixes

        what = given(script, script_args, target.module)
        out, base = prepare(Command.TRY, what, measure, outputs, gates, launch, out)
        run_command(Command.TRY, base, TryFixes(parse_fixes(fix)), out)


@command()
@grouped
def fix(
    script: Script = None,
    script_args: ScriptArgs = None,
    patch: PatchPath = None,
    apply: Apply = False,
    yes: Yes = False,
    rounds: Rounds = 3,
    epochs: PlainEpochs = 3,
    epoch_batches: EpochBatches = 50,
    *,
    target: Target,
    measure: Measure,
    outputs: Outputs,
    chatter: Chatter,
) -> None:
    """Diagnose SCRIPT, write each recommendation fastload can express as a change to your code
    (the DataLoader's arguments where it is built, a fixes-library wrapper) into a copy of it, and
    prove each copy against the script as it is in alternated plain runs, with no fastload inside.
    The change that is faster in every round (the winners combined, where that is faster still)
    is shown as a unified diff, written with --patch, or applied with --apply.

    What cannot be written as a change (a loader a framework builds, arguments passed as
    **kwargs, advice about the data or the transforms) is named with the reason.
    """
    with error_boundary(chatter.output()) as out:
        from fastload_cli.cli.fixing import FixChoices, run_fix
        from fastload_cli.runner.plain import PlainSettings

        what = given(script, script_args, target.module)
        if apply and not yes and not sys.stdin.isatty():
            raise UsageError("--apply asks before it changes a file, and no one can answer here", "add --yes")
        if patch is not None:
            check_writable(patch)
        out, base = prepare(Command.DIAGNOSE, what, measure, outputs, GateOptions(), LaunchOptions(), out)
        if base.launcher is not None:
            raise UsageError("fastload fix proves a change in plain runs of one process", "run it without a launcher")
        plain = PlainSettings(epochs=epochs, epoch_batches=epoch_batches, timeout_s=measure.timeout)
        run_fix(base, out, FixChoices(patch=patch, apply=apply, yes=yes, rounds=rounds, plain=plain))


@command()
@grouped
def demo(
    name: Annotated[
        str | None, typer.Argument(help="Which bundled example; none: the first, and a list of the others.")
    ] = None,
    *,
    measure: Measure = DEMO_MEASURE,
    outputs: Outputs,
    gates: GateOptions,
    chatter: Chatter,
) -> None:
    """Diagnose a bundled example training script: no data or script of your own needed."""
    from fastload_cli import examples
    from fastload_cli.config import DIAGNOSE_MODES
    from fastload_cli.errors import MissingDependencyError, UnknownExampleError
    from fastload_cli.plan import Diagnose

    with error_boundary(chatter.output()) as out:
        example = examples.find(name) if name else examples.EXAMPLES[0]
        if example is None:
            raise UnknownExampleError(str(name), examples.names())
        out = replace(out, paths=outputs_of(outputs), gates=make_gates(example.filename, gates))
        missing = [m for m in example.requires if not _importable(m)]
        if missing:
            raise MissingDependencyError(
                f"the '{example.name}' example", missing[0], "pip install 'fastload[torchvision]'"
            )
        note(out, f"Example '{example.name}': {example.summary}.")
        base = make_config(Typed(target=example.filename), measure, cwd=example.path.parent)
        run_command(Command.DIAGNOSE, base, Diagnose(DIAGNOSE_MODES, DEFAULT_MAX_WORKERS, follow_ups=True), out)
        if name is None and not out.to_stdout:
            _list_examples(out, example.name)


@command()
def compare(
    before: Annotated[str, typer.Argument(help="The earlier JSON report (written with --json).", show_default=False)],
    after: Annotated[str, typer.Argument(help="The later JSON report.", show_default=False)],
    json_path: Annotated[
        str | None,
        typer.Option("--json", help="Write the comparison (schema fastload.compare/1) here; '-' for stdout."),
    ] = None,
    debug: Debug = False,
) -> None:
    """Two reports side by side: throughput, data wait, step time, CPU and memory per mode, the
    verdicts, and each change against the runs' noise. For checking a fix."""
    out = Output(debug=debug)
    with error_boundary(out):
        from fastload_cli.analyzer.compare import compare as compare_figures
        from fastload_cli.cli.gating import read_report
        from fastload_cli.cli.run import write_document
        from fastload_cli.reporters import comparison

        if json_path is not None:
            check_writable(json_path)
        result = compare_figures(read_report(before, "BEFORE"), read_report(after, "AFTER"))
        if json_path is not None:
            write_document(comparison.document(result), json_path, "Comparison", out)
        if json_path != STDOUT:
            Console(highlight=False, markup=False).print(comparison.render(result))


@command()
def merge(
    reports: Annotated[
        list[str], typer.Argument(help="Each node's JSON report of one data-parallel job.", show_default=False)
    ],
    json_path: JsonPath = None,
    debug: Debug = False,
) -> None:
    """The reports the nodes of one data-parallel job wrote, as the job's: every rank of each mode in
    one table, the job's throughput, and the slowest rank of the whole job."""
    out = Output(debug=debug)
    with error_boundary(out):
        from fastload_cli.cli.merging import run_merge

        run_merge(reports, json_path, out)


def _list_examples(out: Output, shown: str) -> None:
    from fastload_cli import examples

    note(out, "\nOther bundled examples (fastload demo NAME):")
    for e in examples.EXAMPLES:
        if e.name != shown:
            note(out, f"  {e.name:<20} {e.summary} (expect: {e.expected})")


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def version_callback(value: bool) -> None:
    if value:
        typer.echo(f"fastload {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=version_callback, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """fastload: why is my PyTorch training slow, and what do I change?"""


# --------------------------------------------------------------------------------------------
# Settings shared by the commands
# --------------------------------------------------------------------------------------------


def prepare(
    command: Command,
    what: Typed,
    measure: Measure,
    given_outputs: Outputs,
    gates: GateOptions,
    launch: LaunchOptions,
    out: Output,
    transforms: Transforms | None = None,
) -> tuple[Output, RunConfig]:
    """What every command that runs a script checks before its first run: where the report goes,
    the gates, what runs and the measurement's settings, the data-parallel job (as given, or as the
    typed launcher line names it)."""
    out = replace(out, paths=outputs_of(given_outputs), gates=make_gates(what.shown, gates))
    base = make_config(what, measure, transforms)
    return with_launcher(base, launched(launch, what), command.value, out)


def outputs_of(given: Outputs) -> dict[str, str]:
    return outputs(given.named(), given.output)


def make_config(
    what: Typed, measure: Measure, transforms: Transforms | None = None, cwd: Path | None = None
) -> RunConfig:
    from fastload_cli.config import check_counts, check_module, check_script
    from fastload_cli.records import ChildSpec

    check_counts(warmup=measure.warmup, max_batches=measure.max_batches, timeout_s=measure.timeout)
    keep, drop = (transforms.keep_transform, transforms.drop_transform) if transforms else (None, None)
    cwd = cwd or Path.cwd()
    source = check_module(what.target, cwd) if what.module else check_script(what.target, cwd)
    return RunConfig(
        script=source,
        script_arg0=what.shown,
        module=what.target if what.module else None,
        script_args=what.args,
        child=ChildSpec(warmup=measure.warmup, keep_transforms=tuple(keep or ()), drop_transforms=tuple(drop or ())),
        max_batches=measure.max_batches,
        timeout_s=measure.timeout,
        cwd=cwd,
        fixed_batches=measure.fixed_batches,
    )


def main() -> None:
    """Console-script entry point."""
    app(prog_name="fastload")
