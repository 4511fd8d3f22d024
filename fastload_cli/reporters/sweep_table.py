"""The num_workers sweep as the terminal shows it: a row per setting, a bar chart, what it found."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from fastload_cli.formatting import DASH, ms, num, pct, percent, secs, size, whole
from fastload_cli.records import WHOLE_EPOCHS, RunSummary, SweepPoint, SweepResult

CHART_WIDTH = 40  # characters of the longest throughput bar in a sweep
AFTER_FIRST_EPOCH = (
    "Every setting was measured after the script's first epoch, like those measured over whole epochs: "
    "the first epoch's workers can run slower than later epochs'."
)


def sweep_lines(result: SweepResult, runs: tuple[RunSummary, ...]) -> list[RenderableType]:
    """One row per setting in two tables, what it gives and what it costs (each fits a terminal's
    80 columns), then a bar chart of throughput against workers."""
    predicted = dict(result.predicted)
    gives = _table("samples/s", *(["predicted"] if predicted else []), "vs own", "data wait")
    costs = _table("CPU main/workers", "RSS", "start-up", "step p90")
    for point in result.points:
        run = next((r for r in reversed(runs) if r.mode == point.mode and r.variant == point.variant), None)
        rate = point.throughput_samples_per_s
        # against the script's own setting measured alike: over whole epochs, or in a steady window
        like = WHOLE_EPOCHS if point.variant == WHOLE_EPOCHS else None
        own = next((p for p in result.points if p.workers == result.current_workers and p.variant == like), None)
        own_rate = own.throughput_samples_per_s if own is not None else None
        spread = f" ±{100 * point.spread:.0f}%" if point.spread is not None and rate else ""
        guess = [num(predicted.get(point.workers))] if predicted else []
        label = _point_label(point, result)
        vs_own = f"{rate / own_rate:.2f}x" if rate and own_rate else DASH
        gives.add_row(label, num(rate) + spread, *guess, vs_own, pct(point.data_wait_fraction))
        cpu = DASH if run is None else f"{percent(run.main_cpu_percent)}/{percent(run.workers_cpu_percent)}"
        step = DASH if run is None else ms(run.step_ms_p90)
        costs.add_row(label, cpu, size(point.rss_bytes), secs(point.startup_s), step)
    table = Group(gives, Text(""), costs)
    lines: list[RenderableType] = [table, _chart(result.points)]
    lines.append(Text(result.returns))
    if result.predicted_best is not None:
        lines.append(Text(_prediction(result), style="dim"))
    if result.diminishing_at is not None and result.stopped:
        lines.append(Text(f"The search stopped climbing: {result.stopped}.", style="dim"))
    if result.points and all(p.after_first_epoch for p in result.points):
        lines.append(Text(AFTER_FIRST_EPOCH, style="dim"))
    lines.append(Text(result.conclusion, style="bold"))
    heading = f"num_workers sweep (the script's own: {whole(result.current_workers)}; noise ±{100 * result.noise:.0f}%)"
    return [Text(""), Text(heading, style="bold underline"), *[Padding(line, (0, 0, 0, 2)) for line in lines]]


def _table(*columns: str) -> Table:
    """A table of the settings, one row each, ``columns`` after their label."""
    table = Table(
        expand=False, show_edge=False, pad_edge=False, header_style="bold", box=box.SIMPLE_HEAD, collapse_padding=True
    )
    table.add_column("workers", no_wrap=True)
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    return table


def _prediction(result: SweepResult) -> str:
    """Where the prediction said returns end, and how far off it was where it was checked."""
    off = result.prediction_error
    checked = f"; off by {100 * off:.0f}% (median) at the settings measured to verify it" if off is not None else ""
    return f"Predicted from the script's own run: returns end at {result.predicted_best} workers{checked}."


def _chart(points: tuple[SweepPoint, ...]) -> Table:
    """Throughput against workers, one bar per setting."""
    chart = Table.grid(padding=(0, 1))
    chart.add_column(justify="right", no_wrap=True)
    chart.add_column(no_wrap=True)
    top = max((p.throughput_samples_per_s or 0.0 for p in points), default=0.0)
    for point in points:
        rate = point.throughput_samples_per_s
        bar = "█" * max(1, round(CHART_WIDTH * rate / top)) if rate and top else ""
        label = str(point.workers) + (f" {point.variant}" if point.variant else "")
        chart.add_row(label, Text.assemble((bar, "cyan"), f" {num(rate, '/s')}" if rate else " failed"))
    return chart


def _point_label(point: SweepPoint, result: SweepResult) -> Text:
    label = Text(str(point.workers) + (f" {point.variant}" if point.variant else ""))
    if point.workers == result.current_workers and point.variant is None:
        label.append(" own", style="dim")
    chosen = point.workers == result.recommended_workers and point.variant == result.recommended_variant
    if chosen and result.significant:
        label.append(" ★", style="bold green")
    return label
