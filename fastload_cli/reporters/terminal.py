"""``Report`` -> a rich renderable: verdict, modes table, evidence, recommendations, caveats."""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable

from rich import box
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from fastload_cli.formatting import (
    DASH,
    byte_rate,
    dims,
    ms,
    ms_fine,
    ms_pair,
    num,
    pct,
    percent,
    secs,
    size,
    whole,
)
from fastload_cli.records import (
    INTERLEAVED,
    BatchInfo,
    Bottleneck,
    Breakdown,
    FixResult,
    InputSplit,
    Mode,
    ModeSpec,
    Pathology,
    Profile,
    Recommendation,
    Report,
    RunStatus,
    RunSummary,
    Substitution,
    Verdict,
)
from fastload_cli.reporters.shown import shown
from fastload_cli.reporters.sweep_table import sweep_lines
from fastload_cli.reporters.time_spent import time_lines

VERDICT_STYLE = {
    Bottleneck.CPU: "bold yellow",
    Bottleneck.IO: "bold magenta",
    Bottleneck.COMPUTE: "bold green",
    Bottleneck.TRANSFER: "bold cyan",
    Bottleneck.HOST: "bold cyan",
    Bottleneck.INCONCLUSIVE: "bold",
}
MAX_SUBSTITUTIONS = 12
BREAKDOWN_WIDTH = 30  # characters of a breakdown bar at a 100% share


Section = Callable[[Report], list[RenderableType]]


def render(report: Report, *, verbose: bool = False) -> RenderableType:
    """The report as the terminal shows it; ``verbose``: where the command's time went, too."""
    report = shown(dataclasses.replace(report, timelines=()))  # strings from elsewhere, shown as text
    parts: list[RenderableType] = [_verdict(report.verdict, report)]
    for section in SECTIONS.values():
        parts.extend(section(report))
    if verbose:
        parts.extend(time_lines(report.time_spent))
    return Group(*parts)


MODES_PER_TABLE = 4
OWN_SECTIONS = (Mode.WORKERS, Mode.FIX)  # runs the sweep's and the fixes' sections show
REAL = ModeSpec(mode=Mode.REAL)


def _modes(report: Report) -> list[RenderableType]:
    modes = tuple(r for r in report.runs if r.spec.mode not in OWN_SECTIONS)
    shown: list[RenderableType] = []
    if modes and (report.sweep is None or len(modes) > 1):
        for start in range(0, len(modes), MODES_PER_TABLE):  # a few modes per table: 100 columns hold four
            shown += [Text("")] if start else []
            shown.append(_runs_table(modes[start : start + MODES_PER_TABLE]))
    jobs = [r for r in report.runs if r.ranks]
    slowest = report.verdict.slowest_rank  # as the real run names it
    tables = [part for r in jobs for part in ranks_table(r, slowest if r.spec == REAL else None)]
    return shown + tables + ([Padding(Text(RANKS_LEGEND, style="dim"), (0, 0, 0, 1))] if jobs else [])


RANKS_LEGEND = (
    "wait: for data · step: p50 · busy: the loop's own work per step (p50) · blocked: its share of the step "
    "outside the data wait, waiting for the other ranks · loaders: their share of time on CPU"
)


def ranks_table(run: RunSummary, slowest: int | None) -> list[RenderableType]:
    """A data-parallel job's run, rank by rank, its step split into the loop's own work and the
    wait for the other ranks; the straggler marked."""
    table = Table(
        expand=False, show_edge=False, pad_edge=False, collapse_padding=True, header_style="bold", box=box.SIMPLE_HEAD
    )
    nodes = any(r.rank != r.local_rank for r in run.ranks)  # the local rank tells nodes apart
    for name in ("rank", *(("local",) if nodes else ()), "samples/s", "wait", "step", "busy", "blocked", "loaders"):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("batches", justify="right", no_wrap=True)
    table.add_column("")
    for r in run.ranks:
        table.add_row(
            whole(r.rank),
            *((whole(r.local_rank),) if nodes else ()),
            num(r.throughput_samples_per_s),
            pct(r.data_wait_fraction),
            ms(r.step_ms_p50),
            ms(r.step_busy_ms_p50),
            pct(r.step_blocked_fraction),
            pct(r.loader_busy_fraction),
            str(r.batches),
            Text("slowest", style="bold red") if r.rank == slowest and slowest is not None else "",
        )
    total = num(run.throughput_samples_per_s, " samples/s")
    heading = f" {run.mode}, rank by rank (the job: {total}, summed over ranks)"
    return [Text(""), Text(heading, style="bold"), table]


def _reading(report: Report) -> list[RenderableType]:
    return [Text(""), Padding(Text(report.reading), (0, 0, 0, 1))] if report.reading else []


def _sweep_section(report: Report) -> list[RenderableType]:
    return sweep_lines(report.sweep, report.runs) if report.sweep is not None else []


def _fixes_section(report: Report) -> list[RenderableType]:
    return _section("Fixes tried", [_fix(f) for f in report.fixes])


def _split_section(report: Report) -> list[RenderableType]:
    return _split(report.split) if report.split is not None else []


def _breakdown_section(report: Report) -> list[RenderableType]:
    return _breakdown(report.breakdown) if report.breakdown is not None else []


def _profile_section(report: Report) -> list[RenderableType]:
    return _profile(report.profile) if report.profile is not None and report.profile.top else []


def _batch_section(report: Report) -> list[RenderableType]:
    return _batch(report.batch) if report.batch is not None else []


def _pathologies_section(report: Report) -> list[RenderableType]:
    listed = {r.id: i for i, r in enumerate(report.recommendations, 1)}
    return _section("Pathologies", [_pathology(p, listed.get(p.recommendation or "")) for p in report.pathologies])


def _pathology(p: Pathology, listed: int | None = None) -> RenderableType:
    """A pathology's finding and what to change; where a recommendation below applies it (and says
    what its run measured), the number of that recommendation in place of the advice."""
    style = "bold red" if p.kind.correctness else "bold yellow"
    head = Text.assemble((p.title, style), (f"  [{p.kind.value}]", "dim"))
    advice = p.advice if listed is None else f"What to change: recommendation {listed}."
    return Group(head, Padding(Text(f"{p.finding}\n{advice}"), (0, 0, 0, 3)))


def _evidence(report: Report) -> list[RenderableType]:
    return _section("Evidence", [Text(line) for line in report.verdict.evidence])


def _recommendations(report: Report) -> list[RenderableType]:
    return _section("Recommendations", [_recommendation(i, r) for i, r in enumerate(report.recommendations, 1)])


def _substitutions_section(report: Report) -> list[RenderableType]:
    return _section("Substitutions (no-aug)", _substitutions(report.substitutions))


def _caveats(report: Report) -> list[RenderableType]:
    return _section("Caveats", [Text(line, style="dim") for line in report.verdict.caveats])


# The report's sections below the verdict, in the order they are shown; each renders nothing when
# the report has nothing for it.
SECTIONS: dict[str, Section] = {
    "pathologies": _pathologies_section,
    "modes": _modes,
    "reading": _reading,
    "sweep": _sweep_section,
    "fixes": _fixes_section,
    "split": _split_section,
    "breakdown": _breakdown_section,
    "profile": _profile_section,
    "batch": _batch_section,
    "evidence": _evidence,
    "recommendations": _recommendations,
    "substitutions": _substitutions_section,
    "caveats": _caveats,
}


# --------------------------------------------------------------------------------------------
# Pieces
# --------------------------------------------------------------------------------------------


def _verdict(v: Verdict, report: Report) -> Panel:
    title = Text.assemble(("Verdict: ", "bold"), (v.label, VERDICT_STYLE[v.bottleneck]))
    lines = [title]
    facts = [f"confidence {v.confidence:.0%}"]
    if v.speedup_ceiling is not None:
        facts.append(f"speedup ceiling {v.speedup_ceiling:.2f}x (synthetic / real throughput)")
    lines.append(Text(" · ".join(facts), style="dim"))
    if report.interrupted:
        lines.append(Text("Interrupted: this report covers what was measured before the stop.", style="bold red"))
    heading = f"fastload {report.command.value} {report.script}"
    return Panel(Group(*lines), title=Text(heading), title_align="left", expand=True)  # a str title is markup


def _runs_table(runs: tuple[RunSummary, ...]) -> Table:
    """One column per mode, one row per measurement: stays narrow however many numbers there are."""
    table = Table(expand=False, show_edge=False, pad_edge=False, header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("", style="bold", no_wrap=True)
    for r in runs:
        table.add_column(r.mode, justify="right", no_wrap=True)
    for label, cell in ROWS:
        table.add_row(label, *(cell(r) for r in runs))
    return table


def _status(r: RunSummary) -> Text:
    return Text(r.status.value, style="green" if r.status is RunStatus.OK else "bold red")


# Why a run ended, as the modes table says it: fastload's stops, and the script's own end.
STOPPED = {
    "settled": "estimate stable",
    "enough-batches": "--max-batches",
    "script-ended": "script ended",
    "script-raised": "script raised",
    "child-died": "killed",
    "timeout": "timeout",
    "interrupted": "Ctrl-C",
    "batch-lost": "batch lost",
}

ROWS: tuple[tuple[str, Callable[[RunSummary], RenderableType]], ...] = (
    ("status", _status),
    ("throughput", lambda r: num(r.throughput_samples_per_s, " samples/s")),
    ("data wait", lambda r: pct(r.data_wait_fraction)),
    ("step p50 / p90", lambda r: ms_pair(r.step_ms_p50, r.step_ms_p90)),
    ("step outside wait p50", lambda r: ms(r.compute_ms_p50)),
    ("first batch after iter()", lambda r: secs(r.startup_s)),
    ("workers", lambda r: whole(r.num_workers)),
    ("CPU main / workers", lambda r: f"{percent(r.main_cpu_percent)} / {percent(r.workers_cpu_percent)}"),
    ("loaders on CPU", lambda r: pct(r.loader_busy_fraction)),
    ("machine CPU busy", lambda r: pct(r.system_cpu_busy_fraction)),
    ("GPU busy", lambda r: percent(r.gpu_util_percent)),
    ("storage reads", lambda r: byte_rate(r.read_bytes_per_s)),
    ("batches measured", lambda r: str(r.batches)),
    ("stopped", lambda r: STOPPED.get(r.stop_reason or "", "—")),
)


def _breakdown(found: Breakdown) -> list[RenderableType]:
    """Per-sample milliseconds of each loading step, largest first, with its share as a bar."""
    title = "Where a sample's loading time goes"
    if found.unavailable or found.ms_per_sample is None:
        return [
            Text(""),
            Text(title, style="bold underline"),
            Text(f"  not measured: {found.unavailable}", style="dim"),
        ]
    table = Table.grid(padding=(0, 1))
    for justify in ("right", "right", "left", "left"):
        table.add_column(justify=justify, no_wrap=justify == "right")
    for step in found.steps:
        bar = "█" * round(BREAKDOWN_WIDTH * step.share)
        size = f" [{dims(step.input_kind, step.input_shape)}]" if step.input_shape and "Resize" in step.name else ""
        name = _short(step.name) + size
        table.add_row(ms_fine(step.ms_per_sample), f"{100 * step.share:.0f}%", Text(bar, style="yellow"), name)
    threads = "one torch thread, as in a DataLoader worker" if found.threads == 1 else f"{found.threads} torch threads"
    note = Text(
        f"{ms(found.ms_per_sample)} per sample in all, timed on {found.items} samples in one process ({threads}).",
        style="dim",
    )
    return [Text(""), Text(title, style="bold underline"), Padding(table, (0, 0, 0, 2)), Padding(note, (0, 0, 0, 2))]


def _fix(f: FixResult) -> RenderableType:
    if not f.applies:
        head = Text.assemble((f.name, "bold"), ("  not applied: ", "dim"), f.reason)
    elif f.speedup is None:
        head = Text.assemble((f.name, "bold"), ("  not measured: ", "dim"), f.reason)
    else:
        memory = (
            f", {size(abs(f.memory_bytes))} {'more' if f.memory_bytes > 0 else 'less'} memory" if f.memory_bytes else ""
        )
        head = Text.assemble((f.name, "bold"), f"  {f.reason}{memory}")
    lines: list[RenderableType] = [head]
    if f.batches is not None and f.same_batches is not None:  # nothing compared: nothing to say
        style = "bold red" if f.same_batches is False else "dim"
        lines.append(Padding(Text(f"Batches: {f.batches}.", style=style), (0, 0, 0, 3)))
    return Group(*lines, Padding(Text(f.code, style="dim"), (0, 0, 0, 3)))


def _split(found: InputSplit) -> list[RenderableType]:
    """Where the real pipeline's time per batch goes, each part from the run (or the split run's
    turns) that removed it; beside it, the same split of the workers' CPU time where measured."""
    parts = (
        ("storage + decode", "storage_decode_ms", "real - cached"),
        ("augmentation", "augmentation_ms", "real - no-aug"),
        ("the rest", "rest_ms", "cached-no-aug: collate, the handoff, the step"),
        ("  of which the step", "step_ms", "synthetic: the step with free inputs"),
        ("not accounted", "residual_ms", "real - the three parts (< 0: they overlap)"),
        ("real run", "real_ms", "1 / throughput"),
    )
    cpu = found.workers_cpu
    table = Table(box=box.SIMPLE, show_header=True, pad_edge=False)
    for name in ("part", "ms per batch", "share", *(["workers' CPU"] if cpu else []), "measured as"):
        table.add_column(name, justify="left" if name in ("part", "measured as") else "right")
    for name, field, how in parts:
        value = getattr(found, field)
        if value is not None:
            used = [ms(getattr(cpu, field))] if cpu else []
            table.add_row(
                name, ms(value), pct(value / found.real_ms), *used, how, style="bold" if name == "real run" else ""
            )
    lines: list[RenderableType] = [Text(""), Text("Where a batch's time goes", style="bold underline"), table]
    if found.method == INTERLEAVED:
        if found.spread is not None:  # none where a pipeline took one turn (``split.interleaved_split``)
            turns = f"{found.turns} turns each, turn-to-turn spread ±{100 * found.spread:.0f}%"
        else:
            turns = "one turn each, so how much turns differ is not known"
        how = (
            "Measured in one run of the script: the pipelines took turns of a few batches each "
            f"({turns}); the synthetic step from its own run."
        )
        if cpu is not None:
            how += " The workers' CPU time per batch, split the same way: parts that overlap there overlap in the work."
        lines.append(Padding(Text(how, style="dim"), (0, 0, 0, 2)))
    return lines


def _profile(profile: Profile) -> list[RenderableType]:
    """py-spy's top functions in the loading processes, by share of samples."""
    table = Table.grid(padding=(0, 1))
    table.add_column(justify="right", no_wrap=True)
    table.add_column()
    for entry in profile.top:
        table.add_row(f"{100 * entry.share:.0f}%", _short(entry.function, 90))
    who = "the DataLoader workers" if profile.role == "workers" else "the main process (it loads the data)"
    title = f"Where {who} spent their time (py-spy, {profile.samples} samples)"
    return [Text(""), Text(title, style="bold underline"), Padding(table, (0, 0, 0, 2))]


def _batch(batch: BatchInfo) -> list[RenderableType]:
    leaves = ", ".join(f"{leaf.path or 'batch'} {leaf.dtype} {list(leaf.shape)}" for leaf in batch.leaves[:4])
    if len(batch.leaves) > 4:
        leaves += f", ... ({len(batch.leaves)} tensors)"
    per_sample = f", {size(int(batch.bytes_per_sample))} per sample" if batch.bytes_per_sample else ""
    pinned = {True: "pinned", False: "not pinned", None: "pinning unknown"}[batch.pinned]
    text = f"{batch.python_type}: {leaves}; {size(batch.bytes_per_batch)} per batch{per_sample}; {pinned}."
    return [Text(""), Text("Batch", style="bold underline"), Padding(Text(text), (0, 0, 0, 2))]


def _short(text: str, limit: int = 70) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def gain(r: Recommendation) -> str:
    """A recommendation's expected gain, as every format words it: ``1.80x`` where runs measured
    it (what survives their noise), ``up to 1.80x`` where it is estimated (bounded by the ceiling)."""
    if r.expected_speedup is None:
        return DASH
    return f"{r.expected_speedup:.2f}x" if r.measured else f"up to {r.expected_speedup:.2f}x"


def _recommendation(index: int, r: Recommendation) -> RenderableType:
    basis = "measured" if r.measured else "estimated"
    head = Text.assemble((f"{index}. {r.title}", "bold"), (f"  [{gain(r)}, {basis}]", "dim"))
    return Group(head, Padding(Text(r.detail), (0, 0, 0, 3)))


def _substitutions(subs: tuple[Substitution, ...]) -> list[RenderableType]:
    lines: list[RenderableType] = []
    for s in subs[:MAX_SUBSTITUTIONS]:
        guess = " (guessed from its name)" if s.guessed else ""
        replacement = f"undone: {s.reason}" if s.undone else s.replacement
        lines.append(Text(f"{s.location}: {s.original} -> {replacement}{guess}"))
    if len(subs) > MAX_SUBSTITUTIONS:
        lines.append(Text(f"... and {len(subs) - MAX_SUBSTITUTIONS} more (see --json)", style="dim"))
    return lines


def _section(title: str, items: list[RenderableType]) -> list[RenderableType]:
    if not items:
        return []
    bullets = [Padding(item, (0, 0, 0, 2)) for item in items]
    return [Text(""), Text(title, style="bold underline"), *bullets]


# Width of the plain-text report (``--output text=PATH``): wide enough for the modes table.
TEXT_WIDTH = 100


def plain_text(report: Report) -> str:
    """The terminal report as plain text: fixed width, no colour, for a file or a CI log."""
    console = Console(
        file=io.StringIO(), width=TEXT_WIDTH, color_system=None, force_terminal=False, record=True, markup=False
    )
    console.print(render(report))
    return console.export_text()
