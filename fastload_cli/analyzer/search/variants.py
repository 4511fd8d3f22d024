"""``sweep-workers --prefetch-factor/--pin-memory``: the variants of the setting the search chose,
each a step of its own, measured once the search is done."""

from __future__ import annotations

from dataclasses import dataclass

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search.outcome import conclude
from fastload_cli.analyzer.search.state import State
from fastload_cli.analyzer.search.step import Step, single
from fastload_cli.records import Mode, ModeSpec


@dataclass(frozen=True, slots=True)
class Variants:
    """The prefetch_factor / pin_memory variants to measure at the setting the search chose."""

    steps: tuple[Step, ...]
    notes: tuple[str, ...]  # what was asked for but is not measured, and why


def variants(state: State, prefetch_factors: tuple[int, ...], pin_both: bool, cuda: bool) -> Variants:
    """The variants of the chosen setting, each sized as the search sizes a setting now."""
    loader = state.loader
    result = conclude(state.points, state.current, state.limits, None)
    if loader is None or result is None or result.recommended_workers is None:
        return Variants(steps=(), notes=())
    best, notes = result.recommended_workers, []
    own_factor = loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR
    factors = [f for f in prefetch_factors if f != own_factor]
    if best == 0 and factors:
        notes.append("--prefetch-factor: skipped, the best setting has no workers to prefetch.")
        factors = []
    specs = [ModeSpec(mode=Mode.WORKERS, workers=best, prefetch_factor=f) for f in factors]
    if pin_both and cuda:
        specs.append(ModeSpec(mode=Mode.WORKERS, workers=best, pin_memory=not loader.pin_memory))
    elif pin_both:
        notes.append(
            "--pin-memory both: skipped, CUDA is not available (pinned memory only speeds up copies to a GPU)."
        )
    return Variants(steps=tuple(single(state, spec) for spec in specs), notes=tuple(notes))
