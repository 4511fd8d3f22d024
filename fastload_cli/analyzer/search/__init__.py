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
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.analyzer.search.outcome import conclude, conclusion, promised, returns
from fastload_cli.analyzer.search.state import Sizing, State, current_workers, measured_points, state
from fastload_cli.analyzer.search.step import Step, next_step
from fastload_cli.analyzer.search.variants import Variants, variants
from fastload_cli.records import SweepResult

HELD_BACK = (
    "The pairs of whole epochs told the best setting from the script's own by less than their noise, and "
    "diagnose's time budget held no more of them: fastload sweep-workers measures more."
)


def result(found: State) -> SweepResult | None:
    """What the measured settings say: the setting to use, its speedup, where returns end; and
    where the time budget held back pairs of whole epochs the runs asked for, that caveat."""
    done = conclude(found.points, found.current, found.limits, found.cpu_count, found.prediction)
    if done is not None and epochs.held_back(found.points, found.limits, found.current, down=found.loaders_compete):
        done = replace(done, caveats=(*done.caveats, HELD_BACK))
    return done


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
