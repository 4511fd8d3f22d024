"""What the machine gives the input pipeline, against what it takes: /dev/shm against the batches
in flight (and a worker killed by a bus error when it ran out), and the memory a recommendation
would cost against the memory available. Pure."""

from __future__ import annotations

from dataclasses import replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import size
from fastload_cli.records import Pathology, PathologyKind, ProcRole, Recommendation, RunResult

SHM_ERRORS = (
    "bus error",
    "insufficient shared memory",
    "unable to allocate shared memory",
    "unable to write to file </torch_",
)


def in_flight_bytes(f: Facts, workers: int | None = None) -> int | None:
    """Bytes of batches the workers hold in /dev/shm at once: batch x prefetch_factor x workers x
    local ranks (``workers``: another setting than the loader's own)."""
    loader, batch = f.loader, f.batch
    if loader is None or batch is None or not batch.bytes_per_batch:
        return None
    workers = loader.num_workers if workers is None else workers
    prefetch = loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR
    return batch.bytes_per_batch * prefetch * workers * f.ranks_per_node


def workers_that_fit(f: Facts, shm_bytes: int) -> int | None:
    """The most workers whose batches in flight stay within ``SHM_NOTABLE`` of ``shm_bytes``."""
    one = in_flight_bytes(f, 1)
    return int(th.SHM_NOTABLE * shm_bytes // one) if one else None


def shared_memory(run: RunResult, f: Facts) -> Pathology | None:
    """Batches in flight near the size of /dev/shm, or a worker killed by a bus error."""
    total, need, failed = run.env.shm_total_bytes, in_flight_bytes(f), failure(run, SHM_ERRORS)
    if total is None or (not failed and (need is None or need < th.SHM_NOTABLE * total)):
        return None
    loader = f.loader
    fit = workers_that_fit(f, total)
    finding = f"/dev/shm holds {size(total)}"
    if need is not None and loader is not None and f.batch is not None:
        finding += (
            f"; the batches in flight take {size(need)} of it ({size(f.batch.bytes_per_batch)} a batch x "
            f"prefetch_factor {loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR} x {loader.num_workers} workers"
            + (f" x {f.ranks_per_node} local ranks" if f.ranks_per_node > 1 else "")
            + ")"
        )
    finding += (
        f". A worker ran out of it: {failed}."
        if failed
        else ": little room is left for pinned copies, a second loader or another job on the machine."
    )
    return Pathology(
        kind=PathologyKind.SHARED_MEMORY,
        title="Batches in flight fill /dev/shm" if not failed else "Workers ran out of shared memory (/dev/shm)",
        finding=finding,
        advice=(
            "Give /dev/shm more room (docker run --shm-size=8g; in Kubernetes an emptyDir with medium: Memory), or "
            "keep fewer batches in flight: "
            + (f"at most {fit} workers at this batch size, " if fit is not None else "fewer workers, ")
            + "prefetch_factor=1, or smaller batches."
        ),
        values={"shm_bytes": total, "in_flight_bytes": need, "workers_that_fit": fit},
    )


def failure(run: RunResult, signs: tuple[str, ...]) -> str | None:
    """The first of ``signs`` (lower case) in the run's exception message or last output, if any."""
    text = f"{run.error.message if run.error else ''}\n{run.output_tail}".lower()
    return next((sign for sign in signs if sign in text), None)


def worker_bytes(run: RunResult) -> int | None:
    """A worker's own memory (unique), the median of the real run's workers at their peaks."""
    peaks: dict[int, int] = {}
    for sample in run.host_samples:
        for proc in sample.procs:
            if proc.role is ProcRole.WORKER and proc.unique_bytes:
                peaks[proc.pid] = max(peaks.get(proc.pid, 0), proc.unique_bytes)
    return sorted(peaks.values())[len(peaks) // 2] if peaks else None


def memory_cost(rec: Recommendation, f: Facts, per_worker: int | None) -> int | None:
    """The memory following ``rec`` adds: new workers (each its own memory and its batches in
    flight), a deeper prefetch (batches in flight); None where it adds none that fastload knows of."""
    loader, sweep = f.loader, f.sweep
    if loader is None:
        return None
    if rec.id == "increase-num-workers" and sweep is not None and sweep.memory_cost_bytes is not None:
        return sweep.memory_cost_bytes
    if rec.id == "larger-prefetch-factor":
        return in_flight_bytes(f)  # doubling the prefetch doubles what is in flight
    target = rec.num_workers if rec.id == "increase-num-workers" else None
    if target is None or target <= loader.num_workers or per_worker is None:
        return None
    added = target - loader.num_workers
    return (per_worker + (in_flight_bytes(f, 1) or 0)) * added * f.ranks_per_node


def priced(rec: Recommendation, f: Facts, per_worker: int | None) -> Recommendation:
    """``rec`` with the memory it costs said, and, where that is more than the machine has free,
    said first: it is not advice to follow as is."""
    cost, available = memory_cost(rec, f, per_worker), f.memory_available_bytes
    if cost is None or cost <= 0:
        return rec
    line = f"Memory: about {size(cost)} more" + (f", of the {size(available)} available." if available else ".")
    if available and cost > th.MEMORY_COST_MAX * available:
        line = (
            f"Memory: it needs about {size(cost)} more, more than the {size(available)} available allows: "
            "follow it only with fewer workers or smaller batches."
        )
        return replace(rec, title=f"{rec.title} (needs more memory than is free)", detail=f"{rec.detail}\n{line}")
    return replace(rec, detail=f"{rec.detail}\n{line}")
