"""Per-run numbers: pure functions of one ``RunResult``.

The measured window is the steady state of the training loader: its batches after warm-up,
leaving out the first batch of every epoch (worker start-up is reported on its own). Each steady
batch contributes one *step*: from the end of the previous batch's wait to the end of its own,
of which the wait is the data-wait part. Counters sampled outside the child (CPU seconds, bytes
read) are cumulative, so their rate over the window is a difference of interpolated values at the
window's edges; the window can be several spans when it crosses epochs.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.counters import (
    Span,
    foreign_cpu_fraction,
    gpu_util_percent,
    role_delta,
    system_cpu,
    tree_delta,
)
from fastload_cli.analyzer.failures import describe_error
from fastload_cli.analyzer.ranks import job_summary, with_step_split
from fastload_cli.records import (
    BatchRecord,
    HostSample,
    IteratorInfo,
    LoaderInfo,
    ProcRole,
    RunResult,
    RunSummary,
    Streamed,
)

NS = 1e9
Batches = RunResult | Streamed  # a finished run, or what a run in flight has streamed so far


@dataclass(frozen=True, slots=True)
class Step:
    batch: BatchRecord
    previous_end_ns: int  # the end of the previous batch's wait, same epoch
    other_wait_ns: int = 0  # waits for other loaders' batches inside this step (zip of two loaders)
    tail_ns: int = 0  # an epoch counted whole: its last step and its iterator's end, after its last batch

    @property
    def end_ns(self) -> int:
        return self.batch.wait_end_ns + self.tail_ns

    @property
    def step_ns(self) -> int:
        return self.end_ns - self.previous_end_ns

    @property
    def wait_ns(self) -> int:
        """All of the step the loop spent blocked on data, whichever loader it waited for."""
        return self.batch.wait_ns + self.other_wait_ns


# --------------------------------------------------------------------------------------------
# Which batches count
# --------------------------------------------------------------------------------------------


def primary_loader_id(run: Batches) -> int | None:
    """The loader that delivered the most batches: the training loader, as a rule."""
    counts = Counter(b.loader_id for b in run.batches)
    return counts.most_common(1)[0][0] if counts else None


def primary_loader(run: Batches) -> LoaderInfo | None:
    loader_id = primary_loader_id(run)
    return next((lo for lo in run.loaders if lo.loader_id == loader_id), run.loaders[0] if run.loaders else None)


def first_loader(runs: Sequence[RunResult]) -> LoaderInfo | None:
    """The training loader, as the first run that measured a batch saw it."""
    return next((primary_loader(r) for r in runs if r.batches), None)


def loader_batches(run: Batches) -> list[BatchRecord]:
    """The training loader's batches, up to the number fastload asked for."""
    loader_id = primary_loader_id(run)
    return [b for b in run.batches if b.loader_id == loader_id][: run.requested_batches]


def first_replay(batches: Sequence[BatchRecord]) -> int | None:
    """The position of the first replayed batch (the synthetic mode's switch), or None."""
    return next((i for i, b in enumerate(batches) if b.synthetic), None)


def past_warmup(batches: list[BatchRecord], warmup: int) -> bool:
    """A window after warm-up holds a step; else it reads the batches after the first instead."""
    return len(batches) > warmup + 1


def startup_burst(loader: LoaderInfo | None) -> int:
    """Batches that arrive at once when an iterator starts: each worker's first prefetch_factor."""
    if loader is None or not loader.num_workers:
        return 0
    return loader.num_workers * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR)


def steady_window(workers: int, factor: int | None, epoch: int) -> bool:
    """An epoch of ``epoch`` batches leaves a steady window at ``workers``: between the start-up
    burst (each worker's first ``prefetch_factor`` batches) and the drain of as many, at least
    ``SWEEP_ROUNDS`` batches per worker and ``MIN_STEADY_BATCHES``. Runs are planned and read by it."""
    burst = workers * (factor or th.DEFAULT_PREFETCH_FACTOR)
    return epoch - 2 * burst >= max(th.MIN_STEADY_BATCHES, th.SWEEP_ROUNDS * workers)


def epoch_batches(loader: LoaderInfo | None) -> int | None:
    """Batches in one epoch of a map-style dataset: ``len(loader)`` as the script's loader said,
    else the full batches its dataset's length and batch size make."""
    if loader is None or loader.iterable_dataset:
        return None
    if loader.batches_per_epoch:
        return loader.batches_per_epoch
    return loader.dataset_len // loader.batch_size if loader.dataset_len and loader.batch_size else None


def steady_steps(run: Batches) -> list[Step]:
    """Steps after warm-up, without the start (and, with workers, the end) of any epoch.

    An epoch starts with its iterator's workers starting, then every worker delivering its first
    ``prefetch_factor`` batches at once, and it ends with the loop draining as many batches that
    were loaded while it was busy. When epochs are long enough to leave a steady state between,
    the burst is left out along with the start-up it followed (reported on its own as start-up
    time), and so is the drain when the epoch's length is known. When epochs are too short for
    that, every epoch after warm-up counts whole, from ``iter()`` on: start-up, burst and all,
    which is what such epochs cost. Without workers only each epoch's first batch is left out.
    When the script delivered too few batches to leave warm-up, the batches after the first are
    used instead (the caveats say so).
    """
    batches = loader_batches(run)
    loader = primary_loader(run)
    burst = startup_burst(loader)
    known = epoch_batches(loader)
    epoch = known or max(Counter(b.iterator_id for b in batches).values(), default=0)
    if burst > 1 and loader is not None and steady_window(loader.num_workers or 0, loader.prefetch_factor, epoch):
        steps = _steps(run, batches, first=burst, end=known - burst if known else None)
        if len(steps) >= th.MIN_STEADY_BATCHES:
            return steps
        return _steps(run, batches, first=1)
    if burst > 1:  # epochs too short for a steady state: each one counts whole, its start-up included
        steps = _to_ends(_steps(run, batches, first=0), run.iterators)
        if known and run.warmup_batches % known == 0:
            return _whole_epochs(steps, batches, known, run.iterators)
        return steps
    return _steps(run, batches, first=1)


def _to_ends(steps: list[Step], iterators: Iterable[IteratorInfo]) -> list[Step]:
    """``steps``, the last of each epoch that ended running to that end: where the loop's request
    past the epoch's last batch ended, after that batch's step and the iterator's shutdown of its
    workers, which each epoch costs as it costs its start-up."""
    ends = {it.iterator_id: it.ended_ns for it in iterators if it.ended_ns is not None}
    last = {s.batch.iterator_id: i for i, s in enumerate(steps)}
    tails = {i: ends[it] - steps[i].batch.wait_end_ns for it, i in last.items() if it in ends}
    return [replace(s, tail_ns=max(0, tails[i])) if i in tails else s for i, s in enumerate(steps)]


def _whole_epochs(
    steps: list[Step], batches: list[BatchRecord], epoch: int, iterators: Iterable[IteratorInfo]
) -> list[Step]:
    """A run planned in whole epochs (its warm-up is): ``steps`` of the epochs that ran to their
    end after it, else ``steps``. A window starting or ending inside an epoch would count its
    start-up or not by where the warm-up or an early stop fell. Where the run saw an epoch end
    (``_to_ends``), only the epochs it saw end count: one stopped after its last batch but before
    its end would leave out the step and the shutdown the others count."""
    counts, measured = Counter(b.iterator_id for b in batches), Counter(s.batch.iterator_id for s in steps)
    whole = {it for it, n in counts.items() if n == epoch and measured[it] == n}
    ended = whole & {it.iterator_id for it in iterators if it.ended_ns is not None}
    kept = [s for s in steps if s.batch.iterator_id in (ended or whole)]
    return kept or steps


def _steps(run: Batches, batches: list[BatchRecord], first: int, end: int | None = None) -> list[Step]:
    """Steps after warm-up, from each epoch's batch ``first`` on and before its batch ``end``;
    with ``first`` 0, batch 0's step starts at iter(). In a run that switched to replaying one
    batch, not the first replay's step either: the switch shut the workers down inside it."""
    skip = run.warmup_batches if past_warmup(batches, run.warmup_batches) else 1
    switched = first_replay(batches)
    if switched is not None and past_warmup(batches, switched):
        skip = max(skip, switched + 1)
    previous: dict[int, int] = {it.iterator_id: it.started_ns for it in run.iterators} if first == 0 else {}
    others = _other_waits(run, batches[0].loader_id) if batches else None
    steps = []
    for position, batch in enumerate(batches):
        before = previous.get(batch.iterator_id)
        previous[batch.iterator_id] = batch.wait_end_ns
        inside = batch.index >= first and (end is None or batch.index < end)
        if position >= skip and inside and before is not None:
            other = others.inside(before, batch.wait_end_ns) if others is not None else 0
            steps.append(Step(batch=batch, previous_end_ns=before, other_wait_ns=other))
    return steps


class _Waits:
    """Waits for batches of other loaders, to find those inside a step of the measured one."""

    def __init__(self, waits: list[tuple[int, int]]) -> None:
        self.waits = sorted(waits, key=lambda w: w[1])
        self.ends = [end for _, end in self.waits]

    def inside(self, start_ns: int, end_ns: int) -> int:
        first = bisect.bisect_right(self.ends, start_ns)
        last = bisect.bisect_right(self.ends, end_ns)
        return sum(max(0, min(b, end_ns) - max(a, start_ns)) for a, b in self.waits[first:last])


def _other_waits(run: Batches, loader_id: int) -> _Waits | None:
    waits = [(b.wait_start_ns, b.wait_end_ns) for b in run.batches if b.loader_id != loader_id]
    return _Waits(waits) if waits else None


def spans(steps: list[Step]) -> list[Span]:
    """The window as contiguous time spans (a new span where an epoch boundary was left out)."""
    found: list[Span] = []
    for step in steps:
        if found and found[-1][1] == step.previous_end_ns:
            found[-1] = (found[-1][0], step.end_ns)
        else:
            found.append((step.previous_end_ns, step.end_ns))
    return found


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


def loader_busy_fraction(run: RunResult, steps: list[Step], window: list[Span], window_s: float) -> float | None:
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
    window = spans(steps)
    window_ns = sum(b - a for a, b in window)
    window_s = window_ns / NS
    samples = sum(s.batch.samples for s in steps)
    loader = primary_loader(run)
    main_cpu = role_delta(run.host_samples, ProcRole.MAIN, window, lambda p: p.cpu_s)
    worker_cpu = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.cpu_s)
    read = tree_delta(run.host_samples, window, lambda p: p.read_bytes)
    system = system_cpu(run.host_samples, window)
    steps_ms = [s.step_ns / 1e6 for s in steps]
    compute_ms = [(s.step_ns - s.wait_ns) / 1e6 for s in steps]
    summary = RunSummary(
        mode=run.label,
        status=run.status,
        num_workers=loader.num_workers if loader is not None else None,
        batches=len(steps),
        samples=samples,
        wall_s=window_s if window_s > 0 else None,
        throughput_samples_per_s=_per_s(samples, window_s),
        throughput_batches_per_s=_per_s(len(steps), window_s),
        data_wait_fraction=(sum(s.wait_ns for s in steps) / window_ns) if window_ns > 0 else None,
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
        foreign_cpu_fraction=foreign_cpu_fraction(system, tree_delta(run.host_samples, window, lambda p: p.cpu_s)),
        profiler_cpu_percent=_percent(run.profiler_cpu_s, (run.ended_ns - run.started_ns) / NS),
        event_bytes_per_s=_per_s(run.channel_bytes, (run.ended_ns - run.started_ns) / NS),
        throughput_spread=throughput_spread(steps, loader.num_workers if loader is not None else None),
        variant=run.spec.variant,
        loader_kernel_fraction=loader_kernel_fraction(run, window),
        loader_blocked_fraction=loader_blocked_fraction(run, window),
        training_samples_per_s=training_throughput(run),
    )
    return with_step_split(summary, run, steps)


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
    return _per_s(sum(b.samples for b in measured), (measured[-1].wait_end_ns - start) / NS)


SPREAD_BLOCKS = 4  # the window is cut into this many consecutive blocks to see how steady it was


def throughput_spread(steps: list[Step], num_workers: int | None) -> float | None:
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
