"""What ``fastload try`` and ``fastload fix`` found: each fix measured (or refused) against the
real run, and each change written into the script and proven in plain runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class FixResult:
    """One fix ``fastload try`` applied (or refused), and what it measured against the real run."""

    name: str  # the fix as asked for (``prefetch-factor=4``), or a combination joined by "+"
    speedup: float | None  # fix / real throughput
    spread: float | None  # the relative difference the two runs cannot tell from noise
    memory_bytes: int | None  # the fix run's process-tree memory minus the real run's
    measured: bool  # a run with the fix applied measured it
    applies: bool  # False: refused (or could not be applied inside the script), see reason
    reason: str  # why it does not apply, or what the measurement says
    code: str  # the change that makes it permanent
    # Whether the run trained on the same batches as the unchanged script (its first ones), and
    # what the comparison found; None where nothing was compared.
    same_batches: bool | None = None
    batches: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvenChange:
    """A change ``fastload fix`` wrote into a copy of the script and ran in plain runs against the
    script as it is: its gain (the median round) and interval (the slowest and fastest round)."""

    name: str  # the recommendation it writes (several joined by "+": the winners together)
    gain: float | None  # None: its plain run failed
    low: float | None
    high: float | None
    rounds: int  # rounds it was measured in
    wins: bool  # faster than the script as it is in every round
    kept: bool  # the change the patch holds
    failed: str | None = None  # what the script said last, where its plain run failed


@dataclass(frozen=True, slots=True, kw_only=True)
class NotWritten:
    """A recommendation ``fastload fix`` did not write as a change, and why."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PatchResult:
    """``fastload fix``: each change proven in plain runs, the one kept as a unified diff, and the
    recommendations not written as a change."""

    changes: tuple[ProvenChange, ...]
    not_written: tuple[NotWritten, ...]
    diff: str | None  # the kept change, for ``patch -p1``; None: nothing was kept
    rounds: int  # the plain runs' settings: rounds, and each run's epochs and batches an epoch
    epochs: int
    epoch_batches: int
