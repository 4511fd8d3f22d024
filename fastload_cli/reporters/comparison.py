"""``Comparison`` -> the before/after table on the terminal, and its JSON document."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from fastload_cli.formatting import DASH, num, pct, percent, size
from fastload_cli.records import Change, Comparison, Figures
from fastload_cli.reporters.json_report import to_json
from fastload_cli.reporters.shown import shown

SCHEMA = "fastload.compare/1"
POINTS = "data wait"  # the one figure whose change is in points of the step, not relative
# Each figure's row label (with its unit, so the numbers stay short) and how its values are shown.
FORMAT: dict[str, tuple[str, Callable[[float | None], str]]] = {
    "throughput": ("samples/s", num),
    "data wait": ("data wait", pct),
    "step time": ("step ms p50", num),
    "CPU": ("CPU", percent),
    "memory": ("memory", size),
}


def render(comparison: Comparison) -> RenderableType:
    comparison = shown(comparison)  # two reports read from files: their strings shown as text
    before, after = comparison.before, comparison.after
    lines: list[RenderableType] = [
        Text.assemble(("fastload compare ", "bold"), f"{before.source} -> {after.source}"),
        _verdict_line("before", before),
        _verdict_line("after", after),
    ]
    if not comparison.same_script:
        lines.append(Text(f"Different scripts: {before.script} and {after.script}.", style="bold yellow"))
    lines.append(_table(comparison))
    unmatched = [m.mode for m in comparison.modes if not m.changes]
    if unmatched:
        lines.append(Text(f"Not compared (not measured in both): {', '.join(unmatched)}.", style="dim"))
    lines.append(
        Text(
            "noise: the two runs' throughput spreads added; a change within it is not told apart from noise. "
            "?: no noise is measured for this figure.",
            style="dim",
        )
    )
    return Group(*lines)


def _verdict_line(which: str, figures: Figures) -> Text:
    ceiling = f", ceiling {figures.ceiling:.2f}x" if figures.ceiling is not None else ""
    return Text.assemble(
        (f"{which:<7}", "bold"), f"{figures.label} ({figures.bottleneck}{ceiling}) · {figures.command}"
    )


def _table(comparison: Comparison) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name, justify in (("mode", "left"), ("", "left"), ("before", "right"), ("after", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("change", justify="right", no_wrap=True)
    table.add_column("noise", justify="right", no_wrap=True)
    table.add_column("")  # the judgement wraps on a narrow terminal, the numbers do not
    for mode in comparison.modes:
        for index, change in enumerate(mode.changes):
            label, show = FORMAT[change.figure]
            table.add_row(
                mode.mode if index == 0 else "",
                label,
                show(change.before),
                show(change.after),
                amount(change, change.change, signed=True),
                amount(change, change.noise, signed=False, plus_minus=True, unit=False),
                judgement(change),
            )
        if mode.changes:
            table.add_section()
    return table


def amount(change: Change, value: float | None, *, signed: bool, plus_minus: bool = False, unit: bool = True) -> str:
    """A change or a noise in its unit: ``+12.3%``, ``-4.0 pts``, ``±3.1`` (in the change's unit)."""
    if value is None:
        return DASH
    suffix = (" pts" if change.figure == POINTS else "%") if unit else ""
    sign = "±" if plus_minus else ("+" if signed and value >= 0 else "")
    return f"{sign}{100 * value:.1f}{suffix}"


def judgement(change: Change) -> Text:
    """better / worse beyond the noise; "within noise" inside it; a "?" where no noise was measured."""
    worse = change.worse
    if worse is None or abs(worse) < 0.0005:
        return Text("")
    word = "worse" if worse > 0 else "better"
    if change.beyond_noise is False:
        return Text("within noise", style="dim")
    if change.beyond_noise is None:
        return Text(f"{word}?", style="yellow" if worse > 0 else "")
    return Text(word, style="bold red" if worse > 0 else "bold green")


def document(comparison: Comparison) -> str:
    body: dict[str, Any] = {
        "schema": SCHEMA,
        "before": _side(comparison.before),
        "after": _side(comparison.after),
        "same_script": comparison.same_script,
        "modes": [
            {
                "mode": m.mode,
                "before": to_json(m.before),
                "after": to_json(m.after),
                "changes": [{**to_json(c), "beyond_noise": c.beyond_noise} for c in m.changes],
            }
            for m in comparison.modes
        ],
    }
    return json.dumps(body, indent=2, allow_nan=False) + "\n"


def _side(figures: Figures) -> dict[str, Any]:
    side = to_json(figures)
    del side["modes"]  # per mode, beside the other side's
    return side
