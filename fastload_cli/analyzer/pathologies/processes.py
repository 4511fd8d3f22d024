"""Pathologies of the worker processes, read from the parent's samples of them: thread pools that
oversubscribe the cores, unique memory that grows batch after batch, open file descriptors
against their limit. Pure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts import Facts
from fastload_cli.analyzer.pathologies.memory import failure
from fastload_cli.analyzer.window import NS, epoch_batches, loader_batches, steady_steps
from fastload_cli.formatting import pct, size
from fastload_cli.records import HostSample, Pathology, PathologyKind, ProcRole, ProcSample, RunResult

PAGE_BYTES = 4096  # a page faulted in: Linux's base page on x86-64 and most arm64 kernels
Series = list[tuple[int, ProcSample]]  # one process's samples, (t_ns, sample), in time order


def measured_window(run: RunResult) -> tuple[int, int] | None:
    """The real run's measured steps, first to last, as a time span."""
    steps = steady_steps(run)
    return (steps[0].previous_end_ns, steps[-1].end_ns) if steps else None


def worker_series(samples: Sequence[HostSample], window: tuple[int, int]) -> dict[int, Series]:
    """Each worker's samples inside ``window`` (a worker on its way out reads as 0 bytes: left out)."""
    found: dict[int, Series] = defaultdict(list)
    for sample in samples:
        if window[0] <= sample.t_ns <= window[1]:
            for proc in sample.procs:
                if proc.role is ProcRole.WORKER and proc.rss_bytes:
                    found[proc.pid].append((sample.t_ns, proc))
    return found


def busy_threads(series: Series) -> int | None:
    """Threads of one process that computed (``THREAD_BUSY_CORE`` of a core or more) between its
    first and last per-thread readings; None where those are under ``THREAD_READ_MIN_S`` apart."""
    read = [(t, dict(p.thread_cpu_s)) for t, p in series if p.thread_cpu_s]
    if len(read) < 2 or read[-1][0] - read[0][0] < th.THREAD_READ_MIN_S * NS:
        return None
    (t0, first), (t1, last) = read[0], read[-1]
    seconds = (t1 - t0) / NS
    return sum(1 for tid, cpu in last.items() if tid in first and (cpu - first[tid]) / seconds >= th.THREAD_BUSY_CORE)


def oversubscription(run: RunResult, f: Facts) -> Pathology | None:
    """Most workers compute on several threads (a BLAS, OpenMP or OpenCV pool started in every
    forked worker), and with the loop they outnumber the cores."""
    window, cores, loader = measured_window(run), f.cores_per_rank, f.loader
    if window is None or not cores or loader is None or loader.num_workers == 0:
        return None
    counts = [n for s in worker_series(run.host_samples, window).values() if (n := busy_threads(s)) is not None]
    several = [n for n in counts if n >= 2]
    computing = sum(counts) + 1  # the loop's own thread
    if not counts or len(several) * 2 <= len(counts) or computing <= cores:  # most of the workers
        return None
    finding = (
        f"{len(several)} of {len(counts)} workers computed on {min(several)} threads or more "
        f"({sum(counts)} computing threads in the workers, {computing} with the loop) on {cores} cores: a thread pool "
        "(OpenBLAS, MKL, OpenMP or OpenCV, sized for the whole machine) runs in every forked worker, and the pools "
        "take the cores from each other and from the training step."
    )
    return Pathology(
        kind=PathologyKind.THREAD_OVERSUBSCRIPTION,
        title="Thread pools in every worker oversubscribe the cores",
        finding=finding,
        advice=(
            "Limit each worker to one thread (torch does so for its own pool, not for numpy's, OpenCV's or "
            "OpenMP's): DataLoader(..., worker_init_fn=fastload_cli.fixes.WorkerThreads(1)), or in your own "
            "worker_init_fn threadpoolctl.threadpool_limits(1) and cv2.setNumThreads(1); or start training "
            "with OMP_NUM_THREADS=1 (which limits the main process too)."
        ),
        recommendation="one-thread-per-worker",
        fix="worker-threads=1",
        values={"workers": len(counts), "threads_per_worker": max(several), "computing": computing, "cores": cores},
    )


def memory_window(run: RunResult) -> tuple[int, int] | None:
    """From the end of the real run's warm-up to its end: fastload reads every worker's unique
    memory at both, however short the run."""
    batches = loader_batches(run)
    if not batches:
        return None
    return batches[min(max(run.warmup_batches, 1), len(batches)) - 1].wait_end_ns, run.ended_ns


def retained(series: Series) -> tuple[float, float, float] | None:
    """(unique bytes gained, bytes of pages faulted in, bytes still shared at first) between one
    worker's first and last readings of its unique memory, where its page faults grew steadily in
    between. Copy-on-write keeps every page it faults in, up to what it shares with its parent; a
    buffer mapped and unmapped every batch keeps none."""
    read = [(t, p) for t, p in series if p.unique_bytes and p.minor_faults is not None]
    if len(read) < 2 or read[-1][0] <= read[0][0]:
        return None
    (t0, first), (t1, last) = read[0], read[-1]
    faults = [(t / NS, float(p.minor_faults)) for t, p in series if t0 <= t <= t1 and p.minor_faults is not None]
    if _fit(faults) < th.MEMORY_GROWTH_FIT:
        return None
    assert first.minor_faults is not None and last.minor_faults is not None and last.unique_bytes and first.unique_bytes
    gained, faulted = last.unique_bytes - first.unique_bytes, (last.minor_faults - first.minor_faults) * PAGE_BYTES
    return float(gained), float(faulted), float(max(0, (first.rss_bytes or 0) - first.unique_bytes))


def _fit(points: list[tuple[float, float]]) -> float:
    """The share of variance a straight line explains (0 for fewer than three points or a flat line)."""
    if len(points) < 3:
        return 0.0
    mean_x, mean_y = sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)
    var_x, var_y = sum((x - mean_x) ** 2 for x, _ in points), sum((y - mean_y) ** 2 for _, y in points)
    if var_x <= 0 or var_y <= 0:
        return 0.0
    cov = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return cov * cov / (var_x * var_y)


def memory_growth(run: RunResult, f: Facts) -> Pathology | None:
    """Workers' own memory grows steadily while they load: Python objects touched in a forked
    worker copy the pages they live in (reference counts), one page at a time, every epoch again."""
    window, loader = memory_window(run), f.loader
    if window is None or loader is None or not loader.num_workers:
        return None
    kept = [k for s in worker_series(run.host_samples, window).values() if (k := retained(s)) is not None]
    growing = sorted(k for k in kept if k[0] >= th.MEMORY_GROWTH_MIN_BYTES and k[0] >= th.MEMORY_GROWTH_RETAINED * k[1])
    delivered = sum(1 for b in loader_batches(run) if window[0] < b.wait_end_ns <= window[1])
    if not kept or len(growing) * 2 <= len(kept) or not delivered:  # most of the workers, not one of two
        return None
    per_worker, faulted, shared = growing[len(growing) // 2]
    per_batch = per_worker * loader.num_workers / delivered  # each worker makes 1/N of them
    epoch, processes = epoch_batches(loader), loader.num_workers * f.ranks_per_node
    # what a worker can copy is at most what it shares: a straight line stops there
    projected = min(per_batch * epoch * f.ranks_per_node, shared * processes) if epoch else None
    available = f.memory_available_bytes
    if projected is not None and available and projected < th.MEMORY_GROWTH_NOTABLE * available:
        return None
    return Pathology(
        kind=PathologyKind.MEMORY_GROWTH,
        title="Workers' memory grows with every batch",
        finding=_growth_sentence(len(growing), len(kept), (per_worker, faulted), delivered, projected, f),
        advice=(
            "Python objects a worker touches (a list of file names, of dicts, of labels) have their pages copied out "
            "of the parent's memory by reference counting, one page at a time (pytorch#13246). Keep per-sample "
            "metadata in numpy arrays or tensors (np.array(paths, dtype=np.bytes_), not a list of str), "
            "or read it from a file in each worker."
        ),
        values={
            "workers_growing": len(growing),
            "bytes_per_worker": per_worker,
            "kept_share": per_worker / faulted if faulted else None,
            "batches": delivered,
            "bytes_per_batch": per_batch,
            "projected_epoch_bytes": projected,
            "available_bytes": available,
        },
    )


def _growth_sentence(
    growing: int, workers: int, grew: tuple[float, float], batches: int, projected: float | None, f: Facts
) -> str:
    gained, faulted = grew
    kept = f", keeping {pct(gained / faulted)} of the pages they faulted in" if faulted else ""
    line = (
        f"{growing} of {workers} workers' own memory (unique: shared pages left out) grew by {size(gained)} each "
        f"over {batches} batches after warm-up{kept}."
    )
    if projected is None:
        return line
    line += f" Over an epoch of {epoch_batches(f.loader)} batches the workers grow by up to {size(projected)}"
    available = f.memory_available_bytes
    line += f", {pct(projected / available)} of the {size(available)} available." if available else "."
    if f.loader is not None and f.loader.persistent_workers:
        line += " With persistent_workers, every epoch adds as much again."
    return line


def descriptors(run: RunResult, f: Facts) -> Pathology | None:
    """The main process holds open file descriptors near its limit: with the ``file_descriptor``
    sharing strategy every tensor received from a worker keeps one open until it is freed."""
    limit = run.env.fd_limit
    peak = max((p.fds for s in run.host_samples for p in s.procs if p.role is ProcRole.MAIN and p.fds), default=None)
    failed = failure(run, FDS_ERRORS)
    if limit is None or (not failed and (peak is None or peak < th.FDS_NOTABLE * limit)):
        return None
    shown = f"{peak} of its {limit}" if peak is not None else f"more than its {limit}"
    finding = (
        f"The main process held {shown} allowed file descriptors open"
        + (f" and the run failed: {failed}." if failed else ".")
        + f" Sharing strategy {run.env.sharing_strategy or 'unknown'}: every tensor a worker hands over "
        "keeps a descriptor open while it lives, so batches of many small tensors use many."
    )
    return Pathology(
        kind=PathologyKind.FILE_DESCRIPTORS,
        title="Open file descriptors near their limit",
        finding=finding,
        advice=(
            "Collate each field into one tensor per batch rather than a list of many small ones; or call "
            "torch.multiprocessing.set_sharing_strategy('file_system') before building the DataLoader; or raise "
            "the limit (ulimit -n)."
        ),
        values={"peak": peak, "limit": limit},
    )


FDS_ERRORS = ("received 0 items of ancdata", "too many open files")
