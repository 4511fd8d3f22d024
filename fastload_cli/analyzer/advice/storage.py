"""Reading the samples: from storage closer or in fewer, larger reads, or decoded once into RAM."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice.promises import (
    promise,
)
from fastload_cli.analyzer.advice.samples import decoded_bytes, step_share
from fastload_cli.analyzer.advice.shared import (
    bounded,
    capped,
    cited,
    input_bound,
    pipeline_bound,
)
from fastload_cli.analyzer.facts import Facts, speedup
from fastload_cli.formatting import pct, size
from fastload_cli.records import Bottleneck, FindingKind, Recommendation, Verdict


def hide_storage_latency(f: Facts, v: Verdict) -> Recommendation | None:
    """IO-bound: move the data closer, or read it in fewer, larger pieces."""
    if v.bottleneck is not Bottleneck.IO or not pipeline_bound(f, v):
        return None
    cached = capped(speedup(f.cached, f.real), v.speedup_ceiling)  # steady states, as the ceiling
    gain, how = promise(f, cached, f.cached) if cached is not None else (None, "")
    return Recommendation(
        id="faster-storage",
        title="Read from faster storage, or in fewer, larger reads",
        detail=(
            "Loading waits on storage or network latency. Copy the dataset to local disk or a RAM "
            "disk (/dev/shm) before training, cache samples in RAM when the dataset fits, or pack "
            "small files into record files (WebDataset shards, LMDB) read sequentially."
            + (
                f" With every sample read and decoded into memory first (cached), training ran "
                f"{speedup(f.cached, f.real):.2f}x as fast (measured): storage that costs nothing gives that much."
                + how
                if cached is not None
                else ""
            )
        ),
        expected_speedup=gain if cached is not None else bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=cached is not None,
        evidence=cited(
            v,
            FindingKind.LOADERS_IDLE,
            FindingKind.LOADERS_MIXED,
            FindingKind.KERNEL_READS,
            FindingKind.IOWAIT,
            FindingKind.READ_RATE,
        ),
    )


def cache_in_ram(f: Facts, v: Verdict) -> Recommendation | None:
    """Reading and decoding dominate, and the decoded dataset fits in memory. Not for a dataset
    already in memory (``IN_MEMORY_DATASETS``): its __getitem__ slices tensors, there is nothing
    to read or decode, and its items cost microseconds whatever their share."""
    loader, found = f.loader, f.breakdown
    share = step_share(f, "getitem")
    if not input_bound(v) or found is None or share < th.BREAKDOWN_DOMINANT or loader is None:
        return None
    if loader.dataset_type in th.IN_MEMORY_DATASETS:
        return None
    if loader.dataset_len is None or f.memory_available_bytes is None:
        return None
    per_sample = decoded_bytes(f)
    if per_sample is None:
        return None
    needed = per_sample * loader.dataset_len
    if needed > th.RAM_CACHE_SHARE * f.memory_available_bytes:
        return None
    return Recommendation(
        id="cache-decoded-samples",
        title=f"Cache decoded samples in RAM: the dataset needs about {size(needed)}",
        detail=(
            f"Reading and decoding take {pct(share)} of a sample's loading time (measured), and the "
            f"{loader.dataset_len:,} decoded samples need about {size(needed)} ({size(per_sample)} each) of the "
            f"{size(f.memory_available_bytes)} free. Decode once, keep the results, and apply only the random "
            "transforms per epoch, e.g.:\n"
            "    self.cache = [decode(path) for path in self.paths]  # in __init__, or filled on first use"
        ),
        expected_speedup=bounded(1 / (1 - share) if share < 1 else None, v.speedup_ceiling),
        measured=False,
        evidence=(f"Breakdown: read and decode {pct(share)} of {found.ms_per_sample:.1f} ms per sample.",),
    )
