"""What the verdict and the recommendations are decided from: ``Facts``, gathered from the runs.

Properties derive what several rules ask (the ceiling, the contention, worker start-up, batches
cheaper than their handoff); each is a pure function of the measured numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.metrics import step_slowdown
from fastload_cli.analyzer.window import epoch_batches
from fastload_cli.records import BatchInfo, Breakdown, FixResult, LoaderInfo, RunSummary, SweepResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What the verdict and the recommendations are decided from."""

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
    memory_available_bytes: int | None = None  # free memory when the real run started
    ranks_per_node: int = 1  # a data-parallel job's local ranks: they share the node's cores and memory
    tried: tuple[FixResult, ...] = ()  # runs with fixes applied, against the real run
    # real and synthetic measured again: each (real, synthetic) pair run side by side, in order
    # (``real`` and ``synthetic`` are then each mode's runs pooled)
    pairs: tuple[tuple[RunSummary, RunSummary], ...] = ()

    @property
    def ceiling(self) -> float | None:
        """How much faster training ran with free inputs: the synthetic run's throughput over the
        real one's; where the two were measured again, the geometric mean of each pair's (a
        shared machine's pace drifts between pairs far more than within one, and the pooled
        runs' throughputs would weigh the pair that ran slower by its longer windows)."""
        return self._across_pairs(free_speedup) if self.pairs else free_speedup(self.synthetic, self.real)

    @property
    def pair_ceilings(self) -> tuple[float, ...]:
        """Each pair's ceiling, where real and synthetic were measured again."""
        found = (free_speedup(synthetic, real) for real, synthetic in self.pairs)
        return tuple(c for c in found if c is not None)

    def _across_pairs(self, ratio: Callable[[RunSummary, RunSummary], float | None]) -> float | None:
        """The geometric mean of ``ratio(synthetic, real)`` over the pairs; None where one has none."""
        found = [ratio(synthetic, real) for real, synthetic in self.pairs]
        if not found or any(r is None or r <= 0 for r in found):
            return None
        return math.exp(sum(math.log(r) for r in found if r is not None) / len(found))

    @property
    def transfer_gain(self) -> float | None:
        """How much faster a step ran with its batch already on the GPU than copied there from
        host memory: the two replays' steps, each without the replay's own handing over (its
        data wait), medians."""
        host, device = self.synthetic, self.device_replay
        if host is None or device is None or not host.compute_ms_p50 or not device.compute_ms_p50:
            return None
        return host.compute_ms_p50 / device.compute_ms_p50

    @property
    def transfer_noise(self) -> float:
        """The relative noise of ``transfer_gain``: the two replays' spreads."""
        return noise.between_runs(self.synthetic, self.device_replay)

    @property
    def copies_cost(self) -> bool:
        """Copying the batch to the GPU measurably costs the step: the step with it already on the
        device (synthetic-device) ran faster than with it copied from host memory (synthetic)
        beyond the two replays' noise. Advice about the copies (pinning, uint8) rests on it."""
        gain = self.transfer_gain
        return gain is not None and gain > 1 + self.transfer_noise

    @property
    def loading_cores_needed(self) -> float | None:
        """The cores the loading processes would need to feed the step at the free-input rate:
        their CPU seconds per sample in the real run times that rate."""
        real, free = self.real, self.synthetic
        if real is None or free is None or not real.throughput_samples_per_s or not free.throughput_samples_per_s:
            return None
        cpu = real.workers_cpu_percent if real.num_workers else None
        if not cpu:
            return None
        return cpu / 100 / real.throughput_samples_per_s * free.throughput_samples_per_s

    @property
    def transfer_bound(self) -> bool:
        """Copies to the GPU cost the step beyond ``TRANSFER_SIGNIFICANT`` and the replays' noise,
        and more than the rest of the input pipeline (the ceiling) does."""
        gain = self.transfer_gain
        if gain is None or gain < max(th.TRANSFER_SIGNIFICANT, 1 + self.transfer_noise):
            return False
        return self.ceiling is None or gain >= self.ceiling

    @property
    def aug_speedup(self) -> float | None:
        return speedup(self.no_aug, self.real)

    @property
    def contention(self) -> float | None:
        """How much slower the step itself ran beside the real input pipeline than with free inputs;
        pair by pair, as the ceiling, where the two were measured again."""
        if self.pairs:
            return self._across_pairs(lambda synthetic, real: step_slowdown(real, synthetic))
        return step_slowdown(self.real, self.synthetic)

    @property
    def concurrent_loading(self) -> bool:
        """Loading runs beside the step (workers, a pin-memory thread), so it can slow the step.

        Without it (num_workers=0, no pinning) loading happens only inside the wait, and a slower
        step in the real run cannot be the input pipeline's doing.
        """
        return self.loader is not None and (self.loader.num_workers > 0 or self.loader.pin_memory)

    @property
    def contended(self) -> bool:
        """The loaders measurably slow the step: ``step_slowed``, or ``step_starved``."""
        return self.step_slowed or self.step_starved

    @property
    def step_slowed(self) -> bool:
        """The step ran slower beside the loaders than with free inputs by ``CONTENTION_SIGNIFICANT``,
        or by more than the runs' noise and the compute-bound line (1.15x), the line a ceiling from
        the same two runs is held to."""
        c = self.contention
        if not self.concurrent_loading or c is None or self.loaders_nearly_idle:
            return False
        return c >= min(th.CONTENTION_SIGNIFICANT, max(th.CEILING_COMPUTE_BOUND, 1 + self.ceiling_noise))

    @property
    def cpu_regained(self) -> float | None:
        """How much more CPU the training process had with free inputs than beside the real input
        pipeline (its CPU share over each run), or None without both."""
        real, synthetic = self.real, self.synthetic
        if real is None or synthetic is None or not real.main_cpu_percent or synthetic.main_cpu_percent is None:
            return None
        return synthetic.main_cpu_percent / real.main_cpu_percent

    @property
    def step_starved(self) -> bool:
        """Every core was busy beside the loaders, the training process had at least
        ``CPU_REGAINED_SIGNIFICANT`` more CPU with free inputs, and its step ran faster there: the
        loaders took that CPU from the step. Read from CPU shares, which vary far less between runs
        than the step's time, where the step's own slowdown stays inside its runs' noise."""
        regained, c = self.cpu_regained, self.contention
        if not self.concurrent_loading or not self.cores_saturated or regained is None or c is None:
            return False
        return regained >= th.CPU_REGAINED_SIGNIFICANT and c > 1 and not self.loaders_nearly_idle

    @property
    def loaders_nearly_idle(self) -> bool:
        """The real run's workers were on a CPU, or waiting for one, less than ``LOADER_NEARLY_IDLE``
        of the time: they cannot have slowed the step. Not said of loading in the main process."""
        busy = self.real.loader_busy_fraction if self.real is not None else None
        workers = self.loader.num_workers if self.loader is not None else 0
        return bool(workers) and busy is not None and busy < th.LOADER_NEARLY_IDLE

    @property
    def loaders_cost_the_step(self) -> bool:
        """The loaders measurably slow the step, or are known to: workers handing over batches
        cheaper to build than to hand over cost the step CPU by construction."""
        return self.contended or (self.cheap_batches is not None and self.concurrent_loading)

    @property
    def noise(self) -> float:
        """The relative throughput difference the real run cannot tell from noise: its measured
        spread, never below what paired runs of one setting differ by on a quiet machine."""
        return noise.of_run(self.real)

    @property
    def ceiling_noise(self) -> float:
        """The relative noise of the ceiling (``noise_against`` the synthetic run); where real and
        synthetic were measured again, the larger of how far the pairs' ceilings differ (half their
        range, as a share of the ceiling) and each pair's own noise over the square root of their
        number, the drift between the pairs left out."""
        ceilings, ceiling = self.pair_ceilings, self.ceiling
        if not self.pairs or not ceilings or not ceiling:
            return self.noise_against(self.synthetic)
        return noise.over_pairs(ceilings, ceiling, [noise.between_runs(r, s) for r, s in self.pairs])

    def noise_against(self, other: RunSummary | None) -> float:
        """The relative noise of a speedup between the real run and ``other`` (``noise.between_runs``)."""
        return noise.between_runs(self.real, other)

    @property
    def loaders_compete(self) -> bool:
        """The workers keep up (on a CPU less than ``LOADER_BUSY`` of the time, nothing showing them
        wait on storage, and, where they were on a CPU more than ``LOADER_IDLE`` of it, the loop
        waiting less than ``WAIT_INPUT_BOUND``) while every core is busy or the step slows beside
        them: the CPU they use is the step's, and fewer workers may train faster, whatever cause the
        verdict names. The sweep reads its points by the same ``LOADER_BUSY`` (``search.state``)."""
        real = self.real
        busy = real.loader_busy_fraction if real is not None else None
        if real is None or busy is None or not self.num_workers or busy >= th.LOADER_BUSY:
            return False
        if self.storage_evidence is not None:
            return False
        behind = busy > th.LOADER_IDLE and (real.data_wait_fraction or 0.0) >= th.WAIT_INPUT_BOUND
        return not behind and (self.cores_saturated or self.contended)

    @property
    def cores_saturated(self) -> bool:
        """Every core was busy in the real run: the one reading of it that every rule shares, so no
        recommendation asks for more parallel loading while a note says the cores are full."""
        system = self.real.system_cpu_busy_fraction if self.real is not None else None
        return system is not None and system >= th.CPU_SATURATED

    @property
    def storage_evidence(self) -> str | None:
        """What shows the real run waiting on storage or latency, in words, or None.

        Reads from storage, iowait, or a loop that waits for data while the loaders sleep. Loaders
        that sleep prove nothing alone: workers that keep up sleep because their queue is full, and
        then the loop does not wait. Nor does a wait beside loaders busy more than ``LOADER_IDLE``:
        batches are delivered in order, so the loop waits on the worker computing the next one
        while the others sleep on their full queues.
        """
        real = self.real
        if real is None:
            return None
        rate, iowait, wait = real.read_bytes_per_s, real.iowait_fraction, real.data_wait_fraction
        blocked, busy = real.loader_blocked_fraction, real.loader_busy_fraction
        if rate is not None and self.reads_are_evidence:
            return f"the run read {rate / 1e6:.1f} MB/s from storage"
        if iowait is not None and iowait >= th.IOWAIT_NOTABLE:
            return f"{100 * iowait:.0f}% of CPU time was iowait"
        if blocked is not None and blocked >= th.LOADER_BLOCKED_NOTABLE:
            return f"the loaders were blocked on storage in {100 * blocked:.0f}% of samples"
        asleep = busy is None or busy <= th.LOADER_IDLE
        if wait is not None and wait >= th.WAIT_INPUT_BOUND and asleep:
            return f"the loop waited for data {100 * wait:.0f}% of the time while the loaders slept"
        return None

    @property
    def reads_are_evidence(self) -> bool:
        """The real run read at least ``READ_RATE_NOTABLE`` from storage, and the reads can have
        cost loading time (``reads_matter``)."""
        rate = self.real.read_bytes_per_s if self.real is not None else None
        return rate is not None and rate >= th.READ_RATE_NOTABLE and self.reads_matter

    @property
    def reads_matter(self) -> bool:
        """Whether the real run's reads from storage can have cost loading time. Not where the cores
        were full or the step slowed beside the loaders while the loaders were seldom blocked on
        storage and the machine was not in iowait: there the reads (a page fault, a file opened
        now and then) cost nothing, and loading costs CPU."""
        real = self.real
        if real is None or not (self.cores_saturated or self.contended):
            return True
        blocked, iowait = real.loader_blocked_fraction, real.iowait_fraction
        if blocked is None or blocked >= th.LOADER_BLOCKED_NOTABLE:
            return True  # unmeasured: the reads are taken as they were
        return iowait is not None and iowait >= th.IOWAIT_NOTABLE

    @property
    def sweep_confirms_input(self) -> bool:
        """A sweep measured a num_workers setting much faster than the script's own."""
        found = self.sweep
        return (
            found is not None
            and found.significant
            and found.speedup is not None
            and found.speedup >= th.SWEEP_CONFIRMS_INPUT
        )

    @property
    def sweep_gain(self) -> float | None:
        """How much faster than the script's own setting a sweep measured another, beyond the
        noise, or None. Changing only the loader's settings, it bounds the input pipeline's cost
        from below, whatever the comparison with free inputs resolved."""
        found = self.sweep
        return found.speedup if found is not None and found.significant and found.speedup is not None else None

    @property
    def num_workers(self) -> int | None:
        return self.loader.num_workers if self.loader is not None else None

    @property
    def startup_s(self) -> float | None:
        """The median epoch's start-up, when the workers start again every epoch."""
        loader, starts = self.loader, sorted(self.epoch_startup_s)
        if loader is None or loader.num_workers == 0 or loader.persistent_workers or not starts:
            return None
        return starts[len(starts) // 2]

    @property
    def epoch_s(self) -> float | None:
        """One epoch's steps at the real run's steady throughput, start-up left out."""
        real, batches = self.real, epoch_batches(self.loader)
        rate = real.throughput_batches_per_s if real is not None else None
        return batches / rate if batches and rate else None

    @property
    def epoch_overhead_s(self) -> float | None:
        """What an epoch costs besides its steps at the steady rate: the workers' start-up, the
        burst and drain around the steady window, whatever the script does between epochs. From
        the real run's whole epochs (the median), else the start-up alone where workers restart."""
        rate = self.real.throughput_batches_per_s if self.real is not None else None
        beyond = sorted(wall - batches / rate for wall, batches in self.epoch_walls) if rate else []
        return max(0.0, beyond[len(beyond) // 2]) if beyond else self.startup_s

    def over_epochs(self, gain: float | None) -> float | None:
        """A steady-state gain as training pays it: a fix that speeds the epoch's steps leaves what
        the epoch costs besides them (``epoch_overhead_s``) as it was."""
        overhead, epoch = self.epoch_overhead_s, self.epoch_s
        if gain is None or overhead is None or epoch is None or gain <= 1:
            return gain
        return (overhead + epoch) / (overhead + epoch / gain)

    @property
    def restart_share(self) -> float | None:
        """The share of training time spent starting the workers again, every epoch."""
        startup, epoch = self.startup_s, self.epoch_s
        return startup / (startup + epoch) if startup is not None and epoch is not None else None

    @property
    def restarts_dominate(self) -> bool:
        """Worker start-up, measured in more than one epoch, takes an input-bound share of the time."""
        share = self.restart_share
        return (
            share is not None and share >= th.RESTART_INPUT_BOUND and len(self.epoch_startup_s) >= th.RESTART_MIN_EPOCHS
        )

    @property
    def cores_per_rank(self) -> int | None:
        """The cores one process's loading may use: the node's, shared by its local ranks."""
        return None if self.cpu_count is None else max(1, self.cpu_count // self.ranks_per_node)

    @property
    def cheap_batches(self) -> str | None:
        """Why the workers' batches cost less to build than to hand over, or None.

        A dataset of tensors already in memory, or a batch the breakdown timed under the handoff's
        cost: a worker only adds pickling, shared memory and unpickling to it.
        """
        loader = self.loader
        if loader is None or loader.num_workers == 0:
            return None
        if loader.dataset_type in th.IN_MEMORY_DATASETS:
            return f"the dataset is a {loader.dataset_type}: its items are slices of tensors already in memory"
        breakdown = self.breakdown
        if breakdown is not None and breakdown.ms_per_sample is not None and loader.batch_size:
            per_batch_ms = breakdown.ms_per_sample * loader.batch_size
            if per_batch_ms < th.WORKER_HANDOFF_MS:
                return (
                    f"a batch takes {per_batch_ms:.2f} ms to load (measured), less than handing it over from a worker"
                )
        return None


def crossed_epochs(s: RunSummary | None) -> bool:
    """``s``'s window held epoch boundaries that cost it time: its steps alone ran at least
    ``EPOCH_BOUNDARY_NOTABLE`` faster than the window."""
    if s is None or not s.epoch_boundaries or not s.steps_samples_per_s or not s.throughput_samples_per_s:
        return False
    return s.steps_samples_per_s >= s.throughput_samples_per_s * (1 + th.EPOCH_BOUNDARY_NOTABLE)


def boundaries_alone(real: RunSummary | None, free: RunSummary | None) -> bool:
    """The real run's window crossed epoch boundaries and the free-input run's did not: what an
    epoch costs besides its steps is in the one and not the other."""
    return crossed_epochs(real) and not crossed_epochs(free)


def free_speedup(free: RunSummary | None, real: RunSummary | None) -> float | None:
    """How much faster a run with free inputs trained than the real one, steps against steps where
    only the real run's window crossed an epoch boundary (``boundaries_alone``): free inputs leave
    an epoch's start and end as they are, and the replay never reached one."""
    if not boundaries_alone(real, free) or free is None or real is None:
        return speedup(free, real)
    rate, steps = free.throughput_samples_per_s, real.steps_samples_per_s
    return rate / steps if rate is not None and steps else None


def speedup(faster: RunSummary | None, base: RunSummary | None) -> float | None:
    if faster is None or base is None:
        return None
    a, b = faster.throughput_samples_per_s, base.throughput_samples_per_s
    return a / b if a is not None and b else None
