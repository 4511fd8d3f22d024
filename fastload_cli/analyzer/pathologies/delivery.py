"""Pathologies in how batches reach the loop: slow samples that stall the batches behind them
(in-order delivery), one worker delivering nearly every batch, and workers that deliver the same
samples. Each reads the real run's batches: their waits, the worker that made each, and, for an
IterableDataset, a digest of each batch's first and last samples. Pure."""

from __future__ import annotations

from collections import Counter

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts import Facts
from fastload_cli.analyzer.window import NS, in_lockstep, loader_batches, steady_steps
from fastload_cli.formatting import pct
from fastload_cli.records import Pathology, PathologyKind, RunResult

SHARD_ADVICE = (
    "Give each worker its own part of the stream: in the dataset's __iter__, "
    "`info = torch.utils.data.get_worker_info()` and read only the shards where "
    "`index % info.num_workers == info.id` (under torchrun, split by rank first: "
    "`torch.utils.data.distributed` or `datasets.distributed.split_dataset_by_node`)."
)


def slow_samples(run: RunResult, f: Facts) -> Pathology | None:
    """A few batches stall the loop for far longer than the rest wait, and longer than a round of
    steps (the time each worker has to make its batch): slow samples, which in-order delivery turns
    into stalls while the other workers' batches wait behind them. Not stalls that recur every round,
    a round apart: those are workers in lockstep, and no order of delivery helps them."""
    loader, steps = f.loader, steady_steps(run)
    if loader is None or loader.num_workers < 2 or len(steps) < th.MIN_STEADY_BATCHES:
        return None  # with one worker nothing can overtake a slow batch
    waits = [s.wait_ns for s in steps]
    total, wall = sum(waits), sum(s.step_ns for s in steps)
    median = sorted(waits)[len(waits) // 2]
    # a round: the time each worker has to make its batch; late by less is how batches' costs vary
    round_ns = loader.num_workers * sorted(s.step_ns for s in steps)[len(steps) // 2]
    line = max(th.SLOW_TAIL_RATIO * median, th.SLOW_TAIL_MIN_MS * 1e6, round_ns)
    stalled = [i for i, w in enumerate(waits) if w >= line]
    stalls = [waits[i] for i in stalled]
    if wall <= 0 or total < th.PATHOLOGY_WAIT_NOTABLE * wall or len(stalls) < th.SLOW_TAIL_MIN_STALLS:
        return None
    if len(stalls) > th.SLOW_TAIL_MAX_BATCHES * len(waits) or sum(stalls) < th.SLOW_TAIL_SHARE * total:
        return None  # most batches wait: the pipeline is slow throughout, not held up by a few samples
    if not _held_up(waits, stalled, loader.num_workers, median):
        return None
    held = sum(stalls) / total
    finding = (
        f"{len(stalls)} of {len(steps)} batches ({pct(len(stalls) / len(steps))}) stalled the loop "
        f"{sum(stalls) / len(stalls) / 1e6:.0f} ms on average, {pct(held)} of all its waiting, while the median wait "
        f"was {median / 1e6:.1f} ms: a few slow samples hold up every batch behind them, because the "
        f"{loader.num_workers} workers' batches are handed over in order."
    )
    return Pathology(
        kind=PathologyKind.SLOW_SAMPLES,
        title="Slow samples stall the batches behind them",
        finding=finding,
        advice=(
            "Let ready batches overtake a slow one: DataLoader(..., in_order=False) (torch 2.6 and later; batch "
            "order then varies from run to run), and a deeper prefetch_factor so that more are ready. "
            "Better still, find the slow samples (very large files, a slow storage tier) and fix them at the source."
        ),
        recommendation="deliver-out-of-order",
        fix="in-order",
        values={
            "stalls": len(stalls),
            "batches": len(steps),
            "stall_ms_mean": sum(stalls) / len(stalls) / 1e6,
            "wait_ms_median": median / 1e6,
            "stall_share_of_wait": held,
            "stall_excess_s": sum(w - median for w in stalls) / NS,
            "wall_s": wall / NS,
        },
    )


def _held_up(waits: list[int], stalled: list[int], workers: int, median: int) -> bool:
    """The stalls held up ready batches, as a slow sample does: behind most of them one of the other
    workers' batches was ready (else every worker is slow), and they fall where the slow samples
    are, not a round apart every round (workers in lockstep: every batch of a round equally late)."""
    if 2 * sum(_others_ready(waits, i, workers, median) for i in stalled) <= len(stalled):
        return False
    return not in_lockstep(stalled, len(waits), workers)


def _others_ready(waits: list[int], stall: int, workers: int, median: int) -> bool:
    """Among the batches after a stall, the other workers' (the next ``workers - 1``), one was
    ready: the stall held it up, as in-order delivery does behind a slow sample."""
    ready = max(th.SLOW_TAIL_READY_RATIO * median, th.SLOW_TAIL_READY_MS * 1e6)
    return any(w <= ready for w in waits[stall + 1 : stall + workers])


def idle_workers(run: RunResult, f: Facts) -> Pathology | None:
    """One worker delivered nearly every batch: the others had nothing to do (an IterableDataset
    whose stream ran out in every worker but one, say)."""
    loader = f.loader
    counts = Counter(s.batch.worker for s in steady_steps(run) if s.batch.worker is not None)
    total = sum(counts.values())
    if loader is None or loader.num_workers < 2 or total < th.IDLE_WORKERS_MIN_BATCHES:
        return None
    worker, most = counts.most_common(1)[0]
    if most < th.IDLE_WORKERS_SHARE * total:
        return None
    others = loader.num_workers - 1
    finding = (
        f"Worker {worker} delivered {most} of {total} measured batches ({pct(most / total)}); the other {others} "
        f"delivered {total - most}. With {loader.num_workers} workers each would deliver "
        f"{pct(1 / loader.num_workers)}: "
        f"{others} of them idle while the loop waits on one."
    )
    advice = (
        SHARD_ADVICE
        if loader.iterable_dataset
        else (
            "The workers take turns by batch, so one delivering nearly all of them means the others stopped or "
            "stalled: look for an exception or a lock in the dataset."
        )
    )
    return Pathology(
        kind=PathologyKind.IDLE_WORKERS,
        title="One worker delivers nearly every batch",
        finding=finding,
        advice=advice,
        values={"worker": worker, "batches": most, "measured": total, "workers": loader.num_workers},
    )


def duplicate_samples(run: RunResult, f: Facts) -> Pathology | None:
    """Workers of an IterableDataset that yield the same samples: each runs ``__iter__`` in full
    unless it shards by ``get_worker_info()``, and training sees every sample once per worker."""
    loader = f.loader
    keys = [b.samples_key for b in loader_batches(run) if b.samples_key is not None]
    if loader is None or not loader.iterable_dataset or loader.num_workers < 2 or not keys:
        return None
    repeated = len(keys) - len(set(keys))
    if repeated < th.DUPLICATES_MIN or repeated < th.DUPLICATES_SHARE * len(keys):
        return None
    copies = len(keys) / len(set(keys))
    finding = (
        f"{repeated} of {len(keys)} batches ({pct(repeated / len(keys))}) repeated the samples of an earlier batch, "
        f"byte for byte: each sample arrived {copies:.1f} times. The IterableDataset's {loader.num_workers} workers "
        "each run its __iter__ in full, so every worker yields the same stream; training sees each sample "
        "as many times as there are workers per epoch."
    )
    return Pathology(
        kind=PathologyKind.DUPLICATE_SAMPLES,
        title="Workers yield the same samples: training sees duplicates",
        finding=finding,
        advice=SHARD_ADVICE,
        values={"repeated": repeated, "batches": len(keys), "copies": copies, "workers": loader.num_workers},
    )
