"""A run with its summary, carried as one pair from the moment it is measured; and where a run of
the script spent its time."""

from __future__ import annotations

from dataclasses import dataclass

from fastload_cli.records.measured import RunResult
from fastload_cli.records.report import RunSummary


@dataclass(frozen=True, slots=True)
class Measured:
    """One run and its summary, computed once when the run ended."""

    run: RunResult
    summary: RunSummary


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTime:
    """Where one process of the script spent its time, in seconds: its start (the interpreter, the
    imports, the script's set-up, to its first ``iter()``), its warm-up (workers started, warm-up
    batches; between an in-process run's settings), its measured windows, and its end (the stop,
    an epoch's end waited for, the shutdown)."""

    start_s: float
    warmup_s: float
    measured_s: float
    end_s: float
    again: bool = False  # it measured again what an earlier run measured, or a later one did
    breakdown: bool = False  # the breakdown's run: no window, each loading step timed
    breakdown_s: float = 0.0  # a run of modes: the breakdown timed inside it, between its windows

    @property
    def wall_s(self) -> float:
        return self.start_s + self.warmup_s + self.measured_s + self.end_s + self.breakdown_s
