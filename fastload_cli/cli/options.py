"""The options the commands share, declared once, and the groups they come in: measuring, the
no-aug transforms, outputs, CI gates and chatter (``groups.grouped`` adds a group to a command).
torchrun's options are ``launcher.LaunchOptions``, a group too."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Annotated

import typer
from rich.markup import escape

from fastload_cli.cli.groups import group
from fastload_cli.cli.output import Output
from fastload_cli.config import DEFAULT_MAX_BATCHES, DEFAULT_MAX_REGRESSION, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
from fastload_cli.reporters import FORMATS

# --------------------------------------------------------------------------------------------
# Options shared by the commands
# --------------------------------------------------------------------------------------------

MaxBatches = Annotated[int, typer.Option("--max-batches", help="Batches measured per mode, after warm-up.", min=1)]
FixedBatches = Annotated[
    bool,
    typer.Option(
        "--fixed-batches",
        help="Measure exactly --max-batches batches per mode; by default a mode ends earlier once its throughput "
        "estimate is stable.",
    ),
]
InProcess = Annotated[
    bool,
    typer.Option(
        "--in-process",
        help="Measure the settings the search knows in advance in turn in one run of the script, new workers "
        "taking over mid-epoch: the script starts once for them. By default every setting is a fresh run.",
    ),
]
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
PatchPath = Annotated[
    str | None,
    typer.Option("--patch", help="Write the proven change here as a unified diff (apply it with patch -p1)."),
]
Apply = Annotated[
    bool,
    typer.Option(
        "--apply", help="Apply the proven change to your files, after a confirmation; originals kept as FILE.orig."
    ),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="--apply without asking.")]
Rounds = Annotated[
    int, typer.Option("--rounds", min=1, help="Rounds of plain runs, each the script as it is and every change.")
]
PlainEpochs = Annotated[int, typer.Option("--epochs", min=1, help="Epochs each plain run trains.")]
EpochBatches = Annotated[
    int, typer.Option("--epoch-batches", min=1, help="Each plain run's epochs end after this many batches.")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or notes on stderr.")]
Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks for fastload errors.")]
ShowOutput = Annotated[bool, typer.Option("--show-output", help="Stream the script's own output to stderr.")]
Verbose = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Say in the report where the command's time went (the JSON always does)."),
]
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
        "--modes",
        help=(
            "Comma-separated modes to run (real is always first): real, synthetic, synthetic-device "
            "(on CUDA), no-aug, cached, workers=N."
        ),
    ),
]
MaxWorkers = Annotated[
    int, typer.Option("--max-workers", help="Highest num_workers the sweep may try.", min=0, max=1024)
]
NoSweep = Annotated[
    bool, typer.Option("--no-sweep", help="Do not measure num_workers settings, even when loading is the limit.")
]
Script = Annotated[
    str | None,
    typer.Argument(
        help="The training script as you would pass it to python, a notebook (.ipynb), or after -- the command "
        "as you type it: python [-m module] ..., torchrun ..., accelerate launch ...",
        show_default=False,
    ),
]
Module = Annotated[
    str | None,
    typer.Option(
        "-m",
        "--module",
        help="Run a module as python -m does (its package's relative imports, a package's __main__); its "
        "arguments after --.",
        show_default=False,
    ),
]
ScriptArgs = Annotated[
    list[str] | None,
    typer.Argument(help="Arguments for the script, after --.", show_default=False, metavar="[-- SCRIPT_ARGS...]"),
]


TracePath = Annotated[
    str | None,
    typer.Option(
        "--trace",
        help="Write a timeline trace (Chrome trace-event JSON: ui.perfetto.dev, chrome://tracing) here.",
        metavar="PATH",
    ),
]
HtmlPath = Annotated[
    str | None,
    typer.Option(
        "--html",
        help=escape("Write a self-contained HTML report page here (needs: pip install 'fastload[html]')."),
        metavar="PATH",
    ),
]
Breakdown = Annotated[
    bool,
    typer.Option(
        "--breakdown",
        help=(
            "Time each transform, reading/decoding and collate per sample (always done when CPU-bound); and "
            "where no-aug and cached ran apart, split a batch's time in one run of their turns too."
        ),
    ),
]
PySpy = Annotated[
    bool,
    typer.Option("--py-spy", help="Sample the loading processes with py-spy during the real run (needs py-spy)."),
]

# CI gates: a failed gate exits 3 after every report is written
GATES = "CI gates (exit code 3 when one fails)"
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        help="Fail on these verdicts: input-bound (cpu, io, transfer, host), or names such as cpu,io.",
        metavar="VERDICT[,VERDICT]",
        rich_help_panel=GATES,
    ),
]
MaxDataWait = Annotated[
    str | None,
    typer.Option(
        "--max-data-wait",
        help="Fail when the real run waits for data more than this share of the step (0.2 or 20%).",
        metavar="FRACTION",
        rich_help_panel=GATES,
    ),
]
MinThroughput = Annotated[
    float | None,
    typer.Option(
        "--min-throughput",
        help="Fail when the real run trains fewer samples per second than this.",
        metavar="SAMPLES_PER_S",
        min=0,
        rich_help_panel=GATES,
    ),
]
Baseline = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="An earlier JSON report of the same script: fail on a regression of throughput or data wait.",
        metavar="PREVIOUS.json",
        rich_help_panel=GATES,
    ),
]
MaxRegression = Annotated[
    float,
    typer.Option(
        "--max-regression",
        help="With --baseline: the loss of throughput (%) or rise of data wait (points) allowed, "
        "beyond the runs' measured noise.",
        metavar="PERCENT",
        min=0,
        rich_help_panel=GATES,
    ),
]
FixOption = Annotated[
    list[str],
    typer.Option(
        "--fix",
        help="A fix to apply and measure, repeatable: persistent-workers, prefetch-factor=N, pin-memory, workers=N, "
        "thread-prefetch, cuda-prefetch, cache-decoded, in-order, worker-threads=N.",
        metavar="NAME[=VALUE]",
        show_default=False,
    ),
]


# --------------------------------------------------------------------------------------------
# The groups
# --------------------------------------------------------------------------------------------


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class Measure:
    """How each mode of the script is measured."""

    max_batches: MaxBatches = DEFAULT_MAX_BATCHES
    warmup: Warmup = DEFAULT_WARMUP
    fixed_batches: FixedBatches = False
    timeout: Timeout = DEFAULT_TIMEOUT_S


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What runs, where it is not a script: a module."""

    module: Module = None


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class Transforms:
    """What no-aug keeps or drops besides the random transforms it finds."""

    keep_transform: Keep = None
    drop_transform: Drop = None


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class Outputs:
    """Where the report goes besides the terminal: one field per format's own option, named as the
    format is in ``reporters.FORMATS``, and ``--output FORMAT=PATH`` for any format."""

    json: JsonPath = None
    trace: TracePath = None
    html: HtmlPath = None
    output: OutputTo = None

    def named(self) -> dict[str, str | None]:
        """Each format's own option as format name -> path (None: not asked for)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "output"}


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class GateOptions:
    """The CI gates: a failed one exits 3 after every report is written."""

    fail_on: FailOn = None
    max_data_wait: MaxDataWait = None
    min_throughput: MinThroughput = None
    baseline: Baseline = None
    max_regression: MaxRegression = DEFAULT_MAX_REGRESSION


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class Chatter:
    """What fastload says on stderr besides the report."""

    show_output: ShowOutput = False
    quiet: Quiet = False
    debug: Debug = False
    verbose: Verbose = False

    def output(self) -> Output:
        return Output(quiet=self.quiet, debug=self.debug, show_output=self.show_output, verbose=self.verbose)
