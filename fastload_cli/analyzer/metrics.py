"""Per-run numbers: pure functions of one ``RunResult``, over its measured window (``window``:
which batches count, and the steps they make).

Counters sampled outside the child (CPU seconds, bytes read) are cumulative, so their rate over
the window is a difference of interpolated values at the window's edges; the window can be
several spans when it crosses epochs.
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import replace

from fastload_cli.analyzer.counters import (
    Span,
    foreign_cpu_fraction,
    gpu_util_percent,
    role_delta,
    steal_fraction,
    system_cpu,
    tree_delta,
)
from fastload_cli.analyzer.failures import describe_error
from fastload_cli.analyzer.ranks import job_summary, with_step_split
from fastload_cli.analyzer.window import (
    NS,
    Batches,
    LoopStep,
    first_replay,
    folded,
    loader_batches,
    past_warmup,
    primary_loader,
    primary_loader_id,
    steady_steps,
    totals,
)
from fastload_cli.records import (
    HostSample,
    ProcRole,
    RunResult,
    RunSummary,
)

# --------------------------------------------------------------------------------------------
# The summary
# --------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) with linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def startup_s(run: Batches) -> float | None:
    """From the first iter() of the training loader to its first batch."""
    loader_id = primary_loader_id(run)
    first_iter = next((it for it in run.iterators if it.loader_id == loader_id), None)
    first_batch = next((b for b in run.batches if b.loader_id == loader_id), None)
    if first_iter is None or first_batch is None:
        return None
    return (first_batch.wait_end_ns - first_iter.started_ns) / NS


def loader_busy_fraction(run: RunResult, steps: list[LoopStep], window: list[Span], window_s: float) -> float | None:
    """Share of time the loading processes were on a CPU or runnable, waiting for one.

    With workers: the workers' CPU and run-queue time over the window, per worker. Without
    workers the main thread loads while the loop waits: its CPU (and run-queue) time during the
    waits, as the child measured it, over the time waited.
    """
    loader = primary_loader(run)
    if loader is None or window_s <= 0:
        return None
    if loader.num_workers == 0:
        waited = sum(s.batch.wait_ns for s in steps)
        if waited <= 0 or any(s.batch.thread_cpu_ns is None for s in steps):
            return None
        on_cpu = sum((s.batch.thread_cpu_ns or 0) + (s.batch.thread_runq_ns or 0) for s in steps)
        return min(1.0, on_cpu / waited)
    return workers_busy_fraction(run, window, window_s)


def loader_kernel_fraction(run: RunResult, window: list[Span]) -> float | None:
    """Share of the DataLoader workers' CPU time over the window spent in the kernel."""
    cpu = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.cpu_s)
    kernel = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.kernel_cpu_s)
    if cpu is None or kernel is None or cpu <= 0:
        return None
    return min(1.0, kernel / cpu)


def loader_blocked_fraction(run: RunResult, window: list[Span]) -> float | None:
    """Share of the loading processes' samples in the window that found them blocked on storage
    (the workers; the main process when it loads itself), or None where no state was read."""
    loader = primary_loader(run)
    if loader is None:
        return None
    role = ProcRole.WORKER if loader.num_workers > 0 else ProcRole.MAIN
    states = [
        p.blocked
        for s in run.host_samples
        if any(a <= s.t_ns <= b for a, b in window)
        for p in s.procs
        if p.role is role and p.blocked is not None
    ]
    return sum(states) / len(states) if states else None


def workers_busy_fraction(run: RunResult, window: list[Span], window_s: float) -> float | None:
    """The DataLoader workers' CPU and run-queue time over the window, per worker."""
    loader = primary_loader(run)
    if loader is None or loader.num_workers == 0 or window_s <= 0:
        return None
    cpu = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.cpu_s)
    if cpu is None:
        return None
    runq = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.runq_s) or 0.0
    return min(1.0, (cpu + runq) / (window_s * loader.num_workers))


def peak_rss(samples: tuple[HostSample, ...]) -> int | None:
    totals = [sum(p.rss_bytes for p in s.procs if p.rss_bytes is not None) for s in samples if s.procs]
    return max(totals) if totals and any(totals) else None


def summarize(run: RunResult) -> RunSummary:
    """The run's figures; for a data-parallel job, those of the rank it is seen from with the job's
    throughput, and every rank's."""
    if not run.ranks:
        return _summarize(run)
    run = _after_switches(run)
    own = _summarize(run)
    ranks = [replace(_summarize(r), rank=r.rank, local_rank=r.local_rank) for r in run.ranks]
    own = replace(own, rank=run.rank, local_rank=run.local_rank, ranks_changed=run.spec.ranks)
    return job_summary(own, ranks)


def _after_switches(job: RunResult) -> RunResult:
    """A job whose ranks switched to replaying one batch (on every rank, or on some alone), with
    every rank's window starting after the last rank's switch: the others waited for it inside
    their step, at the all-reduce."""
    switches = [first_replay(loader_batches(r)) for r in job.ranks]
    last = max((i for i in switches if i is not None), default=None)
    if last is None:
        return job

    def after(run: RunResult) -> RunResult:
        return replace(run, warmup_batches=max(run.warmup_batches, last + 1))

    return replace(after(job), ranks=tuple(after(r) for r in job.ranks))


def _summarize(run: RunResult) -> RunSummary:
    steps = steady_steps(run)
    measured = totals(run, steps)
    window, window_ns, samples = measured.window, measured.window_ns, measured.samples
    window_s = window_ns / NS
    loader = primary_loader(run)
    main_cpu = role_delta(run.host_samples, ProcRole.MAIN, window, lambda p: p.cpu_s)
    worker_cpu = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.cpu_s)
    read = tree_delta(run.host_samples, window, lambda p: p.read_bytes)
    system = system_cpu(run.host_samples, window)
    steps_ms = [s.step_ns / 1e6 for s in steps]
    compute_ms = [(s.step_ns - s.wait_ns) / 1e6 for s in steps]
    summary = RunSummary(
        spec=run.spec,
        status=run.status,
        num_workers=loader.num_workers if loader is not None else None,
        batches=measured.steps,
        samples=samples,
        wall_s=window_s if window_s > 0 else None,
        throughput_samples_per_s=_per_s(samples, window_s),
        throughput_batches_per_s=_per_s(measured.steps, window_s),
        data_wait_fraction=(measured.wait_ns / window_ns) if window_ns > 0 else None,
        step_ms_p50=percentile(steps_ms, 0.5),
        step_ms_p90=percentile(steps_ms, 0.9),
        startup_s=startup_s(run),
        compute_ms_p50=percentile(compute_ms, 0.5),
        main_cpu_percent=_percent(main_cpu, window_s),
        workers_cpu_percent=(0.0 if loader is not None and loader.num_workers == 0 else _percent(worker_cpu, window_s)),
        gpu_util_percent=gpu_util_percent(run, window),
        read_bytes_per_s=_per_s(read, window_s),
        error=describe_error(run),
        loader_busy_fraction=loader_busy_fraction(run, steps, window, window_s),
        system_cpu_busy_fraction=None if system is None else system.busy_s / system.total_s,
        iowait_fraction=None if system is None or system.iowait_s is None else system.iowait_s / system.total_s,
        rss_bytes=peak_rss(run.host_samples),
        run_wall_s=(run.ended_ns - run.started_ns) / NS,
        stop_reason=run.stop_reason.value,
        foreign_cpu_fraction=foreign_cpu_fraction(system, run.host_samples, window),
        steal_fraction=steal_fraction(system),
        profiler_cpu_percent=_percent(run.profiler_cpu_s, (run.ended_ns - run.started_ns) / NS),
        event_bytes_per_s=_per_s(run.channel_bytes, (run.ended_ns - run.started_ns) / NS),
        throughput_spread=throughput_spread(steps, loader.num_workers if loader is not None else None),
        loader_kernel_fraction=loader_kernel_fraction(run, window),
        loader_blocked_fraction=loader_blocked_fraction(run, window),
        training_samples_per_s=training_throughput(run),
        steps_samples_per_s=steps_rate(steps),
        epoch_boundaries=sum(1 for s in steps if s.batch.index == 0),
    )
    return with_step_split(summary, run, steps)


def steps_rate(steps: list[LoopStep]) -> float | None:
    """Samples/s over the window's steps with each epoch's start (the step that waited from iter()
    for its workers) and end (the last step and the workers' shutdown after its last batch) left
    out: the steps alone, which a run that never reached an epoch boundary is compared with."""
    kept = [s for s in steps if s.batch.index > 0]
    ns = sum(s.batch.wait_end_ns - s.previous_end_ns for s in kept)
    return _per_s(sum(s.batch.samples for s in kept), ns / NS) if ns > 0 else None


def step_slowdown(real: RunSummary | None, synthetic: RunSummary | None) -> float | None:
    """How much slower the step itself ran beside the real input pipeline than with free inputs
    (its median time outside the data wait in each run), or None without both."""
    if real is None or synthetic is None:
        return None
    a, b = real.compute_ms_p50, synthetic.compute_ms_p50
    return a / b if a is not None and b else None


def training_throughput(run: RunResult) -> float | None:
    """Samples per second from the end of warm-up to the last batch, everything between included
    (each epoch's worker start-up, burst and drain, whatever the script does between epochs): the
    rate training experiences, where the steady window measures the loop's steady state."""
    batches = loader_batches(run)
    if not past_warmup(batches, run.warmup_batches):
        return None
    start = batches[run.warmup_batches - 1].wait_end_ns if run.warmup_batches else batches[0].wait_end_ns
    measured = batches[run.warmup_batches :] if run.warmup_batches else batches[1:]
    fold = folded(run)  # a long run's batches between those kept
    samples = sum(b.samples for b in measured) + (fold.samples if fold is not None else 0)
    return _per_s(samples, (measured[-1].wait_end_ns - start) / NS)


SPREAD_BLOCKS = 4  # the window is cut into this many consecutive blocks to see how steady it was


def throughput_spread(steps: list[LoopStep], num_workers: int | None) -> float | None:
    """Half the range of throughput across blocks of the window (whole rounds of one batch per worker;
    for a window of whole epochs, its epochs: a block that cut one would hold its start-up or not),
    relative to their median; None for a window too short for two blocks."""
    epochs = [list(group) for _, group in itertools.groupby(steps, key=lambda s: s.batch.iterator_id)]
    blocks = epochs if len(epochs) > 1 and all(e[0].batch.index == 0 for e in epochs) else []
    if not blocks:
        round_size = max(num_workers or 1, 1)
        size = max(-(-(len(steps) // SPREAD_BLOCKS) // round_size) * round_size, round_size, 2)
        blocks = [steps[i : i + size] for i in range(0, len(steps) - size + 1, size)]
    elapsed = [sum(s.step_ns for s in block) for block in blocks]
    if len(blocks) < 2 or min(elapsed) <= 0:
        return None
    rates = [sum(s.batch.samples for s in block) / ns for block, ns in zip(blocks, elapsed, strict=True)]
    middle = statistics.median(rates)
    return (max(rates) - min(rates)) / 2 / middle if middle > 0 else None


def _per_s(amount: float | None, window_s: float) -> float | None:
    return None if amount is None or window_s <= 0 else amount / window_s


def _percent(cpu_s: float | None, window_s: float) -> float | None:
    per_s = _per_s(cpu_s, window_s)
    return None if per_s is None else 100.0 * per_s
