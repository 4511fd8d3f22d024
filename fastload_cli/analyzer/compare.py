"""Two reports side by side: per mode, what changed, and whether the change is beyond the noise.

``fastload compare`` renders a ``Comparison``; the ``--baseline`` gate judges one. Both read
reports as their JSON (``fastload.report/1``), the contract a report keeps between fastload runs,
read back as the ``Report`` it was written from (``Report.from_json``) and put in one shape with a
report of this run (``figures``).

The noise of a change is what the two runs' own steadiness allows: each run's
``throughput_spread`` (half the range of throughput across blocks of its window, relative), added
for the two runs. A data-wait change is judged in points of the step against the same noise: a
change of d points in the share of the step spent waiting moves throughput by about d.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastload_cli.records import (
    SCHEMA,
    Change,
    Comparison,
    Direction,
    Figures,
    ModeChange,
    ModeFigures,
    Report,
    RunStatus,
    RunSummary,
)


class UnreadableReport(ValueError):
    """A document that is not a fastload report this version can compare."""


# --------------------------------------------------------------------------------------------
# Reading reports
# --------------------------------------------------------------------------------------------


def figures(report: Report, source: str = "this run") -> Figures:
    """The figures of a report fastload just produced."""
    return Figures(
        source=source,
        schema=report.schema,
        command=report.command.value,
        script=report.script,
        script_args=report.script_args,
        bottleneck=report.verdict.bottleneck.value,
        label=report.verdict.label,
        confidence=report.verdict.confidence,
        ceiling=report.verdict.speedup_ceiling,
        modes=tuple(_mode_figures(run) for run in report.runs),
    )


def _mode_figures(run: RunSummary) -> ModeFigures:
    cpu = [v for v in (run.main_cpu_percent, run.workers_cpu_percent) if v is not None]
    return ModeFigures(
        mode=run.mode + (f" {run.variant}" if run.variant else ""),
        ok=run.status is RunStatus.OK and run.batches > 0,
        batches=run.batches,
        throughput=run.throughput_samples_per_s,
        spread=run.throughput_spread,
        data_wait=run.data_wait_fraction,
        step_ms=run.step_ms_p50,
        cpu_percent=sum(cpu) if cpu else None,
        rss_bytes=run.rss_bytes,
    )


def read_figures(document: Any, source: str) -> Figures:
    """The figures of a report's JSON document (``Report.from_json``); ``UnreadableReport`` says
    what is wrong with it."""
    if not isinstance(document, Mapping) or "schema" not in document:
        raise UnreadableReport(f"{source} is not a fastload report (no 'schema' field)")
    if document["schema"] != SCHEMA:
        raise UnreadableReport(f"{source} is a {document['schema']} document; this fastload reads {SCHEMA}")
    try:
        report = Report.from_json(document)
    except (KeyError, TypeError, ValueError) as exc:
        raise UnreadableReport(f"{source} is not a complete {SCHEMA} report ({type(exc).__name__}: {exc})") from None
    return figures(report, source)


# --------------------------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------------------------


def compare(before: Figures, after: Figures) -> Comparison:
    names = [m.mode for m in before.modes] + [m.mode for m in after.modes if before.mode(m.mode) is None]
    return Comparison(before=before, after=after, modes=tuple(_mode_change(before, after, n) for n in names))


def _mode_change(before: Figures, after: Figures, name: str) -> ModeChange:
    b, a = before.mode(name), after.mode(name)
    changes: tuple[Change, ...] = ()
    if b is not None and a is not None and b.ok and a.ok:
        noise = b.spread + a.spread if b.spread is not None and a.spread is not None else None
        changes = (
            _relative("throughput", b.throughput, a.throughput, noise, Direction.HIGHER),
            _points("data wait", b.data_wait, a.data_wait, noise),
            _relative("step time", b.step_ms, a.step_ms, noise, Direction.LOWER),
            _relative("CPU", b.cpu_percent, a.cpu_percent, None, Direction.LOWER),
            _relative("memory", _float(b.rss_bytes), _float(a.rss_bytes), None, Direction.LOWER),
        )
    return ModeChange(mode=name, before=b, after=a, changes=changes)


def _relative(figure: str, b: float | None, a: float | None, noise: float | None, direction: Direction) -> Change:
    change = a / b - 1 if a is not None and b is not None and b > 0 else None
    return Change(figure=figure, before=b, after=a, change=change, noise=noise, direction=direction)


def _points(figure: str, b: float | None, a: float | None, noise: float | None) -> Change:
    change = a - b if a is not None and b is not None else None
    return Change(figure=figure, before=b, after=a, change=change, noise=noise, direction=Direction.LOWER)


def _float(value: int | None) -> float | None:
    return float(value) if value is not None else None
