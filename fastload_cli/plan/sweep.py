"""``sweep-workers``: the script's own setting, the num_workers search predicted from it (or the
grid asked for), then prefetch_factor and pin_memory variants at the setting it found best. And
how any search step becomes a run (``searched``), for ``diagnose``'s sweep too."""

from __future__ import annotations

from dataclasses import dataclass, replace

from fastload_cli.analyzer import search
from fastload_cli.analyzer.trials import cuda_available
from fastload_cli.config import RunConfig
from fastload_cli.plan.outcome import Outcome
from fastload_cli.plan.parts import next_in, queued
from fastload_cli.plan.runs import mode_step, run_step
from fastload_cli.plan.state import State
from fastload_cli.plan.step import Keep, Part, Step
from fastload_cli.records import Mode, ModeSpec

REAL = ModeSpec(mode=Mode.REAL)


def searched(found: search.Step, base: RunConfig, part: Part = Part.SWEEP) -> Step:
    """A step of the search as a run of the script from ``base``: its settings in turn in one run,
    or its one setting in a run of its own (in place of the last run where it measures that again;
    never stopped early where its batches are fixed)."""
    config = replace(base, fixed_batches=True) if found.fixed else base
    if found.in_process:
        mode = ModeSpec(mode=Mode.IN_PROCESS)
        child = config.with_child(mode=mode, warmup=found.warmup, turns=found.turns, turn_at_epochs=found.at_epochs)
        notes = ((mode, found.note),) if found.note else ()
        config = replace(child, max_batches=found.max_batches)
        return run_step(part, config, keep=Keep.IN_TURN, first=found.first, notes=notes)
    spec = found.specs[0]
    notes = ((spec, found.note),) if found.note else ()
    config = replace(config.with_child(mode=spec, warmup=found.warmup), max_batches=found.max_batches)
    return run_step(part, config, keep=Keep.AGAIN if found.again else Keep.RUN, first=found.first, notes=notes)


def search_step(state: State, base: RunConfig) -> Step | None:
    """The search's next step as a run from ``base``; None when it is done."""
    found = search.next_step(state.search_state)
    return searched(found, base) if found is not None else None


@dataclass(frozen=True, slots=True)
class Sweep:
    """``sweep-workers``'s plan."""

    max_workers: int
    grid: tuple[int, ...] | None = None
    prefetch_factors: tuple[int, ...] = ()
    pin_both: bool = False
    in_process: bool = False  # settings in turn in one run of the script where the loader allows it

    def sizing(self, base: RunConfig) -> RunConfig:
        return base

    def start(self) -> Outcome:
        return Outcome()

    def next_step(self, state: State) -> Step | None:
        parts = ((Part.MODES, self._own), (Part.SWEEP, self._sweep), (Part.VARIANTS, self._variants))
        return next_in(parts, state)

    def _own(self, state: State) -> Step | None:
        """The script's own setting, measured first, as the script is: the search predicts from it."""
        if self.grid is not None or state.taken(Part.MODES):
            return None
        return mode_step(state, REAL, state.base.with_mode(REAL))

    def _sweep(self, state: State) -> Step | None:
        if not state.taken(Part.SWEEP):  # the limits on this machine, before the search's first step
            limits = state.sweep_limits(self.max_workers, self.grid)
            return Step(part=Part.SWEEP, limits=replace(limits, in_process=self.in_process))
        return search_step(state, state.base)

    def _variants(self, state: State) -> Step | None:
        taken = state.taken(Part.VARIANTS)
        if not taken:
            found = search.variants(
                state.search_state, self.prefetch_factors, self.pin_both, cuda_available(state.runs)
            )
            return Step(part=Part.VARIANTS, notes=tuple((None, n) for n in found.notes), variants=found.steps)
        variant = queued(taken, taken[0].variants)
        return searched(variant, state.base, Part.VARIANTS) if variant is not None else None
