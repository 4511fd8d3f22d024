"""Running a command: the runs with progress, the report written in every requested format, the
error boundary and the signals. The only place, with the commands, that prints or writes files.
"""

from __future__ import annotations

import contextlib
import os
import platform
import secrets
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from fastload_cli.cli.output import EXIT_INTERRUPTED, STDOUT, STOP_SIGNALS, Output, note, stderr
from fastload_cli.config import RunConfig
from fastload_cli.errors import FastloadError, OutputPathError, ScriptFailedError, UsageError
from fastload_cli.formatting import printable

if TYPE_CHECKING:
    from fastload_cli.plan import Outcome, Plan
    from fastload_cli.records import Command, Environment, ModeSpec, Report, RunResult
    from fastload_cli.reporters import Format


def outputs(named: dict[str, str | None], requested: list[str] | None) -> dict[str, str]:
    """The formats' own options (``--json``, ``--trace``, ``--html``: format name -> path or None)
    and each ``--output FORMAT=PATH``, as format name -> path."""
    from fastload_cli.reporters import FORMATS

    found = {name: path for name, path in named.items() if path is not None}
    for item in requested or ():
        name, sep, path = item.partition("=")
        if not sep or not path:
            raise UsageError(f"--output {item}: expected FORMAT=PATH", "for example --output text=report.txt")
        if name not in FORMATS:
            known = ", ".join(FORMATS)
            raise UsageError(f"--output {item}: unknown format '{name}'", f"formats: {known}")
        found[name] = path
    if list(found.values()).count(STDOUT) > 1:
        raise UsageError("only one report can go to stdout ('-')", "write the others to files")
    for name, path in found.items():
        check_writable(path)
        _check_installed(FORMATS[name])
    return found


def _check_installed(fmt: Format) -> None:
    """A format that needs an optional package fails before any run, not after the last."""
    import importlib.util

    from fastload_cli.errors import MissingDependencyError

    missing = [m for m in fmt.requires if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingDependencyError(f"the {fmt.title}", missing[0], fmt.install)


def check_writable(path: str) -> None:
    """Fail before running anything when a report could not be written."""
    if path == STDOUT:
        return
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(path, "it is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise OutputPathError(path, f"the directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise OutputPathError(path, "permission denied")


def run_command(command: Command, base: RunConfig, planned: Plan, out: Output) -> None:
    """Execute the command's runs, analyse, report, judge the gates; exits with 130/143 when interrupted."""
    _, report = run_measured(command, base, planned, out)
    if report is not None:
        from fastload_cli.cli.gating import judge

        judge(report, out)


def run_measured(
    command: Command, base: RunConfig, planned: Plan, out: Output, documents: bool = True
) -> tuple[Outcome, Report | None]:
    """The command's runs, analysed, and the report shown and written in every requested format
    (``documents`` False: written by the caller, unless interrupted); exits with 130/143 when
    interrupted."""
    from fastload_cli.runner.start import prestart

    prestart(base)  # its imports overlap fastload's own before the first run
    from fastload_cli.samplers.gpu import open_nvml

    nvml = open_nvml()
    try:
        started = time.monotonic()
        with terminate_as_interrupt() as terminated:
            outcome = _run_with_progress(base, planned, nvml, out)
        report = make_report(command, base, outcome, nvml, time.monotonic() - started)
    finally:
        if not isinstance(nvml, str):
            nvml.shutdown()
    if report is not None:
        emit_report(report, out, documents or outcome.interrupted)
    if outcome.interrupted:
        measured = " The partial report covers what was measured." if report else " Nothing was measured."
        note(out, "Interrupted." + measured)
        raise typer.Exit(STOP_SIGNALS.get(terminated.get("signal", 0), EXIT_INTERRUPTED))
    return outcome, report


def make_report(command: Command, base: RunConfig, outcome: Outcome, nvml: Any, total_s: float) -> Report | None:
    """The report, or None when an interrupted command measured no batch at all; ``total_s``: the
    command's time, from its first run's start."""
    from fastload_cli.plan.report import build_report

    if outcome.interrupted and not any(r.batches for r in outcome.runs):
        return None
    return build_report(command, base, outcome, _environment(outcome.runs, nvml), total_s)


def _environment(runs: Sequence[RunResult], nvml: Any) -> Environment:
    """The machine the runs ran on, as the report states it."""
    from fastload_cli.records import Environment, GpuDevice
    from fastload_cli.samplers.gpu import Nvml

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
        world_size=next((r.world_size for r in runs if r.world_size), None),
        nproc_per_node=next((len(r.ranks) for r in runs if r.ranks), None),
        process_group=next((any(x.env.process_group for x in r.ranks) for r in runs if r.ranks), None),
    )


def _run_with_progress(base: RunConfig, planned: Plan, nvml: Any, out: Output) -> Outcome:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from fastload_cli.runner.launch import Observer
    from fastload_cli.session import StepRunner, execute

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
        return execute(planned, StepRunner(base, nvml, observe, on_note))


def _stream_output(data: bytes) -> None:
    sys.stderr.buffer.write(data)
    sys.stderr.flush()


def emit_report(report: Report, out: Output, documents: bool = True) -> None:
    """Every requested format (unless ``documents`` is False), then the terminal report unless
    stdout holds a document."""
    from fastload_cli.reporters import terminal

    if documents:
        write_documents(report, out)
    if not out.to_stdout:
        Console(highlight=False, markup=False).print(terminal.render(report, verbose=out.verbose))


def write_documents(report: Report, out: Output) -> None:
    """The report in every requested format, each to its file (or stdout)."""
    from fastload_cli.reporters import FORMATS

    for name, path in out.paths.items():
        write_document(FORMATS[name].render(report), path, FORMATS[name].title, out)


def write_document(document: str, path: str, title: str, out: Output) -> None:
    """A whole document to its file, or to stdout for '-'."""
    if path == STDOUT:
        sys.stdout.write(document)
        sys.stdout.flush()
    else:
        write_atomically(Path(path), document)
        note(out, f"{title} written to {path}")


def write_atomically(path: Path, document: str) -> None:
    """``document`` to ``path`` whole or not at all: written beside it under a temporary name, then
    renamed over it, so a reader (a CI step, a dashboard) never sees half a report, and an
    interrupted write leaves the old file as it was."""
    temporary = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as to a plain write
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(document)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)  # a report written again keeps its mode
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def error_boundary(out: Output) -> Iterator[Output]:
    """A FastloadError becomes one Error line and one Hint line on stderr and exit code 1; the
    block gets ``out``."""
    try:
        yield out
    except FastloadError as exc:
        if isinstance(exc, ScriptFailedError) and exc.output_tail.strip():
            stderr.print(Text("--- the script's last output ---", style="dim"))
            # as the script printed it: a traceback's lines unbroken however long its paths
            stderr.print(printable(_tail_lines(exc.output_tail)), highlight=False, soft_wrap=True)
            stderr.print(Text("---", style="dim"))
        if out.debug:
            stderr.print_exception()
        stderr.print(Text.assemble(("Error:", "bold red"), f" {printable(exc.message)}"), soft_wrap=True)
        if exc.hint:
            stderr.print(Text.assemble(("Hint:", "bold"), f" {printable(exc.hint)}"), soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None


def _tail_lines(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[dict[str, int]]:
    """SIGTERM and SIGHUP (the terminal or the ssh session gone) end a command the way Ctrl-C
    does (a clean stop, the partial report): exit 143 and 129."""
    seen: dict[str, int] = {}

    def handler(signum: int, frame: FrameType | None) -> NoReturn:
        seen["signal"] = signum
        raise KeyboardInterrupt

    # under nohup (SIGHUP ignored) a closed terminal must not stop the run: it stays ignored
    wanted = [s for s in STOP_SIGNALS if s != signal.SIGHUP or signal.getsignal(s) is not signal.SIG_IGN]
    previous = {signum: signal.signal(signum, handler) for signum in wanted}
    try:
        yield seen
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
