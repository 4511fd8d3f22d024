"""``Outcome``: what a command's steps measured so far, and the steps themselves; ``recorded``:
how what a step measured joins it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from fastload_cli.analyzer import in_turn, search, split, time_spent
from fastload_cli.analyzer.failures import describe_error
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.pooled import pooled
from fastload_cli.analyzer.search.in_process import runs_of
from fastload_cli.plan.step import Keep, Part, Step
from fastload_cli.records import Breakdown, FixSpec, Measured, ModeSpec, RunResult, RunStatus, RunSummary, RunTime


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What a command's runs measured: each run with its summary, in the order they ran, and the
    steps taken (the plan reads them to know where it stands)."""

    measured: tuple[Measured, ...] = ()
    taken: tuple[Step, ...] = ()
    interrupted: bool = False
    breakdown: Breakdown | None = None  # the breakdown's measurement, once the plan asked for it
    # The breakdown a run of modes timed at its switch (real+synthetic), held until the plan asks
    # for the breakdown (``breakdown`` then), so that what is decided before does not read it.
    held_breakdown: Breakdown | None = None
    limits: search.Limits | None = None  # the num_workers sweep's limits, when a sweep ran
    in_process_short: bool = False  # an in-process run gave fewer settings their turn than it asked
    fixes: tuple[FixSpec, ...] = ()  # ``try``: the fixes asked for, refused ones included
    unverified: tuple[str, ...] = ()  # follow-up runs past diagnose's time budget ("cached", fix names)
    split_run: RunResult | None = None  # the split run, when one ran: the pipelines of the split in turns
    timed: tuple[RunTime, ...] = ()  # where each process of the script spent its time, in the order they ran

    @property
    def runs(self) -> tuple[RunResult, ...]:
        return tuple(m.run for m in self.measured)

    @property
    def summaries(self) -> tuple[RunSummary, ...]:
        return tuple(m.summary for m in self.measured)

    def adding(self, *found: Measured) -> Outcome:
        return replace(self, measured=(*self.measured, *found))

    def without_last(self) -> Outcome:
        return replace(self, measured=self.measured[:-1])


def recorded(
    outcome: Outcome,
    step: Step,
    found: Measured | None = None,
    raw: RunResult | None = None,
    superseded: RunResult | None = None,
) -> Outcome:
    """``outcome`` with ``step`` taken: its run (``found``, measured, or ``raw``, a breakdown run's)
    joined as the step says, what it sets, and where the run's time went (``superseded``: a run the
    step made and measured again, a disturbed one). A breakdown step without a run takes the
    breakdown a run of modes timed (``held_breakdown``)."""
    run = found.run if found is not None else raw
    cut: tuple[RunResult, ...] = () if run is None else _cut(step, run)
    if step.then is not None and len(cut) < 2:  # its first mode alone was measured: the next is still to come
        step = replace(step, then=None)
    done = replace(outcome, taken=(*outcome.taken, step))
    if step.limits is not None:
        done = replace(done, limits=step.limits)
    if step.unverified:
        done = replace(done, unverified=step.unverified)
    if run is None:
        return replace(done, breakdown=outcome.held_breakdown) if step.keep is Keep.BREAKDOWN else done
    done = _timed(done, step, run, cut, superseded)
    interrupted = run.status is RunStatus.INTERRUPTED
    if step.keep is Keep.BREAKDOWN:
        return replace(done, breakdown=None if interrupted else _breakdown(run), interrupted=interrupted)
    if run.breakdown is not None and done.held_breakdown is None:
        done = replace(done, held_breakdown=run.breakdown)
    if step.keep is Keep.SPLIT:
        return replace(done, split_run=run, interrupted=interrupted)
    if step.keep is Keep.SPLIT_MODES:
        return replace(done.adding(*_split_modes(cut)), split_run=run, interrupted=interrupted)
    if step.keep is Keep.IN_TURN:
        assert step.config is not None
        short = done.in_process_short or len(cut) < len(step.config.child.turns)
        each = (Measured(r, summarize(r)) for r in cut)
        return replace(done.adding(*each), interrupted=interrupted, in_process_short=short)
    if step.keep is Keep.MODES_IN_TURN:
        return replace(done.adding(*(Measured(r, summarize(r)) for r in cut)), interrupted=interrupted)
    assert found is not None
    kept = done.without_last() if step.keep is Keep.AGAIN else done
    return replace(kept.adding(found), interrupted=interrupted)


def _cut(step: Step, run: RunResult) -> tuple[RunResult, ...]:
    """The runs ``run`` stands for: the settings an in-process run measured in turn, the real
    and synthetic runs of a real+synthetic run (the real alone where it replayed nothing), or itself."""
    if step.keep is Keep.IN_TURN and step.config is not None:
        return runs_of(run, at_epochs=step.config.child.turn_at_epochs)
    if step.keep is Keep.MODES_IN_TURN:
        return in_turn.modes_of(run)
    if step.keep is Keep.SPLIT_MODES:
        return tuple(turn for turns in split.modes_of(run).values() for turn in turns)
    return (run,)


def _split_modes(turns: tuple[RunResult, ...]) -> tuple[Measured, ...]:
    """The no-aug and cached runs the split run's turns (``_cut``) stand for: each mode's first
    turn, its figures pooled over its turns (``pooled``: their windows joined, their spread its noise)."""
    modes: dict[ModeSpec, list[RunResult]] = {}
    for turn in turns:
        modes.setdefault(turn.spec, []).append(turn)
    return tuple(Measured(each[0], pooled([summarize(t) for t in each])) for each in modes.values())


def _timed(
    outcome: Outcome, step: Step, run: RunResult, cut: tuple[RunResult, ...], superseded: RunResult | None
) -> Outcome:
    """``outcome`` with where ``run`` (``cut``: the settings' runs it measured in turn, or itself)
    and ``superseded`` spent their time: a run measures again what another did where its step
    says so, or where one of the two was superseded."""
    again = step.keep is Keep.AGAIN or step.part in (Part.AGAIN, Part.AGAIN_LATE) or superseded is not None
    whole = step.keep is Keep.IN_TURN and step.config is not None and step.config.child.turn_at_epochs
    found = [time_spent.of_run(run, time_spent.windows(cut, whole_epochs=whole), again=again)]
    if superseded is not None:
        found.insert(0, time_spent.of_run(superseded, time_spent.windows((superseded,)), again=True))
    return replace(outcome, timed=(*outcome.timed, *found))


def _breakdown(run: RunResult) -> Breakdown:
    """The breakdown run's measurement, or one that says why there is none."""
    if run.breakdown is not None:
        return run.breakdown
    why = describe_error(run) or "the script did not iterate a DataLoader"
    return Breakdown(loader_id=None, items=0, threads=1, ms_per_sample=None, steps=(), unavailable=why)
