"""The ``fastload`` command line: the only place that prints, writes files and picks exit codes.

Exit codes: 0 report produced · 1 fastload error · 2 usage error · 3 a CI gate failed ·
130 interrupted (Ctrl-C) · 143 terminated (SIGTERM). A partial report is still written when a run
was interrupted after measuring something.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from fastload_cli import __version__
from fastload_cli.config import (
    DEFAULT_MAX_BATCHES,
    DEFAULT_MAX_WORKERS,
    DEFAULT_SWEEP_BATCHES,
    DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP,
    RunConfig,
)
from fastload_cli.errors import FastloadError, OutputPathError, ScriptFailedError

if TYPE_CHECKING:
    from fastload_cli.records import ModeSpec, Report
    from fastload_cli.session import Outcome, Plan

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_GATE = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143

app = typer.Typer(
    name="fastload",
    help="Find out why PyTorch training is slow: fastload runs your unmodified training script under "
    "counterfactual input-pipeline modes, measures each, and tells you what limits it and what to change.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
stderr = Console(stderr=True, highlight=False)


# --------------------------------------------------------------------------------------------
# Options shared by the commands
# --------------------------------------------------------------------------------------------

MaxBatches = Annotated[int, typer.Option("--max-batches", help="Batches measured per mode, after warm-up.", min=1)]
Warmup = Annotated[int, typer.Option("--warmup", help="Batches run before measuring (worker start-up, caches).", min=0)]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds allowed per mode.", min=0.001)]
JsonPath = Annotated[
    str | None, typer.Option("--json", help="Write the JSON report (schema fastload.report/1) here; '-' for stdout.")
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


@dataclass(frozen=True, slots=True)
class Output:
    """Where the results go, and how chatty fastload is."""

    json_path: str | None
    quiet: bool
    debug: bool
    show_output: bool

    @property
    def json_to_stdout(self) -> bool:
        return self.json_path == "-"


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
    out = Output(json_path=json_path, quiet=quiet, debug=debug, show_output=show_output)
    with error_boundary(out):
        from fastload_cli.config import DIAGNOSE_MODES, parse_modes
        from fastload_cli.session import Diagnose

        specs = parse_modes(modes) if modes else DIAGNOSE_MODES
        base = make_config(script, script_args, max_batches, warmup, timeout, keep_transform, drop_transform)
        if py_spy:
            from dataclasses import replace

            from fastload_cli.config import DEFAULT_PY_SPY_S

            base = replace(base, py_spy_s=DEFAULT_PY_SPY_S)
        auto_sweep = not no_sweep and modes is None
        run_command("diagnose", base, Diagnose(specs, max_workers if auto_sweep else None, breakdown), out)


@app.command("synthetic-compare")
def synthetic_compare(
    script: Script,
    script_args: ScriptArgs = None,
    max_batches: MaxBatches = DEFAULT_MAX_BATCHES,
    warmup: Warmup = DEFAULT_WARMUP,
    timeout: Timeout = DEFAULT_TIMEOUT_S,
    json_path: JsonPath = None,
    keep_transform: Keep = None,
    drop_transform: Drop = None,
    show_output: ShowOutput = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Real inputs vs one cached batch replayed (and vs no augmentation): the speedup ceiling of any
    input-pipeline fix, read in a paragraph."""
    out = Output(json_path=json_path, quiet=quiet, debug=debug, show_output=show_output)
    with error_boundary(out):
        from fastload_cli.config import DIAGNOSE_MODES
        from fastload_cli.session import Diagnose

        base = make_config(script, script_args, max_batches, warmup, timeout, keep_transform, drop_transform)
        run_command("synthetic-compare", base, Diagnose(DIAGNOSE_MODES, None), out)


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
    show_output: ShowOutput = False,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Measure num_workers settings under the script's real training step: throughput, data wait,
    CPU, memory and start-up per setting, the best setting and where returns end."""
    out = Output(json_path=json_path, quiet=quiet, debug=debug, show_output=show_output)
    with error_boundary(out):
        from fastload_cli.config import parse_counts
        from fastload_cli.session import Sweep

        grid = parse_counts("--workers", workers, minimum=0) if workers else None
        factors = parse_counts("--prefetch-factor", prefetch_factor, minimum=1) if prefetch_factor else ()
        base = make_config(script, script_args, max_batches, warmup, timeout, None, None)
        plan = Sweep(
            max_workers=max_workers, grid=grid, prefetch_factors=factors, pin_both=pin_memory is PinMemory.BOTH
        )
        run_command("sweep-workers", base, plan, out)


@app.command()
def demo(
    name: Annotated[
        str | None, typer.Argument(help="Which bundled example; none: the first, and a list of the others.")
    ] = None,
    max_batches: MaxBatches = 30,
    warmup: Warmup = DEFAULT_WARMUP,
    timeout: Timeout = DEFAULT_TIMEOUT_S,
    json_path: JsonPath = None,
    quiet: Quiet = False,
    debug: Debug = False,
) -> None:
    """Diagnose a bundled example training script: no data or script of your own needed."""
    from fastload_cli import examples
    from fastload_cli.config import DIAGNOSE_MODES
    from fastload_cli.errors import MissingDependencyError, UnknownExampleError
    from fastload_cli.session import Diagnose

    out = Output(json_path=json_path, quiet=quiet, debug=debug, show_output=False)
    with error_boundary(out):
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
        run_command("diagnose", base, Diagnose(DIAGNOSE_MODES, DEFAULT_MAX_WORKERS), out)
        if name is None and not out.json_to_stdout:
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
# Running a command
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


def run_command(command: str, base: RunConfig, plan: Plan, out: Output) -> None:
    """Run the plan's modes, analyse, report; exits with 130/143 when interrupted."""
    from fastload_cli.samplers.gpu import open_nvml

    check_writable(out.json_path)
    nvml = open_nvml()
    try:
        with _terminate_as_interrupt() as terminated:
            outcome = _run_with_progress(base, plan, nvml, out)
        report = make_report(command, base, outcome, nvml, plan)
    finally:
        if not isinstance(nvml, str):
            nvml.shutdown()
    if report is not None:
        emit_report(report, out)
    if outcome.interrupted:
        note(
            out,
            "Interrupted." + (" The partial report covers what was measured." if report else " Nothing was measured."),
        )
        raise typer.Exit(EXIT_TERMINATED if terminated.get("signal") == signal.SIGTERM else EXIT_INTERRUPTED)


def make_report(command: str, base: RunConfig, outcome: Outcome, nvml: Any, plan: Plan) -> Report | None:
    """The report, or None when an interrupted command measured no batch at all."""
    from fastload_cli.analyzer import analyze
    from fastload_cli.session import build_report, environment

    if outcome.interrupted and not any(r.batches for r in outcome.runs):
        return None
    analysis = analyze(outcome.runs, plan.limits(), outcome.breakdown)
    return build_report(command, base, outcome, analysis, environment(outcome.runs, nvml))


def _run_with_progress(base: RunConfig, plan: Plan, nvml: Any, out: Output) -> Outcome:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from fastload_cli.runner.launch import Observer
    from fastload_cli.session import Runner

    progress = Progress(
        TextColumn("{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("batches"),
        TimeElapsedColumn(),
        console=stderr,
        disable=out.quiet or not stderr.is_terminal,
        transient=False,
    )

    def observe(spec: ModeSpec) -> Observer:
        label = spec.label + (f" {spec.variant}" if spec.variant else "")
        task = progress.add_task(label, total=None)
        on_output = _stream_output if out.show_output else None
        return Observer(
            on_batches=lambda done, total: progress.update(task, completed=min(done, total), total=total),
            on_output=on_output,
        )

    def on_note(spec: ModeSpec | None, message: str) -> None:
        note(out, f"{spec.label}: {message}." if spec is not None else message)

    with progress:
        return plan.execute(Runner(base, nvml, observe, on_note))


def _stream_output(data: bytes) -> None:
    sys.stderr.buffer.write(data)
    sys.stderr.flush()


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def check_writable(path: str | None) -> None:
    """Fail before running anything when the JSON report could not be written."""
    if path is None or path == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(path, "it is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise OutputPathError(path, f"the directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise OutputPathError(path, "permission denied")


def emit_report(report: Report, out: Output) -> None:
    from fastload_cli.reporters import json_report, terminal

    if out.json_path is not None:
        document = json.dumps(json_report.render(report), indent=2, allow_nan=False) + "\n"
        if out.json_to_stdout:
            sys.stdout.write(document)
            sys.stdout.flush()
        else:
            Path(out.json_path).write_text(document)
            note(out, f"JSON report written to {out.json_path}")
    if not out.json_to_stdout:
        Console(highlight=False).print(terminal.render(report))


def note(out: Output, message: str) -> None:
    if not out.quiet:
        stderr.print(message, markup=False, soft_wrap=True)


# --------------------------------------------------------------------------------------------
# Errors and signals
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def error_boundary(out: Output) -> Iterator[None]:
    """A FastloadError becomes one Error line and one Hint line on stderr and exit code 1."""
    try:
        yield
    except FastloadError as exc:
        if isinstance(exc, ScriptFailedError) and exc.output_tail.strip():
            stderr.print("[dim]--- the script's last output ---[/dim]")
            stderr.print(_tail_lines(exc.output_tail), markup=False, highlight=False)
            stderr.print("[dim]---[/dim]")
        if out.debug:
            stderr.print_exception()
        stderr.print(Text.assemble(("Error:", "bold red"), f" {exc.message}"), soft_wrap=True)
        if exc.hint:
            stderr.print(Text.assemble(("Hint:", "bold"), f" {exc.hint}"), soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None


def _tail_lines(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[dict[str, int]]:
    """SIGTERM ends a command the way Ctrl-C does (clean stop, partial report), exit 143."""
    seen: dict[str, int] = {}

    def handler(signum: int, frame: FrameType | None) -> NoReturn:
        seen["signal"] = signum
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="fastload")
