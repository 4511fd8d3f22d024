"""Start-up and epochs: workers started again every epoch, what an epoch costs besides its steps,
and a steady-state gain as training pays it over whole epochs."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts.figures import Figures
from fastload_cli.analyzer.window import epoch_batches
from fastload_cli.records import RunSummary


class EpochFacts(Figures):
    __slots__ = ()

    @property
    def startup_s(self) -> float | None:
        """The median epoch's start-up, when the workers start again every epoch."""
        loader, starts = self.loader, sorted(self.epoch_startup_s)
        if loader is None or loader.num_workers == 0 or loader.persistent_workers or not starts:
            return None
        return starts[len(starts) // 2]

    @property
    def epoch_s(self) -> float | None:
        """One epoch's steps at the real run's steady throughput, start-up left out."""
        real, batches = self.real, epoch_batches(self.loader)
        rate = real.throughput_batches_per_s if real is not None else None
        return batches / rate if batches and rate else None

    @property
    def epoch_overhead_s(self) -> float | None:
        """What an epoch costs besides its steps at the steady rate: the workers' start-up, the
        burst and drain around the steady window, whatever the script does between epochs. From
        the real run's whole epochs (the median), else the start-up alone where workers restart."""
        rate = self.real.throughput_batches_per_s if self.real is not None else None
        beyond = sorted(wall - batches / rate for wall, batches in self.epoch_walls) if rate else []
        return max(0.0, beyond[len(beyond) // 2]) if beyond else self.startup_s

    def over_epochs(self, gain: float | None) -> float | None:
        """A steady-state gain as training pays it: a fix that speeds the epoch's steps leaves what
        the epoch costs besides them (``epoch_overhead_s``) as it was."""
        overhead, epoch = self.epoch_overhead_s, self.epoch_s
        if gain is None or overhead is None or epoch is None or gain <= 1:
            return gain
        return (overhead + epoch) / (overhead + epoch / gain)

    @property
    def restart_share(self) -> float | None:
        """The share of training time spent starting the workers again, every epoch."""
        startup, epoch = self.startup_s, self.epoch_s
        return startup / (startup + epoch) if startup is not None and epoch is not None else None

    @property
    def restarts_dominate(self) -> bool:
        """Worker start-up, measured in more than one epoch, takes an input-bound share of the time."""
        share = self.restart_share
        return (
            share is not None and share >= th.RESTART_INPUT_BOUND and len(self.epoch_startup_s) >= th.RESTART_MIN_EPOCHS
        )


def crossed_epochs(s: RunSummary | None) -> bool:
    """``s``'s window held epoch boundaries that cost it time: its steps alone ran at least
    ``EPOCH_BOUNDARY_NOTABLE`` faster than the window."""
    if s is None or not s.epoch_boundaries or not s.steps_samples_per_s or not s.throughput_samples_per_s:
        return False
    return s.steps_samples_per_s >= s.throughput_samples_per_s * (1 + th.EPOCH_BOUNDARY_NOTABLE)


def boundaries_alone(real: RunSummary | None, free: RunSummary | None) -> bool:
    """The real run's window crossed epoch boundaries and the free-input run's did not: what an
    epoch costs besides its steps is in the one and not the other."""
    return crossed_epochs(real) and not crossed_epochs(free)
