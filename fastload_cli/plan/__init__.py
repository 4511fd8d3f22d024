"""Every command as a plan: what it runs next, decided from what it measured so far.

One state, one question, for every command, as the num_workers search has (``analyzer.search``):
``at(plan, outcome, ...)`` builds, once per step, what the plan reads (``State``: the runs
measured and the steps taken, the command's run configuration, and the clock and the free memory
handed in as values); ``plan.next_step(state)`` answers "what do we do next?" with a ``Step``
ready to run, or None when the command is done. The session is one loop that executes steps and
decides nothing; ``recorded`` says how a step's run joins the ``Outcome``. Pure functions.

The modules, each one concern:

- ``outcome``, ``step``, ``state``: the records (``Outcome``, ``Step``, ``State``).
- ``parts``: a command's parts in their order.
- ``runs``: one run made ready (the modes', the split's, the breakdown's), and the rules that
  judge a run once it ended: it measured a batch; other processes skewed it.
- ``report``: the outcome analysed, as the one ``Report`` every format renders.
- ``diagnose`` (``diagnose`` and ``synthetic-compare``), ``follow_ups`` (diagnose's runs that
  verify its advice), ``sweep`` (``sweep-workers``, and a search step as a run), ``try_fixes`` (``try``).
"""

from __future__ import annotations

from typing import Protocol

from fastload_cli.config import RunConfig
from fastload_cli.plan.diagnose import Diagnose
from fastload_cli.plan.outcome import Outcome, recorded
from fastload_cli.plan.runs import check_measurable, kept, measured, why_again
from fastload_cli.plan.state import State
from fastload_cli.plan.step import Keep, Part, Step
from fastload_cli.plan.sweep import Sweep
from fastload_cli.plan.try_fixes import TryFixes


class Plan(Protocol):
    """A command's plan: where it starts, and its next step from a state."""

    def start(self) -> Outcome: ...

    def sizing(self, base: RunConfig) -> RunConfig: ...

    def next_step(self, state: State) -> Step | None: ...


def at(plan: Plan, outcome: Outcome, base: RunConfig, elapsed_s: float, free_memory_bytes: int | None) -> State:
    """What ``plan`` reads to decide its next step after ``outcome``."""
    return State(
        outcome=outcome,
        base=base,
        elapsed_s=elapsed_s,
        free_memory_bytes=free_memory_bytes,
        sizing=plan.sizing(base),
    )


__all__ = [
    "Diagnose",
    "Keep",
    "Outcome",
    "Part",
    "Plan",
    "State",
    "Step",
    "Sweep",
    "TryFixes",
    "at",
    "check_measurable",
    "kept",
    "measured",
    "recorded",
    "why_again",
]
