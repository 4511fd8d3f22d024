"""The ``fastload`` command line: the only place that prints, writes files and picks exit codes.

Exit codes: 0 report produced · 1 fastload error · 2 usage error · 3 a CI gate failed ·
130 interrupted (Ctrl-C) · 143 terminated (SIGTERM). A partial report is still written when a run
was interrupted after measuring something.
"""

from __future__ import annotations

import enum
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from fastload_cli import __version__
from fastload_cli.cli.run import Output, error_boundary, note, outputs, run_command
from fastload_cli.config import (
    DEFAULT_MAX_BATCHES,
    DEFAULT_MAX_WORKERS,
    DEFAULT_SWEEP_BATCHES,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    RunConfig,
)
from fastload_cli.reporters import FORMATS

app = typer.Typer(
    name="fastload",
    help="Find out why PyTorch training is slow: fastload runs your unmodified training script under "
    "counterfactual input-pipeline modes, measures each, and tells you what limits it and what to change.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# --------------------------------------------------------------------------------------------
# Options shared by the commands
# --------------------------------------------------------------------------------------------

MaxBatches = Annotated[int, typer.Option("--max-batches", help="Batches measured per mode, after warm-up.", min=1)]
Warmup = Annotated[int, typer.Option("--warmup", help="Batches run before measuring (worker start-up, caches).", min=0)]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds allowed per mode.", min=0.001)]
JsonPath = Annotated[
    str | None, typer.Option("--json", help="Write the JSON report (schema fastload.report/1) here; '-' for stdout.")
]
OutputTo = Annotated[
    list[str] | None,
    typer.Option(
        "--output",
        "-o",
        help=f"Also write the report as FORMAT=PATH ('-' for stdout), repeatable. Formats: {', '.join(FORMATS)}.",
        metavar="FORMAT=PATH",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or notes on stderr.")]
Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks for fastload errors.")]
ShowOutput = Annotated[bool, typer.Option("--show-output", help="Stream the script's own output to stderr.")]
Keep = Annotated[
    list[str] | None,
    typer.Option("--keep-transform", help="no-aug: keep transforms of this class name (repeatable).", metavar="NAME"),
]
Drop = Annotated[
    list[str] | None,
    typer.Option(
        "--drop-transform", help="no-aug: also drop transforms of this class name (repeatable).", metavar="NAME"
    ),
]
Modes = Annotated[
    str | None,
    typer.Option(
        "--modes", help="Comma-separated modes to run (real is always first): real, synthetic, no-aug, workers=N."
    ),
]
MaxWorkers = Annotated[
    int, typer.Option("--max-workers", help="Highest num_workers the sweep may try.", min=0, max=1024)
]
NoSweep = Annotated[
    bool, typer.Option("--no-sweep", help="Do not measure num_workers settings, even when loading is the limit.")
]
Script = Annotated[str, typer.Argument(help="The training script, as you would pass it to python.", show_default=False)]
ScriptArgs = Annotated[
    list[str] | None,
    typer.Argument(help="Arguments for the script, after --.", show_default=False, metavar="[-- SCRIPT_ARGS...]"),
]


class PinMemory(str, enum.Enum):
    BOTH = "both"


# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------


@app.command()
def diagnose(
    script: Script,
    script_args: ScriptArgs = None,
    max_batches: MaxBatches = DEFAULT_MAX_BATCHES,
    warmup: Warmup = DEFAULT_WARMUP,
    timeout: Timeout = DEFAULT_TIMEOUT_S,
    json_path: JsonPath = None,
    output: OutputTo = None,
    modes: Modes = None,
    keep_transform: Keep = None,
    drop_transform: Drop = None,
    max_workers: MaxWorkers = DEFAULT_MAX_WORKERS,
    no_sweep: NoSweep = False,
    breakdown: Annotated[
        bool,
        typer.Option(
            "--breakdown",
            help="Time each transform, reading/decoding and collate per sample (always done when CPU-bound).",
        ),
    ] = False,
    py_spy: Annotated[
        bool,
        typer.Option(
            "--py-spy", help="Sample the loading processes with py-spy during the real run (needs py-spy installed)."
        ),
    ] = False,
    show_output: ShowOutput = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Run SCRIPT under the real, synthetic and no-aug modes; print the verdict and what to change.

    When loading is the limit and the cores are not all busy, a short num_workers sweep follows and
    its best setting becomes the first recommendation.
    """
    out = Output(quiet=quiet, debug=debug, show_output=show_output)
    with error_boundary(out):
        out = replace(out, paths=outputs(json_path, output))
        from fastload_cli.config import DIAGNOSE_MODES, parse_modes
        from fastload_cli.session import DiagnoseRuns

        specs = parse_modes(modes) if modes else DIAGNOSE_MODES
        base = make_config(script, script_args, max_batches, warmup, timeout, keep_transform, drop_transform)
        if py_spy:
            from fastload_cli.config import DEFAULT_PY_SPY_S

            base = replace(base, py_spy_s=DEFAULT_PY_SPY_S)
        auto_sweep = not no_sweep and modes is None
        run_command("diagnose", base, DiagnoseRuns(specs, max_workers if auto_sweep else None, breakdown), out)


@app.command("synthetic-compare")
def synthetic_compare(
    script: Script,
    script_args: ScriptArgs = None,
    max_batches: MaxBatches = DEFAULT_MAX_BATCHES,
    warmup: Warmup = DEFAULT_WARMUP,
    timeout: Timeout = DEFAULT_TIMEOUT_S,
    json_path: JsonPath = None,
    output: OutputTo = None,
    keep_transform: Keep = None,
    drop_transform: Drop = None,
    show_output: ShowOutput = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Real inputs vs one cached batch replayed (and vs no augmentation): the speedup ceiling of any
    input-pipeline fix, read in a paragraph."""
    out = Output(quiet=quiet, debug=debug, show_output=show_output)
    with error_boundary(out):
        out = replace(out, paths=outputs(json_path, output))
        from fastload_cli.config import DIAGNOSE_MODES
        from fastload_cli.session import DiagnoseRuns

        base = make_config(script, script_args, max_batches, warmup, timeout, keep_transform, drop_transform)
        run_command("synthetic-compare", base, DiagnoseRuns(DIAGNOSE_MODES, None), out)


@app.command("sweep-workers")
def sweep_workers(
    script: Script,
    script_args: ScriptArgs = None,
    workers: Annotated[
        str | None,
        typer.Option(
            "--workers", help="Measure exactly these num_workers settings, e.g. 0,2,4,8 (default: adaptive search)."
        ),
    ] = None,
    max_workers: MaxWorkers = DEFAULT_MAX_WORKERS,
    prefetch_factor: Annotated[
        str | None,
        typer.Option("--prefetch-factor", help="Also try these prefetch_factor values at the best setting, e.g. 2,4."),
    ] = None,
    pin_memory: Annotated[
        PinMemory | None,
        typer.Option("--pin-memory", help="'both': also try the other pin_memory setting at the best (CUDA only)."),
    ] = None,
    max_batches: MaxBatches = DEFAULT_SWEEP_BATCHES,
    warmup: Warmup = DEFAULT_WARMUP,
    timeout: Timeout = DEFAULT_TIMEOUT_S,
    json_path: JsonPath = None,
    output: OutputTo = None,
    show_output: ShowOutput = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Measure num_workers settings under the script's real training step: throughput, data wait,
    CPU, memory and start-up per setting, the best setting and where returns end."""
    out = Output(quiet=quiet, debug=debug, show_output=show_output)
    with error_boundary(out):
        out = replace(out, paths=outputs(json_path, output))
        from fastload_cli.config import parse_counts
        from fastload_cli.session import SweepRuns

        grid = parse_counts("--workers", workers, minimum=0) if workers else None
        factors = parse_counts("--prefetch-factor", prefetch_factor, minimum=1) if prefetch_factor else ()
        base = make_config(script, script_args, max_batches, warmup, timeout, None, None)
        runs = SweepRuns(
            max_workers=max_workers, grid=grid, prefetch_factors=factors, pin_both=pin_memory is PinMemory.BOTH
        )
        run_command("sweep-workers", base, runs, out)


@app.command()
def demo(
    name: Annotated[
        str | None, typer.Argument(help="Which bundled example; none: the first, and a list of the others.")
    ] = None,
    max_batches: MaxBatches = 30,
    warmup: Warmup = DEFAULT_WARMUP,
    timeout: Timeout = DEFAULT_TIMEOUT_S,
    json_path: JsonPath = None,
    output: OutputTo = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Diagnose a bundled example training script: no data or script of your own needed."""
    from fastload_cli import examples
    from fastload_cli.config import DIAGNOSE_MODES
    from fastload_cli.errors import MissingDependencyError, UnknownExampleError
    from fastload_cli.session import DiagnoseRuns

    out = Output(quiet=quiet, debug=debug)
    with error_boundary(out):
        out = replace(out, paths=outputs(json_path, output))
        example = examples.find(name) if name else examples.EXAMPLES[0]
        if example is None:
            raise UnknownExampleError(str(name), examples.names())
        missing = [m for m in example.requires if not _importable(m)]
        if missing:
            raise MissingDependencyError(
                f"the '{example.name}' example", missing[0], "pip install 'fastload[torchvision]'"
            )
        note(out, f"Example '{example.name}': {example.summary}.")
        base = make_config(example.filename, None, max_batches, warmup, timeout, None, None, cwd=example.path.parent)
        run_command("diagnose", base, DiagnoseRuns(DIAGNOSE_MODES, DEFAULT_MAX_WORKERS), out)
        if name is None and not out.to_stdout:
            _list_examples(out, example.name)


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


def make_config(
    script: str,
    script_args: list[str] | None,
    max_batches: int,
    warmup: int,
    timeout: float,
    keep: list[str] | None,
    drop: list[str] | None,
    cwd: Path | None = None,
) -> RunConfig:
    from fastload_cli.config import check_counts, check_script
    from fastload_cli.records import ChildSpec

    check_counts(warmup=warmup, max_batches=max_batches, timeout_s=timeout)
    cwd = cwd or Path.cwd()
    return RunConfig(
        script=check_script(script, cwd),
        script_arg0=script,
        script_args=tuple(script_args or ()),
        child=ChildSpec(warmup=warmup, keep_transforms=tuple(keep or ()), drop_transforms=tuple(drop or ())),
        max_batches=max_batches,
        timeout_s=timeout,
        cwd=cwd,
    )


def main() -> None:
    """Console-script entry point."""
    app(prog_name="fastload")
