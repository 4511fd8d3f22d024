"""``diagnose``'s follow-ups: the runs that measure what its advice would gain, within a time budget.

A run with the fix of each pathology found and of the verdict's cause (``CAUSE_FIXES``), the
cached run (what storage and decoding cost), then a run with each other recommendation's fix
that fastload can apply. Each starts only while it would end within ``DEFAULT_FOLLOW_UP_BUDGET_S``
of the command's start and the seconds past it that run is allowed (a run takes about as long as
the median run so far); those that would not are named, so their recommendations say they were
not verified. The split run comes last, where no-aug replaced something and ``--breakdown`` asked
for every part (a verified fix matters more); elsewhere the no-aug and cached runs give where a
batch's time goes, and the verdict and the advice never wait on it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace

from fastload_cli.analyzer import Analysis, split
from fastload_cli.analyzer.trials import cuda_available, to_verify
from fastload_cli.analyzer.window import first_loader
from fastload_cli.config import DEFAULT_FOLLOW_UP_BUDGET_S, PATHOLOGY_FOLLOW_UP_EXTRA_S, RunConfig
from fastload_cli.plan.parts import Decide
from fastload_cli.plan.runs import CACHING, mode_step, split_step, split_unfit
from fastload_cli.plan.state import State
from fastload_cli.plan.step import FollowUp, Part, Step
from fastload_cli.records import Bottleneck, Mode, ModeSpec, RunResult

# The fix that a verdict's cause names first, verified as a pathology's is: pinned memory is what
# every guide says for copies to the GPU, and a run measures whether it helps this script (a batch
# handed over by workers must still be copied into pinned memory, on one thread).
CAUSE_FIXES = {Bottleneck.TRANSFER: "pin-memory"}


def verifications(analysis: Analysis, done: Sequence[RunResult]) -> tuple[ModeSpec, ...]:
    """A run with the fix applied for each recommendation fastload can apply itself."""
    cuda = cuda_available(done)
    named = {p.recommendation for p in analysis.pathologies}  # a pathology's fix is verified first
    ids = sorted((rec.id for rec in analysis.recommendations if not rec.measured), key=lambda i: i not in named)
    fixes = to_verify(analysis.verdict, ids, analysis.facts.loader, cuda, done)
    return tuple(ModeSpec(mode=Mode.FIX, fixes=(fix.text,)) for fix in fixes)


def follow_ups(analysis: Analysis, done: Sequence[RunResult], *, cached: bool) -> tuple[FollowUp, ...]:
    """The follow-up runs in the order they are worth making, each with the seconds it may end
    past the budget: a pathology's fix and the verdict's cause's first
    (``PATHOLOGY_FOLLOW_UP_EXTRA_S``), then the cached run, then the other recommendations' fixes."""
    verifying = verifications(analysis, done)
    named = {p.fix for p in analysis.pathologies} | {CAUSE_FIXES.get(analysis.verdict.bottleneck)}
    extra = PATHOLOGY_FOLLOW_UP_EXTRA_S
    first = tuple(FollowUp(spec=s, extra_s=extra) for s in verifying if "+".join(s.fixes) in named)
    rest = tuple(FollowUp(spec=s) for s in verifying if "+".join(s.fixes) not in named)
    return (*first, *((FollowUp(spec=ModeSpec(mode=Mode.CACHED)),) if cached else ()), *rest)


SPLIT_NOT_ASKED = (
    "Where a batch's time goes is read from the no-aug and cached runs; --breakdown also measures it in "
    "turns of each pipeline in one run of the script (the split run)."
)


def parts(
    runs_from: Callable[[State], RunConfig], cached: Callable[[State], bool], *, split: bool = False
) -> tuple[tuple[Part, Decide], ...]:
    """The follow-ups' parts of a plan whose runs start from ``runs_from`` and that decided
    whether the cached run is worth making (``cached``); the split run last only where ``split``
    (``--breakdown``) asks for it."""

    def follow_up(state: State) -> Step | None:
        taken = state.taken(Part.FOLLOW_UPS)
        if taken:
            first = taken[0]
            n = len(taken)
            return _nth(state, runs_from(state), first.planned, n, first.splitting) if n < len(first.planned) else None
        worth = cached(state)
        planned = follow_ups(state.analysis, state.runs, cached=worth)
        # the split run, where none ran yet: its turns give every part
        splitting = worth and state.analysis.facts.no_aug is not None and state.outcome.split_run is None
        if not planned:
            return Step(part=Part.FOLLOW_UPS, splitting=splitting)
        return _nth(state, runs_from(state), planned, 0, splitting)

    return (
        (Part.FOLLOW_UPS, follow_up),
        (Part.LEFT, functools.partial(left, asked=split)),
        (Part.SPLIT_LAST, functools.partial(split_last, asked=split)),
    )


def _nth(state: State, base: RunConfig, planned: tuple[FollowUp, ...], n: int, splitting: bool) -> Step:
    """The ``n``th follow-up: its run (from ``base``) where it fits the budget, else named as left
    (no run). Every follow-up step carries the plan, ``planned``, and whether the split follows."""
    spec, extra_s = planned[n].spec, planned[n].extra_s
    if not fits(state, DEFAULT_FOLLOW_UP_BUDGET_S + extra_s):
        return Step(part=Part.FOLLOW_UPS, mode=spec, planned=planned, splitting=splitting)
    if spec.mode is Mode.CACHED:
        note = "Loading is the limit: measuring it with every sample decoded into memory (cached)."
    else:
        note = f"Verifying what fastload can apply itself: {named(spec)}."
    config = (state.with_cache(base) if spec.mode in CACHING else base).with_mode(spec)
    step = mode_step(state, spec, config, Part.FOLLOW_UPS)
    return replace(step, notes=((None, note), *step.notes), planned=planned, splitting=splitting)


def _left(state: State) -> tuple[str, ...]:
    """The follow-ups past the budget: named, never run."""
    return tuple(named(s.mode) for s in state.taken(Part.FOLLOW_UPS) if s.config is None and s.mode is not None)


def left(state: State, *, asked: bool) -> Step | None:
    """The note that names the follow-ups past the budget (and the split, where it would follow
    and is ``asked`` for)."""
    names = _left(state)
    if not names or state.taken(Part.LEFT):
        return None
    splitting = asked and state.taken(Part.FOLLOW_UPS)[0].splitting
    listed = ", ".join([*names, "split"] if splitting else names)
    note = f"Not measured within diagnose's time budget: {listed}."
    return Step(part=Part.LEFT, notes=((None, note),), unverified=names)


def split_last(state: State, *, asked: bool) -> Step | None:
    """The split run, last, where it is ``asked`` for and fits the budget; where it does not, a
    note names it (where it could run but is not asked for, the note says what asks for it)."""
    taken = state.taken(Part.FOLLOW_UPS)
    if not taken or not taken[0].splitting or state.taken(Part.SPLIT_LAST):
        return None
    why = split_unfit(state)
    if why is None and not asked:
        return Step(part=Part.SPLIT_LAST, notes=((None, SPLIT_NOT_ASKED),))
    if _left(state):
        return None
    if why is not None:
        return Step(part=Part.SPLIT_LAST, notes=((None, why),))
    expected = split.split_run_s(first_loader(state.runs), state.outcome.summaries)
    if expected is None or state.elapsed_s + expected > DEFAULT_FOLLOW_UP_BUDGET_S:
        return Step(part=Part.SPLIT_LAST, notes=((None, "Not measured within diagnose's time budget: split."),))
    return split_step(state, Part.SPLIT_LAST)


def named(spec: ModeSpec) -> str:
    """A follow-up run as the notes and ``Outcome.unverified`` name it: its fixes, or its mode."""
    return "+".join(spec.fixes) if spec.mode is Mode.FIX else spec.label


def fits(state: State, budget_s: float, runs: int = 1) -> bool:
    """``runs`` runs, each as long as the median one so far, would end within ``budget_s`` of the
    command's start."""
    return state.elapsed_s + runs * median_run_s(state) <= budget_s


def past_budget(analysis: Analysis, done: Sequence[RunResult]) -> int:
    """The follow-ups allowed past the budget: a pathology's fix, the verdict's cause's."""
    return sum(1 for f in follow_ups(analysis, done, cached=False) if f.extra_s)


def median_run_s(state: State) -> float:
    """The median run so far, start to exit; 0 before any."""
    walls = sorted(s.run_wall_s for s in state.outcome.summaries if s.run_wall_s is not None)
    return walls[len(walls) // 2] if walls else 0.0
