"""The search's one question: what do we measure next? ``next_step(state)`` answers it with a
``Step`` already sized, or None when the search is done; the session only executes steps.

In order:
1. The command's first run measured a setting before fastload had seen the loader, and that
   loader's epochs turn out too short for a steady window at it: the setting again, in whole
   epochs, in place of that run.
2. A setting measured inside the script's first epoch beside others measured after it, which
   the comparison could turn on (``parts.again_after_first_epoch``): again, after it.
3. The next setting of the plan: the prediction verified (``guided``), the grid asked for, or the
   climb (``climb``). Several settings the plan knows in advance go in turn in one run of the
   script where the loader allows it (in-process); otherwise each in a run of its own, after the
   first epoch once the search measures there (``after_first_epoch``). A setting measured
   again whose first run swung across its window (``points.swings``) gets a longer window.
   Where the plan asks for it, the script's own setting or one with fewer workers over whole
   epochs (``epochs``), exactly the batches asked: the pairs known in advance, an epoch each, in
   one run of the script (so the machine's drift between runs falls alike on a pair's two), or one
   in a run of its own (a data-parallel job, or after an in-process run that came up short).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search import climb, epochs, guided, parts
from fastload_cli.analyzer.search.climb import NextSetting
from fastload_cli.analyzer.search.points import plain, swings
from fastload_cli.analyzer.search.sizing import in_turn, sized, whole_epochs
from fastload_cli.analyzer.search.state import State
from fastload_cli.analyzer.window import epoch_batches
from fastload_cli.formatting import counted
from fastload_cli.records import Mode, ModeSpec

AGAIN_AFTER_FIRST_EPOCH = "measuring again after the first epoch, like the settings it is compared with"
AGAIN_LONGER = "its first run swung across its window: measuring again, over a longer window"
AGAIN_IN_WHOLE_EPOCHS = "an epoch is too short for a steady window at this setting: measuring whole epochs"
AGAIN_OVER_EPOCHS = (
    "{which} workers than {own} may train faster, and each epoch starts its workers again: measuring "
    "{workers} over whole epochs, their start-ups included"
)
IN_TURN_OVER_EPOCHS = (
    "{which} workers than {own} may train faster, and each epoch starts its workers again: measuring "
    "an epoch each with num_workers={turns}, in turn in one run, their start-ups included"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """What the search measures next, sized: one setting in a run of its own, or several in turn
    in one run of the script (``turns``: each setting's workers and batches, its burst included)."""

    specs: tuple[ModeSpec, ...]
    warmup: int
    max_batches: int  # measured batches after the warm-up (in turn: every setting's together)
    turns: tuple[tuple[int, int], ...] = ()
    first: bool = False  # the command's first run to measure: it must measure a batch
    again: bool = False  # measured again in place of the last run
    fixed: bool = False  # exactly its batches: the run never stops early once its estimate is stable
    at_epochs: bool = False  # in turn: each setting takes over only as an epoch starts
    second: bool = False  # a setting measured before, once more where the answer could turn on it (``confirmation``)
    note: str = ""  # what the user is told before it runs

    @property
    def in_process(self) -> bool:
        return bool(self.turns)


def next_step(state: State) -> Step | None:
    """The step the search takes next; None when it is done, or when diagnose's time budget holds
    no more settings (``Limits.more_settings``)."""
    if not state.limits.more_settings:
        return None
    again = _again_in_whole_epochs(state)
    if again is not None:
        return again
    found = next_setting(state)
    workers = found.workers
    if workers is None:
        return None
    if found.whole_epochs:
        return _over_epochs(state, workers)
    settings = in_process_settings(state, workers)
    if settings:
        return _in_turn(state, settings)
    spec = ModeSpec(mode=Mode.WORKERS, workers=workers)
    longer = _swung(state, workers)
    later = workers in parts.again_after_first_epoch(state.points)
    note = AGAIN_AFTER_FIRST_EPOCH if later else AGAIN_LONGER if longer else ""
    second = not later and workers in plain(state.points)
    return replace(single(state, spec, note=note, longer=longer), second=second)


def _over_epochs(state: State, workers: int) -> Step:
    """``workers`` over whole epochs after the first, each epoch's start-up included (``epochs``):
    where the plan asks for pairs of settings, an epoch of each setting of its next round
    (``epochs.ROUND``: own, other, other, own) in turn in one run of the script (a pair then shares
    the machine's state, as runs a minute apart do not, and the round pays one start and one
    warm-up epoch), unless this is a data-parallel job or an in-process run gave fewer settings
    their turn than it asked; in a run of its own over ``EPOCHS_MEASURED`` epochs otherwise."""
    warmup, batches = epochs.sizes(state.limits, state.sizing.warmup)
    turns = epochs.pending(state.points, state.limits, state.current, down=state.loaders_compete)[: epochs.ROUND]
    found = epochs.candidates(state.points, state.limits, state.current, down=state.loaders_compete)
    which = "more" if max(found, default=0) > (state.current or 0) else "fewer"
    if len(set(turns)) > 1 and turns[0] == workers and not state.sizing.job and not state.in_process_short:
        epoch = batches // epochs.EPOCHS_MEASURED
        return Step(
            specs=tuple(ModeSpec(mode=Mode.WORKERS, workers=w) for w in turns),
            warmup=warmup,
            max_batches=len(turns) * epoch,
            turns=((turns[0], warmup + epoch), *((w, epoch) for w in turns[1:])),
            fixed=True,
            at_epochs=True,
            note=IN_TURN_OVER_EPOCHS.format(which=which, own=state.current, turns=", ".join(map(str, turns))),
        )
    note = AGAIN_OVER_EPOCHS.format(which=which, own=state.current, workers=counted(workers, "worker"))
    spec = ModeSpec(mode=Mode.WORKERS, workers=workers)
    return Step(specs=(spec,), warmup=warmup, max_batches=batches, fixed=True, note=note)


def _swung(state: State, workers: int) -> bool:
    """``workers`` was measured, and its run swung across its window (``points.swings``): measured
    again, its window is ``SWEEP_SWING_WINDOW`` times as long."""
    found = plain(state.points).get(workers)
    return found is not None and swings(found)


def next_setting(state: State) -> NextSetting:
    """The num_workers setting the plan measures next, from the settings measured so far."""
    again = parts.again_after_first_epoch(state.points)
    if again:
        return NextSetting(again[0])
    if state.prediction is not None and state.current is not None:
        return guided.plan(state.points, state.limits, state.current, state.prediction, down=state.loaders_compete)
    return climb.plan(state.points, state.limits, state.current)


def single(state: State, spec: ModeSpec, note: str = "", *, longer: bool = False) -> Step:
    """``spec`` in a run of its own, after the first epoch where the search measures there;
    ``longer``: over ``SWEEP_SWING_WINDOW`` times the batches."""
    sizing = state.sizing
    asked = sizing.max_batches * (th.SWEEP_SWING_WINDOW if longer else 1)
    warmup, batches = sized(spec, state.loader, sizing.warmup, asked, later=after_first_epoch(state))
    return Step(specs=(spec,), warmup=warmup, max_batches=batches, first=not state.measured_any, note=note)


def after_first_epoch(state: State) -> bool:
    """The search measures its next settings after the script's first epoch, as it measures those
    whose epoch has no steady window (their warm-up is whole epochs): once it has measured one,
    or where the grid asked for or the prediction to verify holds one. The first epoch's workers
    can run slower than later epochs' (``parts.comparable``); settings are compared in one part."""
    if not epoch_batches(state.loader):
        return False
    if any(p.after_first_epoch for p in state.points):
        return True
    planned: tuple[int, ...] | list[int] = state.limits.grid or ()
    if state.prediction is not None and state.current is not None:
        planned = guided.pending(
            state.points, state.limits, state.current, state.prediction, down=state.loaders_compete
        )
    return any(whole_epochs(ModeSpec(mode=Mode.WORKERS, workers=w), state.loader) for w in planned)


def in_process_settings(state: State, workers: int) -> tuple[int, ...]:
    """The settings from ``workers`` on that one run of the script can measure in turn
    (``runner/child/in_process.py``), in order; none where fewer than two can. The plan must know
    them all before measuring any (the grid, or the settings that verify a prediction), and each
    must have a steady window inside an epoch: the switch lands mid-epoch, so a setting measured
    over whole epochs keeps its own run, as do settings measured after the first epoch, a loader
    whose workers persist across epochs, a data-parallel job, and every setting after an
    in-process run that gave fewer settings their turn than it asked."""
    limits, loader = state.limits, state.loader
    if not limits.in_process or state.sizing.job or state.in_process_short:
        return ()
    if loader is None or loader.persistent_workers or not limits.epoch_batches or after_first_epoch(state):
        return ()
    wanted = _known_in_advance(state)
    if not wanted or wanted[0] != workers:
        return ()
    fit = tuple(itertools.takewhile(lambda w: limits.too_many(w) is None, wanted))
    return fit if len(fit) > 1 else ()


def _known_in_advance(state: State) -> list[int]:
    """The settings the plan will ask for, in order, before any of them could change its course."""
    if state.limits.grid is not None:
        measured = {p.workers for p in state.points if p.variant is None}
        asked = (*state.limits.grid, *([state.current] if state.current is not None else []))
        return [w for w in dict.fromkeys(asked) if w not in measured]
    if state.prediction is None or state.current is None:
        return []
    return guided.pending(state.points, state.limits, state.current, state.prediction, down=state.loaders_compete)


def _in_turn(state: State, settings: tuple[int, ...]) -> Step:
    sizing = state.sizing
    warmup, turns = in_turn(settings, state.loader, sizing.warmup, sizing.max_batches)
    return Step(
        specs=tuple(ModeSpec(mode=Mode.WORKERS, workers=w) for w in settings),
        warmup=warmup,
        max_batches=sum(n for _, n in turns) - warmup,
        turns=turns,
        first=not state.measured_any,
    )


def _again_in_whole_epochs(state: State) -> Step | None:
    """The command's first run measured its setting before the loader was seen; where that
    loader's epochs are too short for a steady window at the setting, it is measured again in
    whole epochs (``sizing.sized``), in place of that run."""
    blind = state.blind
    if blind is None or not whole_epochs(blind.spec, state.loader):
        return None
    warmup, batches = sized(blind.spec, state.loader, state.sizing.warmup, state.sizing.max_batches)
    if (warmup, batches) == (blind.warmup, blind.batches):
        return None
    return Step(specs=(blind.spec,), warmup=warmup, max_batches=batches, again=True, note=AGAIN_IN_WHOLE_EPOCHS)
