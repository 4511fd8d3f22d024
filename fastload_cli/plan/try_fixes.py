"""``try``: the real run, then one run per fix that applies to its loader, then every fix that
applies at once; a fix that does not apply is named with the reason, never measured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fastload_cli.analyzer.trials import AT_EPOCH_STARTS, cuda_available, refusal
from fastload_cli.analyzer.window import first_loader
from fastload_cli.config import RunConfig
from fastload_cli.plan.outcome import Outcome
from fastload_cli.plan.parts import next_in, queued
from fastload_cli.plan.runs import holding_an_epoch_start, mode_step
from fastload_cli.plan.state import State
from fastload_cli.plan.step import FollowUp, Part, Step
from fastload_cli.records import FixSpec, Mode, ModeSpec, RunResult

REAL = ModeSpec(mode=Mode.REAL)


@dataclass(frozen=True, slots=True)
class FixRuns:
    """The runs ``try`` makes with fixes applied."""

    specs: tuple[ModeSpec, ...]
    notes: tuple[str, ...]  # the fixes asked for that are not measured, and why


def fix_runs(fixes: Sequence[FixSpec], done: Sequence[RunResult]) -> FixRuns:
    """A run per fix that applies to the measured loader, then all of those together; a note per
    fix that does not, with the reason (it is reported, never measured)."""
    loader, cuda = first_loader(done), cuda_available(done)
    applied, notes = [], []
    for fix in fixes:
        why = refusal(fixes, fix, loader, cuda)
        if why is None:
            applied.append(fix.text)
        else:
            notes.append(f"--fix {fix.text}: not measured, {why}.")
    specs = [ModeSpec(mode=Mode.FIX, fixes=(text,)) for text in applied]
    if len(applied) > 1:
        specs.append(ModeSpec(mode=Mode.FIX, fixes=tuple(applied)))
    return FixRuns(specs=tuple(specs), notes=tuple(notes))


@dataclass(frozen=True, slots=True)
class TryFixes:
    """``try``'s plan. Its runs may decode samples into memory (the cache-decoded fix)."""

    fixes: tuple[FixSpec, ...]

    def sizing(self, base: RunConfig) -> RunConfig:
        return base

    def start(self) -> Outcome:
        return Outcome(fixes=self.fixes)

    def next_step(self, state: State) -> Step | None:
        return next_in(((Part.MODES, self._real), (Part.FIXES, self._fixed)), state)

    def _real(self, state: State) -> Step | None:
        if state.taken(Part.MODES):
            return None
        step = mode_step(state, REAL, state.with_cache(state.base).with_mode(REAL))
        return holding_an_epoch_start(step) if any(f.fix in AT_EPOCH_STARTS for f in self.fixes) else step

    def _fixed(self, state: State) -> Step | None:
        taken = state.taken(Part.FIXES)
        if not taken:
            planned = fix_runs(self.fixes, state.runs)
            notes = tuple((None, note) for note in planned.notes)
            return Step(part=Part.FIXES, notes=notes, planned=tuple(FollowUp(spec=s) for s in planned.specs))
        fix = queued(taken, taken[0].planned)
        if fix is None:
            return None
        return mode_step(state, fix.spec, state.with_cache(state.base).with_mode(fix.spec), Part.FIXES)
