"""CI gates on the command line: checked before anything runs, judged once the reports are written.

A gate's bad value, an unreadable baseline or a baseline of another script is a usage error
before any run; a gate whose figure the report lacks is a usage error after it (exit 2); a gate
that fails exits 3 with one line per failed gate on stderr.
"""

from __future__ import annotations

import json
import math
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from fastload_cli.cli.output import EXIT_GATE, STDOUT, Output, note, stderr
from fastload_cli.errors import UsageError

if TYPE_CHECKING:
    from fastload_cli.analyzer.gates import Gates
    from fastload_cli.cli.options import GateOptions
    from fastload_cli.records import Figures, Report


def make_gates(script: str, given: GateOptions) -> Gates:
    """The gates given on the command line, checked before any run."""
    from fastload_cli.analyzer.gates import Gates, parse_fail_on, parse_fraction

    fail_on, max_data_wait, baseline = given.fail_on, given.max_data_wait, given.baseline

    try:
        verdicts = parse_fail_on(fail_on) if fail_on is not None else frozenset()
    except ValueError as exc:
        raise UsageError(f"--fail-on {fail_on}: {exc}") from None
    try:
        wait = parse_fraction(max_data_wait) if max_data_wait is not None else None
    except ValueError as exc:
        raise UsageError(f"--max-data-wait {max_data_wait}: {exc}") from None
    before = read_report(baseline, "--baseline") if baseline is not None else None
    if before is not None and before.script != script:
        raise UsageError(
            f"--baseline {baseline} is a report of {before.script}, not of {script}",
            "compare reports of the same script; fastload compare shows any two side by side",
        )
    return Gates(
        fail_on=verdicts,
        fail_on_text=fail_on or "",
        max_data_wait=wait,
        min_throughput=given.min_throughput,
        baseline=before,
        max_regression=given.max_regression,
    )


MAX_REPORT_BYTES = 64 * 2**20  # a report with every batch's timeline is a few MB; more is not one


def read_document(path: str, named: str) -> Any:
    """A JSON document from a file of at most ``MAX_REPORT_BYTES``, with no NaN or infinite
    number; a usage error that starts with ``named`` says what is wrong."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_REPORT_BYTES:
            raise UsageError(f"{named}: {size:,} bytes, more than a report's {MAX_REPORT_BYTES:,}")
        text = Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"{named}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{named}: not a JSON document ({exc})", "pass a report written with --json") from None
    try:
        return json.loads(text, parse_constant=_not_a_number, parse_float=_finite)
    except RecursionError:
        raise UsageError(f"{named}: nested too deeply to be a report", "pass a report written with --json") from None
    except ValueError as exc:  # malformed JSON, NaN or infinity, an integer of thousands of digits
        raise UsageError(f"{named}: not a JSON document ({exc})", "pass a report written with --json") from None


def _not_a_number(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def read_report_document(path: str, named: str) -> dict[str, Any]:
    """A ``fastload.report/1`` report from a file, checked field by field before anything reads it
    (``records.schema``); a usage error names the file and the field that is wrong."""
    from fastload_cli.records.schema import Malformed, check_report

    document = read_document(path, named)
    try:
        check_report(document)
    except Malformed as exc:
        raise UsageError(f"{named}: {exc}", "pass a report written with --json by this fastload") from None
    return typing.cast(dict[str, Any], document)


def read_report(path: str, option: str) -> Figures:
    """A JSON report from a file, as a comparison reads it; a usage error says what is wrong."""
    from fastload_cli.analyzer.compare import UnreadableReport, read_figures

    document = read_report_document(path, f"{option} {path}")
    try:
        return read_figures(document, path)
    except UnreadableReport as exc:
        raise UsageError(f"{option} {exc}", "pass a report written with --json by this fastload") from None


def judge(report: Report, out: Output) -> None:
    """Exit 3 when a gate failed (every report is written by now), 2 when one cannot be judged."""
    from fastload_cli.analyzer.gates import GateStatus, evaluate

    if not out.gates:
        return
    results = evaluate(report, out.gates)
    unmeasured = [r for r in results if r.status is GateStatus.UNMEASURED]
    if unmeasured:
        raise UsageError(
            f"{unmeasured[0].gate} cannot be judged: {unmeasured[0].message}",
            "a gate needs the figure it limits; check the report's runs and caveats",
        )
    written = [p for p in out.paths.values() if p != STDOUT]
    where = f" (report: {', '.join(written)})" if written else ""
    failed = [r for r in results if r.status is GateStatus.FAILED]
    for result in results:
        if result.status is GateStatus.PASSED:
            note(out, f"Gate passed: {result.message}.")
    for result in failed:
        stderr.print(Text.assemble(("Gate failed:", "bold red"), f" {result.message}{where}"), soft_wrap=True)
    if failed:
        raise typer.Exit(EXIT_GATE)
