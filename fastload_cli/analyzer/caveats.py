"""Caveats: what could not be measured, and what makes a number rough. Pure.

``caveats(runs, summaries)`` is the entry point. A caveat that several runs raise alike (the
sampler stretched by a large process tree, a few steady batches, other processes' load) is said
once, with the runs named and its figure as a range over them: ``_Note`` is one run's share of
such a line, and its ``say`` the sentence they make together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fastload_cli.analyzer import ranks
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.failures import LOST_BATCH_HINT, hint_for, substitution_hint, timeout_hint
from fastload_cli.analyzer.window import delivered
from fastload_cli.formatting import capitalised
from fastload_cli.records import Mode, RunResult, RunStatus, RunSummary, StopReason

__all__ = ["caveats", "disturbed", "replayed"]


@dataclass(frozen=True, slots=True)
class _Note:
    """One run's part in a caveat of one kind: ``say(the runs named, many, each run's figures)``
    makes the line for all the runs that raise it."""

    say: Callable[[str, bool, Sequence[tuple[float, ...]]], str]
    run: str
    figures: tuple[float, ...]


def caveats(runs: Sequence[RunResult], summaries: Sequence[RunSummary]) -> tuple[str, ...]:
    found: list[str] = []
    notes: list[_Note] = []
    for run, summary in zip(runs, summaries, strict=True):
        found.extend(_run_caveats(run, summary))
        notes.extend(_run_notes(run, summary))
    found.extend(_missing_modes(runs))
    found.extend(ranks.caveats(runs))
    found.extend(_sampler_caveats(runs))
    notes.extend(n for run in runs for n in _sampler_notes(run))
    found.extend(_gpu_caveats(runs, summaries))
    return tuple(dict.fromkeys([*found, *_said_once(notes)]))


def _said_once(notes: Sequence[_Note]) -> list[str]:
    """Each kind of note in one line, the runs that raise it named in the order they ran."""
    kinds = dict.fromkeys(n.say for n in notes)
    lines = []
    for say in kinds:
        mine = [n for n in notes if n.say is say]
        labels = list(dict.fromkeys(n.run for n in mine))
        lines.append(say(named(labels), len(labels) > 1, [n.figures for n in mine]))
    return lines


def named(labels: Sequence[str]) -> str:
    """``the real run``, ``the real and synthetic runs``, ``the real, synthetic and no-aug runs``."""
    if len(labels) == 1:
        return f"the {labels[0]} run"
    return f"the {', '.join(labels[:-1])} and {labels[-1]} runs"


def span(values: Sequence[float], fmt: str = "{:.0f}") -> str:
    """One figure, or the range of several: ``0.20``, ``0.09-0.15``."""
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}-{high}"


def _run_caveats(run: RunResult, s: RunSummary) -> list[str]:
    found = []
    if run.status is not RunStatus.OK:
        what = (s.error or run.status.value).strip().splitlines()[0]
        kept = f"; {s.batches} steady batches were measured before that" if s.batches else ""
        replaced = [x.transform for x in run.substitutions if x.applied]
        if run.status is RunStatus.TIMEOUT:
            hint: str | None = timeout_hint(run.stuck_at)
        elif run.stop_reason is StopReason.BATCH_LOST:
            hint = LOST_BATCH_HINT
        elif run.spec.mode is Mode.NO_AUG and replaced:
            hint = substitution_hint(replaced)
        else:
            hint = hint_for(s.error or "", run.output_tail, oom_kills=run.oom_kills)
        found.append(f"{s.mode} run {run.status.value}: {what}{kept}." + (f" Hint: {hint}." if hint else ""))
    undone = [x for x in run.substitutions if x.undone]
    if undone:
        names = ", ".join(dict.fromkeys(x.transform for x in undone))
        why = undone[0].reason
        found.append(
            f"{s.mode}: fastload's stand-ins for {names} were undone: {why}. The pipeline ran as written, so this "
            "run does not measure augmentation; `--keep-transform NAME` keeps one transform as it is."
        )
    if run.folded:
        found.append(
            f"{s.mode}: a long run; fastload kept {len(run.batches):,} of its {delivered(run):,} batches one by one, "
            "the first and the latest (its own memory bounded): throughput, data wait and CPU cover every batch, "
            "step times and the per-batch findings those kept."
        )
    if run.spec.mode is Mode.REAL and s.batches and s.loader_busy_fraction is None and s.num_workers:
        found.append(f"{s.mode}: the workers' CPU use could not be read, so CPU and IO cannot be told apart.")
    return found


def _run_notes(run: RunResult, s: RunSummary) -> list[_Note]:
    notes = []
    ended = run.status is RunStatus.OK and run.stop_reason is StopReason.SCRIPT_ENDED
    if ended and delivered(run) < run.requested_batches:
        notes.append(_Note(_ended, s.mode, (delivered(run), run.requested_batches)))
    if disturbed(s):
        assert s.foreign_cpu_fraction is not None
        notes.append(_Note(_disturbed, s.mode, (100 * s.foreign_cpu_fraction,)))
    if 0 < s.batches < th.MIN_STEADY_BATCHES:
        notes.append(_Note(_few, s.mode, (s.batches,)))
    if s.batches and s.steal_fraction is not None and s.steal_fraction >= th.STEAL_NOTABLE:
        notes.append(_Note(_stolen, s.mode, (100 * s.steal_fraction,)))
    return notes


def _ended(runs: str, many: bool, figures: Sequence[tuple[float, ...]]) -> str:
    got, asked = span([f[0] for f in figures]), span([f[1] for f in figures])
    return (
        f"The script finished after {got} batches in {runs} (fastload asked for {asked}); "
        f"{'their' if many else 'its'} numbers rest on fewer batches."
    )


def _disturbed(runs: str, many: bool, figures: Sequence[tuple[float, ...]]) -> str:
    return (
        f"Other processes used {span([f[0] for f in figures])}% of the machine's CPU during {runs}: "
        f"{'their' if many else 'its'} throughput is not a fair comparison; run fastload on a quieter machine."
    )


def _stolen(runs: str, many: bool, figures: Sequence[tuple[float, ...]]) -> str:
    return (
        f"This virtual machine's host held back {span([f[0] for f in figures])}% of its CPU time (steal) during "
        f"{runs}: {'their' if many else 'its'} cores were not whole cores, and CPU-bound figures vary with the "
        "host's other guests. fastload does not count it as other processes' load."
    )


def _few(runs: str, many: bool, figures: Sequence[tuple[float, ...]]) -> str:
    return f"{capitalised(runs)} measured only {span([f[0] for f in figures])} steady-state batches: figures are rough."


def disturbed(summary: RunSummary) -> bool:
    """Other processes took enough of the machine during the run to skew its throughput."""
    return summary.foreign_cpu_fraction is not None and summary.foreign_cpu_fraction >= th.FOREIGN_LOAD_NOTABLE


def replayed(run: RunResult) -> bool:
    """A synthetic run that actually replayed batches (an uncopyable batch stays real)."""
    return any(b.synthetic for b in run.batches)


def _missing_modes(runs: Sequence[RunResult]) -> list[str]:
    modes = {r.spec.mode for r in runs}
    found = []
    if Mode.SYNTHETIC not in modes:
        found.append("No synthetic run: the speedup ceiling is unknown, and expected gains with it.")
    for run in runs:
        if run.spec.mode is Mode.SYNTHETIC and run.batches and not replayed(run):
            why = "; ".join(s.original for s in run.substitutions) or "no batch was cached"
            found.append(f"The synthetic run replayed no batch ({why}): the speedup ceiling is unknown.")
    real = next((r for r in runs if r.spec.mode is Mode.REAL), None)
    if (
        Mode.NO_AUG not in modes
        and real is not None
        and real.loaders
        and not any(lo.augmentations for lo in real.loaders)
    ):
        found.append("No random augmentation was found in the datasets' transforms, so no no-aug run was made.")
    return found


def _sampler_caveats(runs: Sequence[RunResult]) -> list[str]:
    found = []
    for run in runs:
        if run.profile is not None and run.profile.unavailable:
            found.append(f"No py-spy profile of the loading processes: {run.profile.unavailable}.")
        if run.batches and not run.schedstat:
            found.append("Run-queue time is not readable here (/proc schedstat), so CPU contention is not counted.")
        if run.gpu_health is not None and run.gpu_samples:
            found.extend(f"Not measured (NVML): {item}." for item in run.gpu_health.unavailable)
        if run.host_health is not None:
            found.extend(f"Not measured: {item}." for item in run.host_health.unavailable)
    return found


def _sampler_notes(run: RunResult) -> list[_Note]:
    health, notes = run.host_health, list[_Note]()
    if health is None:
        return notes
    stretched, budget = health.longest_interval_s, health.cpu_budget or 0.0
    if stretched is not None and stretched > th.SAMPLING_STRETCH_NOTABLE * health.interval_s:
        notes.append(_Note(_stretched, run.label, (stretched, health.interval_s, 100 * budget)))
    if health.ticks and health.late_ticks / health.ticks > th.LATE_TICKS_NOTABLE:
        notes.append(_Note(_late, run.label, (health.late_ticks, health.ticks)))
    return notes


def _stretched(runs: str, many: bool, figures: Sequence[tuple[float, ...]]) -> str:
    slowest, every = span([f[0] for f in figures], "{:.2f}"), span([f[1] for f in figures], "{:.2f}")
    return (
        f"The process tree was large, so {runs} {'were' if many else 'was'} sampled every {slowest} s at the "
        f"slowest (not every {every} s), keeping sampling within {span([f[2] for f in figures])}% of one core: "
        "CPU figures are coarser."
    )


def _late(runs: str, many: bool, figures: Sequence[tuple[float, ...]]) -> str:
    late, ticks = sum(int(f[0]) for f in figures), sum(int(f[1]) for f in figures)
    return f"The sampler fell behind in {runs} ({late} of {ticks} ticks late): CPU figures are coarser."


def _gpu_caveats(runs: Sequence[RunResult], summaries: Sequence[RunSummary]) -> list[str]:
    """A reason for every run whose GPU busy % is null; runs that NVML gave no readings for, in one line."""
    found, silent = [], []
    for run, summary in zip(runs, summaries, strict=True):
        if summary.gpu_util_percent is not None or not summary.batches:
            continue
        if run.gpu_unavailable:
            found.append(f"GPU busy % not measured: NVML unavailable: {run.gpu_unavailable}.")
        elif run.gpu_samples:
            silent.append(run.label)
        else:
            found.append("GPU busy % not measured: NVML was not sampled.")
    if silent:
        found.append(f"GPU busy % not measured in {named(silent)}: NVML gave no utilisation readings.")
    return found
