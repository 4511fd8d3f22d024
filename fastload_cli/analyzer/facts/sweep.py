"""The num_workers sweep, as the verdict reads it."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts.figures import Figures


class SweepFacts(Figures):
    __slots__ = ()

    @property
    def sweep_confirms_input(self) -> bool:
        """A sweep measured a num_workers setting much faster than the script's own."""
        found = self.sweep
        return (
            found is not None
            and found.significant
            and found.speedup is not None
            and found.speedup >= th.SWEEP_CONFIRMS_INPUT
        )

    @property
    def sweep_gain(self) -> float | None:
        """How much faster than the script's own setting a sweep measured another, beyond the
        noise, or None. Changing only the loader's settings, it bounds the input pipeline's cost
        from below, whatever the comparison with free inputs resolved."""
        found = self.sweep
        return found.speedup if found is not None and found.significant and found.speedup is not None else None
