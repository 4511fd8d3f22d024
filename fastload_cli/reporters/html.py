"""``Report`` -> one self-contained HTML page: the verdict and its evidence, the modes side by side,
the recommendations, the sweep as a chart, the breakdown as bars, and each mode's timeline.

The page is a Jinja2 template; the charts are Plotly figures, with plotly.js inlined once, so the
page opens without network access (a CI artifact). Both come with ``pip install 'fastload[html]'``
and are imported only when a page is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastload_cli.formatting import pct
from fastload_cli.records import Recommendation, Report, SweepResult, Timeline
from fastload_cli.reporters import series, terminal

REQUIRES = ("jinja2", "plotly")
INSTALL = "pip install 'fastload[html]'"
TEMPLATE = "report.html.j2"
COLOURS = {series.MEASURED: "#d62728", series.WARMUP: "#ff9896", series.STEP: "#1f77b4", "other": "#c7c7c7"}


@dataclass(frozen=True, slots=True)
class Chart:
    id: str
    title: str
    html: str  # the figure's div and script (plotly.js is on the page once)


def document(report: Report) -> str:
    import jinja2
    import plotly.offline

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("fastload_cli.reporters", "templates"),
        autoescape=jinja2.select_autoescape(default=True),
        undefined=jinja2.StrictUndefined,
    )
    return environment.get_template(TEMPLATE).render(
        report=report,
        title=f"fastload {report.command.value} {report.script}",
        modes=_modes(report),
        recommendations=[_recommendation(r) for r in report.recommendations],
        sweep=_sweep_chart(report.sweep) if report.sweep is not None and report.sweep.points else None,
        breakdown=_breakdown_chart(report),
        timelines=[_timeline_chart(i, t) for i, t in enumerate(report.timelines)],
        plotly_js=plotly.offline.get_plotlyjs(),
        pct=pct,
    )


def _modes(report: Report) -> dict[str, Any]:
    """The terminal report's table of modes: the same rows, as text."""
    return {
        "columns": [r.mode + (f" {r.variant}" if r.variant else "") for r in report.runs],
        "rows": [(label, [str(cell(r)) for r in report.runs]) for label, cell in terminal.ROWS],
    }


def _recommendation(r: Recommendation) -> dict[str, Any]:
    return {"title": r.title, "detail": r.detail, "gain": terminal.gain(r), "measured": r.measured}


def _html(figure: Any, div_id: str) -> str:
    import plotly.io

    figure.update_layout(margin={"l": 60, "r": 20, "t": 30, "b": 40}, template="plotly_white")
    return str(
        plotly.io.to_html(figure, full_html=False, include_plotlyjs=False, div_id=div_id, config={"displaylogo": False})
    )


def _sweep_chart(sweep: SweepResult) -> Chart:
    import plotly.graph_objects as go

    points = [p for p in sweep.points if p.throughput_samples_per_s is not None and p.variant is None]
    figure = go.Figure(
        go.Scatter(
            x=[p.workers for p in points],
            y=[p.throughput_samples_per_s for p in points],
            error_y={"type": "data", "array": [(p.spread or 0) * (p.throughput_samples_per_s or 0) for p in points]},
            mode="lines+markers",
            name="measured",
            hovertemplate="%{x} workers: %{y:.1f} samples/s<extra></extra>",
        )
    )
    for workers, label in ((sweep.current_workers, "yours"), (sweep.recommended_workers, "recommended")):
        if workers is not None:
            figure.add_vline(x=workers, line_dash="dot", annotation_text=label)
    figure.update_layout(xaxis_title="num_workers", yaxis_title="samples/s", height=320)
    return Chart("sweep", "num_workers sweep: measured throughput", _html(figure, "chart-sweep"))


def _breakdown_chart(report: Report) -> Chart | None:
    import plotly.graph_objects as go

    found = report.breakdown
    if found is None or not found.steps:
        return None
    steps = list(reversed(found.steps))  # largest on top
    figure = go.Figure(
        go.Bar(
            x=[s.ms_per_sample for s in steps],
            y=[f"{s.name} ({s.kind})" for s in steps],
            orientation="h",
            text=[pct(s.share) for s in steps],
            hovertemplate="%{y}: %{x:.2f} ms per sample<extra></extra>",
        )
    )
    figure.update_layout(xaxis_title="ms per sample", height=80 + 28 * len(steps))
    return Chart(
        "breakdown",
        f"Where a sample's loading time goes ({found.items} samples timed)",
        _html(figure, "chart-breakdown"),
    )


def _timeline_chart(index: int, timeline: Timeline) -> Chart:
    """Waits and steps per batch on top; the CPU of the main process and each worker under it."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.35, 0.65], vertical_spacing=0.06)
    for name, (xs, ys) in _segments(timeline).items():
        colour = COLOURS.get(name, COLOURS["other"])
        figure.add_trace(
            go.Scatter(x=xs, y=ys, mode="lines", name=name, line={"width": 14, "color": colour}, hoverinfo="x+name"),
            row=1,
            col=1,
        )
    cpu: dict[str, tuple[list[float], list[float]]] = {}
    for point in series.process_cpu(timeline):
        times, values = cpu.setdefault(point.series, ([], []))
        times.append(_seconds(timeline, point.t_ns))
        values.append(point.value)
    for name, (times, values) in cpu.items():
        figure.add_trace(go.Scatter(x=times, y=values, mode="lines", name=f"CPU % {name}"), row=2, col=1)
    figure.update_yaxes(showticklabels=True, row=1, col=1)
    figure.update_yaxes(title_text="CPU % of a core", row=2, col=1)
    figure.update_xaxes(title_text="seconds since the run started", row=2, col=1)
    figure.update_layout(height=420, legend={"orientation": "h", "y": -0.25})
    label = timeline.mode + (f" {timeline.variant}" if timeline.variant else "")
    return Chart(f"timeline-{index}", f"Timeline: {label}", _html(figure, f"chart-timeline-{index}"))


def _seconds(timeline: Timeline, t_ns: int) -> float:
    return (t_ns - timeline.started_ns) / 1e9


def _segments(timeline: Timeline) -> dict[str, tuple[list[float | None], list[str | None]]]:
    """Each wait, and each step between two waits of an epoch, as a line segment on its row."""
    found: dict[str, tuple[list[float | None], list[str | None]]] = {}
    for part in series.loop(timeline):
        row = "step" if part.name == series.STEP else "data wait"
        xs, ys = found.setdefault(part.name, ([], []))
        xs.extend([_seconds(timeline, part.start_ns), _seconds(timeline, part.end_ns), None])
        ys.extend([row, row, None])
    return found
