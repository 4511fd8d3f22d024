"""The num_workers search: what to measure next, and what the measured settings say.

One state, one question. ``state(runs, summaries, limits, sizing)`` computes, once per step, all
the search knows (``State``: the settings measured, the script's own, the loader, the limits
bounded for it, the prediction); ``next_step(state)`` answers "what do we measure next?" with a
sized ``Step``, or None when the search is done; ``result(state)`` says what the measured
settings mean (``SweepResult``). The session is a loop that executes steps. Pure functions.

The modules, each one concern:

- ``state``: the ``State`` record and how it is computed from runs.
- ``step``: ``next_step`` and its rules (again after the first epoch, again in whole epochs, in
  turn in one run, one run each).
- ``guided`` (from a prediction, ``predict``) and ``climb`` (a ladder, without one): the plan.
- ``sizing``: how many batches a setting's run needs.
- ``parts``: settings compared in one part of training.
- ``points``, ``limits``: measured settings and the noise between them; what may be measured.
- ``in_process``: an in-process run cut into the settings' runs it stands for.
- ``outcome``: the setting to use, where returns end, and the sentences that say so.
- ``variants``: sweep-workers' prefetch_factor / pin_memory variants of the chosen setting.
"""

from __future__ import annotations

from dataclasses import replace

from fastload_cli.analyzer.search import epochs
from fastload_cli.analyzer.search.climb import confirmation
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.analyzer.search.outcome import conclude, conclusion, promised, returns
from fastload_cli.analyzer.search.points import plain
from fastload_cli.analyzer.search.state import Sizing, State, current_workers, measured_points, state
from fastload_cli.analyzer.search.step import Step, next_step
from fastload_cli.analyzer.search.variants import Variants, variants
from fastload_cli.records import SweepResult

HELD_BACK = (
    "The pairs of whole epochs told the best setting from the script's own by less than their noise, and "
    "diagnose's time budget held no more of them: fastload sweep-workers measures more."
)
CUT_SHORT = (
    "The script ended inside the run that measured the pairs of whole epochs in turn, and diagnose's time budget "
    "held the rest of them in runs of their own: the settings compared over whole epochs rest on fewer epochs "
    "than a round of pairs measures, their order not reversed. fastload sweep-workers measures more."
)
NONE_IN_BUDGET = (
    "Each epoch here is short enough for its start-up, burst and drain to matter, which steady windows leave "
    "out, and diagnose's time budget held no pairs of whole epochs to measure them: fastload sweep-workers does."
)

ONCE = (
    "num_workers={workers} was measured once where the sweep measures a setting twice (the answer could turn on "
    "one run of it), and diagnose's time budget held no second run: fastload sweep-workers measures it again."
)

NO_MORE = (
    "The sweep would have measured num_workers={workers} next, and diagnose's time budget held no more settings: "
    "its advice rests on those it measured. fastload sweep-workers measures more."
)


def unconfirmed(found: State) -> int | None:
    """The setting the time budget held a second run of back (``Limits.confirm`` turned off by
    diagnose), where the search would have measured one (``climb.confirmation``); None otherwise."""
    if found.limits.confirm:
        return None
    return confirmation(plain(found.points), replace(found.limits, confirm=True), found.current)


def held_next(found: State) -> int | None:
    """The setting the search would have measured next where diagnose's time budget held no more
    (``Limits.more_settings`` turned off); None otherwise."""
    if found.limits.more_settings:
        return None
    step = next_step(replace(found, limits=replace(found.limits, more_settings=True)))
    return step.specs[0].workers if step is not None else None


def result(found: State) -> SweepResult | None:
    """What the measured settings say: the setting to use, its speedup, where returns end; where
    diagnose's time budget held back a setting's second run, or the settings the search would
    have gone on to, a caveat that names it (``ONCE``, ``NO_MORE``), whatever the conclusion
    (``_concluded``)."""
    done, once, next_held = _concluded(found), unconfirmed(found), held_next(found)
    if done is None:
        return done
    said = (
        *((ONCE.format(workers=once),) if once is not None else ()),
        *((NO_MORE.format(workers=next_held),) if next_held is not None else ()),
    )
    return replace(done, caveats=(*done.caveats, *said)) if said else done


def _concluded(found: State) -> SweepResult | None:
    """The setting to use, its speedup, where returns end; and where the time budget held back
    pairs of whole epochs the runs asked for, that caveat (or, where it held back the rest of a
    round the script's end cut short, that one). Where it held back every pair, fewer
    workers than the script's own are not advised from the steady windows alone (a short epoch's
    start-up and burst, which they leave out, can undo their gain): the conclusion says what the
    windows read."""
    held = epochs.held_back(found.points, found.limits, found.current, down=found.loaders_compete)
    done = conclude(found.points, found.current, found.limits, found.cpu_count, found.prediction)
    if done is None or not held:
        return done
    if not epochs.unmeasured(found.points):
        return replace(done, caveats=(*done.caveats, HELD_BACK if found.limits.finish_rounds else CUT_SHORT))
    own = found.current or 0
    fewer = done.recommended_workers is not None and done.recommended_workers < own
    if not (done.significant and fewer and done.speedup is not None):
        return replace(done, caveats=(*done.caveats, NONE_IN_BUDGET))
    kept = conclude(found.points, found.current, replace(found.limits, fewer=False), found.cpu_count, found.prediction)
    assert kept is not None
    return replace(
        kept,
        conclusion=(
            f"Keep num_workers={own} for now: num_workers={done.recommended_workers} was {done.speedup:.2f}x as fast "
            "in steady windows, which leave out each epoch's start-up, burst and drain, and diagnose's time budget "
            "held no pairs of whole epochs to measure it as training pays for it: fastload sweep-workers does."
        ),
    )


__all__ = [
    "Limits",
    "Sizing",
    "State",
    "Step",
    "Variants",
    "conclusion",
    "current_workers",
    "measured_points",
    "next_step",
    "promised",
    "result",
    "returns",
    "state",
    "variants",
]
