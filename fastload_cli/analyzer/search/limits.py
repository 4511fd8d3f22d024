"""What the search may measure: ``Limits`` (as asked on the command line, bounded for the loader
being swept), and what a setting's processes would need of the machine's memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.window import epoch_batches, primary_loader_id, steady_window
from fastload_cli.config import DEFAULT_MAX_WORKERS
from fastload_cli.formatting import size
from fastload_cli.records import LoaderInfo, RunResult, SweepPoint


@dataclass(frozen=True, slots=True)
class Limits:
    max_workers: int = DEFAULT_MAX_WORKERS
    memory_budget_bytes: int | None = None  # what one setting's processes may use together
    grid: tuple[int, ...] | None = None  # measure exactly these settings (and the script's own)
    refine: int = th.SWEEP_REFINE_POINTS
    confirm: bool = True  # measure the best and the script's own setting twice when they differ
    epoch_batches: int | None = None  # batches per epoch of the loader being swept
    batch_size: int | None = None  # samples per batch of that loader
    prefetch_factor: int = th.DEFAULT_PREFETCH_FACTOR
    min_workers: int = 0  # the climb starts here (for IO-bound loading, at the script's own setting)
    persistent_workers: bool = False  # the loader keeps its workers across epochs
    guided: bool = True  # start from the prediction (``predict``, ``guided``) once the own setting is measured
    in_process: bool = False  # settings in turn in one run of the script where the loader allows it
    shm_bytes: int | None = None  # /dev/shm, where workers hand their batches over
    batch_bytes: int | None = None  # one batch of the loader being swept
    # A time budget (diagnose's): more rounds of whole-epoch pairs start only while one would end
    # within ``budget_s`` of the command's start; ``more_epochs`` is False once none would. The
    # rounds begun are measured whole, unless ``finish_rounds`` is False: a round begun in one run
    # of the script that ended first, whose rest in runs of their own the budget does not hold.
    budget_s: float | None = None
    more_epochs: bool = True
    finish_rounds: bool = True
    # False once the budget holds no further setting the plan asks for: the search ends with those measured.
    more_settings: bool = True
    fewer: bool = True  # a setting with fewer workers than the script's own may be advised

    def with_loader(self, loader: LoaderInfo | None) -> Limits:
        """These limits for the loader the sweep measures (its epoch length and prefetch_factor)."""
        if loader is None:
            return self
        return replace(
            self,
            epoch_batches=epoch_batches(loader),
            batch_size=loader.batch_size,
            prefetch_factor=loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR,
            persistent_workers=loader.persistent_workers,
        )

    def with_machine(self, run: RunResult | None) -> Limits:
        """These limits with /dev/shm as ``run``'s child saw it and the size of its loader's batch."""
        if run is None or run.env.shm_total_bytes is None:
            return self
        loader_id = primary_loader_id(run)
        layout = next((lo for lo in run.layouts if lo.loader_id == loader_id), None)
        batch = sum(leaf.nbytes for leaf in layout.leaves) if layout is not None else None
        return replace(self, shm_bytes=run.env.shm_total_bytes, batch_bytes=batch or None)

    def shm_full(self, workers: int) -> str | None:
        """Why ``workers`` would not fit /dev/shm: their batches in flight (``prefetch_factor`` each)
        past ``SHM_NOTABLE`` of it, where a worker dies of a bus error or cannot allocate."""
        if not workers or self.shm_bytes is None or not self.batch_bytes:
            return None
        need = self.batch_bytes * self.prefetch_factor * workers
        if need <= th.SHM_NOTABLE * self.shm_bytes:
            return None
        return (
            f"{workers} workers would keep {size(need)} of batches in /dev/shm ({size(self.batch_bytes)} a batch x "
            f"prefetch_factor {self.prefetch_factor}), and /dev/shm holds {size(self.shm_bytes)}"
        )

    def too_many(self, workers: int) -> str | None:
        """Why ``workers`` cannot be measured with this loader, if it cannot: an epoch starts with
        ``workers * prefetch_factor`` batches arriving at once and ends draining as many, and
        between the two it must hold a few rounds of one batch per worker for a steady rate."""
        epoch = self.epoch_batches
        if epoch is None or not workers or steady_window(workers, self.prefetch_factor, epoch):
            return None
        need = max(th.MIN_STEADY_BATCHES, th.SWEEP_ROUNDS * workers)
        return (
            f"an epoch has {epoch} batches: {workers} workers would prefetch {workers * self.prefetch_factor} "
            f"of them at its start and drain as many at its end, leaving fewer than the {need} a steady "
            "window needs"
        )


def capped(workers: int, points: Sequence[SweepPoint], limits: Limits) -> tuple[int, str | None]:
    """``workers``, or the most under it that ``max_workers`` and the memory left allow, and why."""
    if workers > limits.max_workers:
        return limits.max_workers, f"it reached --max-workers {limits.max_workers}"
    for n in range(workers, 0, -1):
        why = over_budget(points, n, limits)
        if why is None:
            return n, None if n == workers else over_budget(points, workers, limits)
    return 0, None


def projected_rss(points: Sequence[SweepPoint], workers: int) -> int | None:
    """Process-tree RSS at ``workers``, extrapolated from the two largest settings measured.

    RSS counts pages a worker shares with the main process in each process, so this errs high.
    """
    known = sorted({p.workers: p.rss_bytes for p in points if p.rss_bytes and p.variant is None}.items())
    if len(known) < 2 or workers <= known[-1][0]:
        return None
    (w1, r1), (w2, r2) = known[-2], known[-1]
    per_worker = max(0.0, (r2 - r1) / (w2 - w1))
    return int(r2 + per_worker * (workers - w2))


def over_budget(points: Sequence[SweepPoint], workers: int, limits: Limits) -> str | None:
    """Why ``workers`` would not fit what the machine has: /dev/shm, or the memory left."""
    full = limits.shm_full(workers)
    if full is not None:
        return full
    need = projected_rss(points, workers)
    budget = limits.memory_budget_bytes
    if need is None or budget is None or need <= budget:
        return None
    return f"{workers} workers would need about {size(need)} of memory and {size(budget)} is free"
