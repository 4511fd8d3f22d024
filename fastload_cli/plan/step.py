"""``Step``: what a command does next, decided by its plan and executed by the session.

A step is one run of the script (a mode, a num_workers setting, several settings in turn, the
split, the breakdown) with the notes the user is told before it, or no run at all: a note, or a
decision the plan keeps for the steps after it (the sweep's limits, the follow-ups it will make).
The plan reads the steps taken (``Outcome.taken``) to know where it stands.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fastload_cli.analyzer import search
from fastload_cli.config import RunConfig
from fastload_cli.records import ModeSpec


class Part(enum.Enum):
    """Which part of a command a step belongs to; a command's parts come in a fixed order."""

    MODES = "modes"  # each mode asked for, in order
    SPLIT = "split"  # the split run that follows the modes
    AGAIN = "again"  # real and synthetic measured again near the line
    STRAGGLER = "straggler"  # a data-parallel job measured with its straggler's input pipeline free
    AFTER_MODES = "after modes"  # what diagnose runs once its modes are measured, decided
    SWEEP = "sweep"  # the num_workers search
    VARIANTS = "variants"  # sweep-workers' prefetch_factor / pin_memory variants
    AGAIN_LATE = "again after the sweep"  # real and synthetic measured again where the sweep left it open
    BREAKDOWN = "breakdown"  # each loading step timed
    FIXES = "fixes"  # try's runs with fixes applied
    FOLLOW_UPS = "follow-ups"  # diagnose's runs that verify its advice, within its budget
    LEFT = "left"  # the follow-ups past the budget, named
    SPLIT_LAST = "split last"  # the split run after the follow-ups


class Keep(enum.Enum):
    """How a step's run joins the outcome."""

    RUN = "run"  # one more measured run
    AGAIN = "again"  # in place of the last run, which it measures again
    IN_TURN = "in turn"  # several settings in turn: one workers=N run each
    MODES_IN_TURN = "modes in turn"  # real, then synthetic: the real run and the synthetic run
    SPLIT = "split"  # the split run, kept apart from the modes' runs
    SPLIT_MODES = "split modes"  # the split run, and the no-aug and cached runs its turns stand for
    BREAKDOWN = "breakdown"  # its breakdown, not its batches


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowUp:
    """A run diagnose makes to verify its advice, and the seconds it may end past the budget."""

    spec: ModeSpec
    extra_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One thing a command does next."""

    part: Part
    config: RunConfig | None = None  # the run, ready to start; None: nothing runs
    keep: Keep = Keep.RUN
    first: bool = False  # the command's first run to measure: it must measure a batch
    notes: tuple[tuple[ModeSpec | None, str], ...] = ()  # told before it runs: on a mode's run, or the command's
    limits: search.Limits | None = None  # the sweep's limits, from this step on
    unverified: tuple[str, ...] = ()  # follow-ups named as not measured within the budget
    # What the plan decided for the steps after this one:
    mode: ModeSpec | None = None  # MODES: the mode this step stands for, run or not
    then: ModeSpec | None = None  # MODES, AGAIN: the mode its run measured after ``mode``'s, in turn
    later: bool = False  # AGAIN: the pair waits for the sweep, which may settle the verdict (``again.after_sweep``)
    sweep: bool = False  # AFTER_MODES: a num_workers sweep follows
    breakdown: bool = False  # AFTER_MODES: the breakdown follows
    cached: bool = False  # AFTER_MODES: the cached run is among the follow-ups
    reserved: int = 0  # AFTER_MODES: follow-ups allowed past the budget, whose runs the sweep leaves room for
    planned: tuple[FollowUp, ...] = ()  # FOLLOW_UPS, FIXES: the runs, in order (on the part's first step)
    variants: tuple[search.Step, ...] = ()  # VARIANTS: the variants' steps, in order
    splitting: bool = False  # FOLLOW_UPS: the split run follows them
