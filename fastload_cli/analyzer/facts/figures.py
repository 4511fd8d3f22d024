"""What was measured, as the facts' questions read it: ``Figures``, gathered once from the runs
(``gather``)."""

from __future__ import annotations

from dataclasses import dataclass

from fastload_cli.records import BatchInfo, Breakdown, FixResult, LoaderInfo, RunSummary, SweepResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """The measured figures the facts are derived from."""

    real: RunSummary | None
    synthetic: RunSummary | None = None
    device_replay: RunSummary | None = None  # synthetic-device: the replayed batch already on the GPU
    no_aug: RunSummary | None = None
    cached: RunSummary | None = None  # samples decoded into memory: storage and decode free
    cached_no_aug: RunSummary | None = None  # ... and the augmentation replaced too
    loader: LoaderInfo | None = None  # the training loader, as the real run saw it
    cpu_count: int | None = None
    cuda_in_use: bool = False
    augmentations: tuple[str, ...] = ()
    substituted: tuple[str, ...] = ()  # what no-aug actually replaced
    disturbed: bool = False  # other processes took a large share of the CPU during a compared run
    sweep: SweepResult | None = None  # a num_workers sweep, when one ran
    breakdown: Breakdown | None = None  # where a sample's loading time goes, when it was timed
    batch: BatchInfo | None = None  # the training loader's first batch
    epoch_startup_s: tuple[float, ...] = ()  # real run: iter() to first batch, for each epoch
    # real run: each epoch a next iter() followed, its wall time (iter() to that iter()) and batches
    epoch_walls: tuple[tuple[float, int], ...] = ()
    between_epochs_s: tuple[float, ...] = ()  # real run: from an epoch's end to the next iter(), each time
    startup_busy: float | None = None  # real run: the workers' CPU share during those start-ups
    wait_ms_p50: float | None = None  # real run: the loop's wait per step, median
    wait_ms_p90: float | None = None
    # real run: its long waits recur once a round of num_workers batches (workers in lockstep that
    # fall short every round, not bursts a deeper queue could absorb)
    waits_in_lockstep: bool = False
    memory_available_bytes: int | None = None  # free memory when the real run started
    ranks_per_node: int = 1  # a data-parallel job's local ranks: they share the node's cores and memory
    tried: tuple[FixResult, ...] = ()  # runs with fixes applied, against the real run
    # real and synthetic measured again: each (real, synthetic) pair run side by side, in order
    # (``real`` and ``synthetic`` are then each mode's runs pooled)
    pairs: tuple[tuple[RunSummary, RunSummary], ...] = ()
