"""diagnose's time budget for its num_workers sweep (``Limits.budget_s``): whether the sweep's next
run would end within it of the command's start, what the fixes of a pathology still to verify
take left to them (``reserved_s``).

Three kinds of run answer to it: a round of whole-epoch pairs (``within_budget``), a second run of
a setting (``search.Step.second``), and, once the sweep has a setting to advise beside the
script's own, every further setting the plan asks for (``run_fits``). The first setting it measures
beside the script's own never does: without it the sweep would advise nothing.
"""

from __future__ import annotations

from fastload_cli.analyzer import search
from fastload_cli.analyzer.search import epochs
from fastload_cli.analyzer.search.points import plain, usable
from fastload_cli.plan import follow_ups
from fastload_cli.plan.state import State
from fastload_cli.plan.step import Part
from fastload_cli.records import Mode, RunSummary


def within_budget(state: State, limits: search.Limits) -> bool:
    """A round of whole-epoch pairs more (``round_s``) would end within the sweep's time budget
    (``Limits.budget_s``) of the command's start, what the fixes of a pathology still to verify
    take left to them (``reserved_s``)."""
    if limits.budget_s is None:
        return True
    return state.elapsed_s + round_s(state) <= limits.budget_s - reserved_s(state)


def cut_short(state: State, limits: search.Limits) -> bool:
    """A round of whole-epoch pairs begun in one run of the script ended with the script, and the
    budget, which admitted that round as one run, holds no round in runs of their own (its rest
    would be up to three, each with its own warm-up epoch): its rest is not measured
    (``Limits.finish_rounds``)."""
    short = state.outcome.in_process_short and not limits.more_epochs and limits.finish_rounds
    return short and not within_budget(state, limits)


def round_s(state: State) -> float:
    """What a round of whole-epoch pairs would take (``epochs.round_s``): each epoch as long as
    the slowest setting measured so far makes one (its batches at its steady pace, and its
    workers' start-up), the script's start as its first run's; where the epoch's length or no
    pace is known, ``epochs.ROUND`` runs as long as the median run so far, start-ups and warm-up
    included."""
    found, timed = state.search_state, state.outcome.timed
    epoch = found.limits.epoch_batches
    paces = [
        epoch / s.throughput_batches_per_s + (s.startup_s or 0.0)
        for s in settings_measured(state)
        if epoch and s.throughput_batches_per_s
    ]
    if not paces or not timed:
        return epochs.ROUND * follow_ups.median_run_s(state)
    one_run = not found.sizing.job and not state.outcome.in_process_short
    return epochs.round_s(found.limits, found.sizing.warmup, max(paces), timed[0].start_s, one_run=one_run)


def settings_measured(state: State) -> list[RunSummary]:
    """The runs that measured a num_workers setting in a steady window: the real run (the script's
    own) and the sweep's, no variant."""
    kinds = (Mode.REAL, Mode.WORKERS)
    return [s for s in state.outcome.summaries if s.spec.mode in kinds and s.spec.variant is None]


def reserved_s(state: State) -> float:
    """What the follow-ups allowed past the budget (a pathology's fix, the verdict's cause's) will
    take, one run each as long as the median run so far: the sweep's second runs, its further
    settings and whole-epoch pairs leave them that much of its budget, as a fix verified for what
    is wrong is worth more to the report than one more run of the sweep."""
    return state.taken(Part.AFTER_MODES)[0].reserved * follow_ups.median_run_s(state)


def budgeted(state: State, found: search.Step) -> bool:
    """``found`` answers to the budget one run at a time (``run_fits``): a second run of a setting;
    or one setting in a run of its own, in a steady window, once the sweep has measured a setting
    beside the script's own. Whole-epoch runs answer to it by rounds (``within_budget``); a run
    in place of the command's first, and settings in turn in one run, are planned before the
    sweep has a setting to advise."""
    if found.second:
        return True
    if found.in_process or found.fixed or found.again or len(found.specs) != 1:
        return False
    searched = state.search_state
    return any(p.workers != searched.current for p in usable(plain(searched.points).values()))


def run_fits(state: State, found: search.Step, limits: search.Limits) -> bool:
    """The run ``found`` asks for would end within the sweep's time budget (``Limits.budget_s``) of
    the command's start, what the fixes of a pathology still to verify take left to them; true of
    a step that does not answer to it run by run (``budgeted``). It would take as long besides its
    window as the sweep's runs so far did (their median), and its window at the pace of the
    setting's earlier runs (the real run, for the script's own), or of the setting measured with
    the nearest number of workers for one not measured yet: a longer window for a run that swung
    costs what its batches do, not a whole run more each time."""
    if limits.budget_s is None or not budgeted(state, found):
        return True
    workers = found.specs[0].workers or 0
    runs = [s for s in settings_measured(state) if s.wall_s and s.batches]
    if not runs:
        return True
    besides = sorted((s.run_wall_s or s.wall_s or 0.0) - (s.wall_s or 0.0) for s in runs if s.spec.mode is Mode.WORKERS)
    nearest = min(abs((s.num_workers or 0) - workers) for s in runs)
    mine = [s for s in runs if abs((s.num_workers or 0) - workers) == nearest]
    pace = sum(s.wall_s or 0.0 for s in mine) / sum(s.batches for s in mine)
    overhead = besides[len(besides) // 2] if besides else 0.0
    return state.elapsed_s + overhead + pace * found.max_batches <= limits.budget_s - reserved_s(state)
