"""A run with its summary, carried as one pair from the moment it is measured."""

from __future__ import annotations

from dataclasses import dataclass

from fastload_cli.records.measured import RunResult
from fastload_cli.records.report import RunSummary


@dataclass(frozen=True, slots=True)
class Measured:
    """One run and its summary, computed once when the run ended."""

    run: RunResult
    summary: RunSummary
