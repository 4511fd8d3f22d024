"""What the analyzer derives from runs, and what the reporters render."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.records import decode
from fastload_cli.records.fixes import FixResult, PatchResult
from fastload_cli.records.measured import (
    BatchRecord,
    Breakdown,
    GpuDevice,
    GpuSample,
    HostSample,
    IteratorInfo,
    Profile,
    Substitution,
    TensorLeaf,
)
from fastload_cli.records.modes import SCHEMA, Bottleneck, Command, ModeSpec, RunStatus

# --------------------------------------------------------------------------------------------
# What the analyzer derives, and what the reporters render
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """Per-run numbers, as they appear in the report's ``runs`` list. The run's mode is its
    ``spec``; the report shows it as its ``mode`` label and ``variant``."""

    spec: ModeSpec
    status: RunStatus
    num_workers: int | None
    batches: int
    samples: int
    wall_s: float | None  # the measured steady-state window; samples / wall_s = throughput
    throughput_samples_per_s: float | None
    throughput_batches_per_s: float | None
    data_wait_fraction: float | None
    step_ms_p50: float | None
    step_ms_p90: float | None
    startup_s: float | None  # iter() to first batch, first epoch
    main_cpu_percent: float | None
    workers_cpu_percent: float | None
    gpu_util_percent: float | None
    read_bytes_per_s: float | None
    error: str | None
    compute_ms_p50: float | None = None  # median step time outside the data wait
    loader_busy_fraction: float | None = None  # loading processes on CPU or runnable
    system_cpu_busy_fraction: float | None = None
    iowait_fraction: float | None = None
    rss_bytes: int | None = None
    run_wall_s: float | None = None  # the whole child run, start-up included
    stop_reason: str | None = None
    foreign_cpu_fraction: float | None = None  # machine CPU used by processes outside the run
    steal_fraction: float | None = None  # machine CPU a virtual machine's host gave other guests (steal)
    profiler_cpu_percent: float | None = None  # fastload's own CPU over the run, % of one core
    event_bytes_per_s: float | None = None  # what the process streamed to fastload over the run
    # Half the range of throughput across consecutive blocks of the window, relative to the
    # throughput: how steady the run was (None when the window is too short to split).
    throughput_spread: float | None = None
    # From the end of warm-up to the last batch with every epoch's start-up included: the rate
    # training experiences (``try`` compares fixes by it), where throughput_* is the steady state.
    training_samples_per_s: float | None = None
    # The window's steps alone: each epoch's start (the step that waited from iter() for its workers)
    # and end (the last step and the workers' shutdown after the last batch) left out. The window's
    # own rate where it crossed no epoch boundary; faster where it did.
    steps_samples_per_s: float | None = None
    epoch_boundaries: int = 0  # epoch starts the window held
    # Share of the DataLoader workers' CPU time spent in the kernel (reading files, copying pages).
    loader_kernel_fraction: float | None = None
    # Share of the samples of the loading processes (the workers, or the main process without
    # them) that found them blocked in the kernel on storage: the time reads cost them.
    loader_blocked_fraction: float | None = None
    # The loop's thread over its steps outside the data wait: on a CPU or runnable (median and 90th
    # percentile, per step), and the share it spent blocked: on the CPU backend, in the collectives
    # waiting for the other ranks. None where a CUDA device is driven (the thread waits on it too).
    step_busy_ms_p50: float | None = None
    step_busy_ms_p90: float | None = None
    step_blocked_fraction: float | None = None
    # A data-parallel job: the rank these figures are of (throughput_* and training_samples_per_s are
    # the job's, summed over its ranks), and every rank's own figures.
    rank: int | None = None
    local_rank: int | None = None
    ranks: tuple[RunSummary, ...] = ()
    # The ranks the run's mode was applied on alone (the others ran the script as it is); empty
    # when it applied on every rank, or in a run of one process.
    ranks_changed: tuple[int, ...] = ()

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RunSummary:
        """A run's figures read back from a report: its mode from its label and variant."""
        return _summary(raw)

    @property
    def mode(self) -> str:
        """The run's mode as the report names it (``ModeSpec.label``)."""
        return self.spec.label

    @property
    def variant(self) -> str | None:
        """The loader settings a workers=N run overrides besides num_workers, if any."""
        return self.spec.variant


class FindingKind(enum.Enum):
    """What a line of evidence establishes; recommendations select their evidence by it."""

    DATA_WAIT = "data-wait"  # the real run's data-wait fraction
    CEILING = "ceiling"  # synthetic / real throughput
    CONTENTION = "contention"  # the step ran slower beside the loaders than with free inputs
    PARTLY = "partly"  # an in-between ceiling: loading and the step both cost time
    CEILING_UNEXPLAINED = "ceiling-unexplained"  # a ceiling the wait and the step do not explain
    FREE_INPUTS_UNMEASURED = "free-inputs-unmeasured"  # no synthetic run, and loading runs beside the step
    NEAR_THRESHOLD = "near-threshold"  # a ceiling within the runs' noise of a line the verdict draws
    MIXED = "mixed"  # neither signal is clear-cut
    WORKER_RESTARTS = "worker-restarts"  # workers started again every epoch, and what they did meanwhile
    STEADY_STATE = "steady-state"  # what the steady-state figures leave out
    EPOCH_BOUNDARY = "epoch-boundary"  # what an epoch costs besides its steps, left out of a comparison
    AUGMENTATION = "augmentation"  # no-aug / real throughput
    LOADERS_BUSY = "loaders-busy"  # the loading processes' CPU share: computing
    LOADERS_IDLE = "loaders-idle"  # ...: waiting
    LOADERS_MIXED = "loaders-mixed"  # ...: in between
    LOADERS_COMPETE = "loaders-compete"  # ...: asleep on a full queue while the cores are full or the step slows
    HANDOFF = "handoff"  # batches cheaper to build than to hand over from workers
    KERNEL_READS = "kernel-reads"  # busy loaders whose CPU is reading in the kernel
    CORES_SATURATED = "cores-saturated"  # every core busy
    CORES_FREE = "cores-free"  # room for more parallel loading
    CAPACITY = "capacity"  # the cores that would feed the GPU at its free-input rate, against those there
    MACHINE_CPU = "machine-cpu"  # the machine's CPU busy share, quoted for an IO cause
    IOWAIT = "iowait"  # storage stalls
    READ_RATE = "read-rate"  # bytes read from storage per second
    CAUSE_UNMEASURED = "cause-unmeasured"  # the loaders' CPU could not be read
    GPU_IDLE = "gpu-idle"  # the device idles even with free inputs
    TRANSFER = "transfer"  # the step with its batch already on the GPU against copied from the host
    SWEEP = "sweep"  # what a num_workers sweep measured
    NO_GAIN = "no-gain"  # a measured recommendation whose runs leave it no gain beyond their noise
    CHANGES_THE_DATA = "changes-the-data"  # a fix whose run fed training other batches than the script's own
    STRAGGLER = "straggler"  # a data-parallel job's rank that holds the others back, and why
    STRAGGLER_FREED = "straggler-freed"  # what the job gained with the straggler's input pipeline free


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One line of evidence as data: what it establishes, the numbers it rests on, the sentence."""

    kind: FindingKind
    sentence: str
    values: dict[str, float | int | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    bottleneck: Bottleneck
    label: str
    confidence: float
    speedup_ceiling: float | None
    evidence: tuple[str, ...]  # the findings' sentences, in order (the JSON contract)
    caveats: tuple[str, ...]
    augmentation_speedup: float | None = None
    findings: tuple[Finding, ...] = ()
    slowest_rank: int | None = None  # a data-parallel job's straggler, when one stands out beyond noise
    rank_named: str | None = None  # the words the label ends with that name the slowest rank

    def of(self, *kinds: FindingKind) -> tuple[Finding, ...]:
        """The findings of these kinds, in order."""
        return tuple(f for f in self.findings if f.kind in kinds)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    id: str
    title: str
    detail: str
    expected_speedup: float | None
    measured: bool
    evidence: tuple[str, ...] = ()
    num_workers: int | None = None  # the num_workers it sets, where it sets one


class PathologyKind(enum.Enum):
    """A nameable input-pipeline failure or slowdown, found in what the real run measured."""

    DUPLICATE_SAMPLES = "duplicate-samples"  # workers of an IterableDataset yield the same samples
    IDLE_WORKERS = "idle-workers"  # one worker delivers nearly every batch
    SLOW_SAMPLES = "slow-samples"  # a few slow samples stall the batches behind them (in-order delivery)
    THREAD_OVERSUBSCRIPTION = "thread-oversubscription"  # thread pools in every worker, more threads than cores
    MEMORY_GROWTH = "memory-growth"  # workers' own memory grows batch after batch
    SHARED_MEMORY = "shared-memory"  # batches in flight against /dev/shm
    FILE_DESCRIPTORS = "file-descriptors"  # open descriptors against their limit

    @property
    def correctness(self) -> bool:
        """Training sees other data than the user meant: said before anything about speed."""
        return self is PathologyKind.DUPLICATE_SAMPLES


@dataclass(frozen=True, slots=True, kw_only=True)
class Pathology:
    """One pathology found: the sentence with the numbers it rests on, and what to change."""

    kind: PathologyKind
    title: str
    finding: str
    advice: str
    recommendation: str | None = None  # the recommendation's id that applies the advice, when there is one
    fix: str | None = None  # the ``fastload try --fix`` that applies it from outside the script
    values: dict[str, float | int | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchInfo:
    """The training loader's first batch: what crosses from the workers to the training step."""

    python_type: str
    samples: int | None
    bytes_per_batch: int
    bytes_per_sample: float | None
    pinned: bool | None  # every tensor pinned (None: no tensor, or unknown)
    leaves: tuple[TensorLeaf, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepPoint:
    """One measured num_workers setting of a sweep (the run's full numbers are in ``runs``)."""

    workers: int
    mode: str  # the run it comes from: "workers=N", or "real" for the script's own setting
    throughput_samples_per_s: float | None  # None: the run failed or measured no batch
    spread: float | None  # the run's throughput_spread
    data_wait_fraction: float | None = None
    system_cpu_busy_fraction: float | None = None
    loader_busy_fraction: float | None = None
    rss_bytes: int | None = None
    startup_s: float | None = None
    # prefetch_factor / pin_memory overrides, when the sweep tried them; or WHOLE_EPOCHS
    variant: str | None = None
    runs: int = 1  # runs of this setting: throughput is their mean, spread covers their difference
    batches: int = 0  # batches measured (all its runs'): a longer run weighs more in their mean
    # measured after the script's first epoch (a warm-up of whole epochs), as is every setting
    # compared with one that was: the first epoch's workers can run slower than later epochs'
    after_first_epoch: bool = False


WHOLE_EPOCHS = "whole epochs"  # the variant of a point measured over whole epochs, start-ups included


@dataclass(frozen=True, slots=True, kw_only=True)
class SweepResult:
    """What a num_workers sweep measured and what it concludes."""

    points: tuple[SweepPoint, ...]  # by worker count, then variant
    current_workers: int | None  # the script's own setting
    best_workers: int | None  # the highest throughput measured
    recommended_workers: int | None  # the fewest workers within a few percent of the best
    recommended_variant: str | None  # a prefetch_factor / pin_memory setting that measurably helped
    speedup: float | None  # recommended / current throughput
    noise: float  # relative difference below which two points are not told apart
    significant: bool  # the speedup is beyond the noise
    memory_cost_bytes: int | None  # process-tree RSS of the recommended setting minus the current one
    diminishing_at: int | None  # beyond this many workers, throughput rose by no more than the noise
    reason: str  # why returns diminish there (cores saturated, IO latency hidden, step-bound, a limit)
    stopped: str | None  # why the search stopped climbing, when a limit stopped it
    conclusion: str = ""  # what to do, in one sentence, with the measured speedup
    returns: str = ""  # where returns end and why, in one sentence
    caveats: tuple[str, ...] = ()  # what limits a measured setting's figures (a window of whole epochs)
    # The speedup is what the settings' steady windows and each epoch's worker start-up, as their runs
    # measured them, make of epochs that start their workers again (not pairs of whole epochs).
    estimated_over_epochs: bool = False
    # The throughput the search predicted from the script's own run before measuring (workers,
    # samples/s), the setting it predicted returns end at, and its median relative error at the
    # settings measured to verify it (None without a prediction, or nothing to check it against).
    predicted: tuple[tuple[int, float], ...] = ()
    predicted_best: int | None = None
    prediction_error: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    python: str
    torch: str | None
    cuda_available: bool | None
    gpus: tuple[GpuDevice, ...]
    cpu_count: int | None
    nvml: str  # "available" or "unavailable: <reason>"
    world_size: int | None = None  # a data-parallel job: its ranks on every node, and those on this node
    nproc_per_node: int | None = None
    process_group: bool | None = None  # the job's ranks formed a process group (they meet at every step)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """One run over time, all on the monotonic clock the child and the parent share: the loop's
    wait for every batch, each epoch's iterator start-up, and the samples of every process."""

    mode: str  # the run's label in ``runs``
    variant: str | None
    started_ns: int
    ended_ns: int
    warmup_batches: int  # the training loader's first batches that are warm-up, not measured
    loader_id: int | None  # the training loader (the one the summary measures)
    iterators: tuple[IteratorInfo, ...]
    batches: tuple[BatchRecord, ...]  # wait start and end per batch, every loader
    measured: tuple[int, ...] = ()  # positions in ``batches`` of the steps the run's summary measures
    host_samples: tuple[HostSample, ...] = ()  # CPU, run queue, RSS and reads per process; the system
    gpu_samples: tuple[GpuSample, ...] = ()


SEPARATE_RUNS = "separate runs"  # InputSplit.method: each part from a run of its own
INTERLEAVED = "interleaved"  # ... from one run where the pipelines took turns


@dataclass(frozen=True, slots=True, kw_only=True)
class InputSplit:
    """The real pipeline's time per batch, split by the runs (or turns) that each removed part of loading:
    storage+decode (``cached``), augmentation (``no-aug``), and the rest (``cached-no-aug``: both
    removed, so what is left is loading's other work, such as collate and the handoff, and the
    step beside it). Each part is measured on its own; the residual is what they leave out, or
    count twice where removing one part changes what the other costs (a pipeline overlaps them)."""

    real_ms: float  # the real run's time per batch (1 / throughput)
    storage_decode_ms: float | None  # real - cached
    augmentation_ms: float | None  # real - no-aug
    rest_ms: float | None  # cached-no-aug: loading's other work and the step
    step_ms: float | None  # synthetic: the step alone, with free inputs (part of the rest)
    residual_ms: float | None  # real - the three parts (None unless all three were measured)
    method: str = SEPARATE_RUNS  # or INTERLEAVED: the pipelines took turns in one run (the split run)
    turns: int | None = None  # interleaved: the turns each pipeline took
    spread: float | None = None  # interleaved: the largest turn-to-turn spread of a pipeline, ± share
    # interleaved, with DataLoader workers: the same split of the workers' CPU milliseconds per batch
    # (its step_ms None): parts that overlap in the work itself overlap there too
    workers_cpu: InputSplit | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeSpent:
    """Where a command's time went, in seconds, and the least time its verdict needs."""

    total_s: float | None  # the command, from its start to its report
    runs: int  # processes of the script started
    starts_s: float  # the runs' starts of the script, to their first iter()
    warmups_s: float  # the runs' warm-ups: workers started, warm-up batches, between settings in turn
    measured_s: float  # the measured windows
    ends_s: float  # after the windows: the stop, an epoch's end waited for, the shutdown
    again_s: float  # of the runs' time, the runs that measured again what another run measured
    breakdown_s: float  # the breakdown: its own run, or its time inside a run of modes
    # One start of the script and ``LIMIT_BATCHES`` steady batches of each mode compared at its own
    # step time: what measuring the verdict's comparisons takes at least.
    limit_s: float | None

    @property
    def fastload_s(self) -> float | None:
        """fastload's own time between the runs: starting and stopping them, deciding the next."""
        if self.total_s is None:
            return None
        spent = self.starts_s + self.warmups_s + self.measured_s + self.ends_s + self.breakdown_s
        return max(0.0, self.total_s - spent)

    @property
    def over_limit(self) -> float | None:
        """How many times the measuring limit the command took."""
        return self.total_s / self.limit_s if self.total_s is not None and self.limit_s else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    command: Command
    script: str
    script_args: tuple[str, ...]
    fastload_version: str
    environment: Environment
    runs: tuple[RunSummary, ...]
    verdict: Verdict
    recommendations: tuple[Recommendation, ...]
    substitutions: tuple[Substitution, ...] = ()
    interrupted: bool = False
    reading: str | None = None  # a paragraph that reads the speedup ceiling (synthetic-compare)
    sweep: SweepResult | None = None
    breakdown: Breakdown | None = None  # where a sample's loading time goes
    batch: BatchInfo | None = None  # the training loader's first batch
    profile: Profile | None = None  # py-spy: the loading processes' top functions (--py-spy)
    timelines: tuple[Timeline, ...] = ()  # each run over time (left out of the JSON unless asked for)
    fixes: tuple[FixResult, ...] = ()  # ``try``: each fix (and their combination) measured or refused
    split: InputSplit | None = None  # where the real run's time per batch goes, when cached ran
    pathologies: tuple[Pathology, ...] = ()  # named failures and slowdowns of the input pipeline
    time_spent: TimeSpent | None = None  # where the command's time went
    patch: PatchResult | None = None  # ``fix``: the changes proven in plain runs, and the one kept
    schema: str = SCHEMA

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Report:
        """A report read back from its JSON document (``records.schema.check_report`` it first:
        this reads, it does not judge); ValueError, KeyError or TypeError where it cannot be read."""
        return decode.record(cls, document, {RunSummary: _summary})


def _summary(raw: Mapping[str, Any]) -> RunSummary:
    """A run's figures read back: its mode from its label and variant (``ModeSpec.from_label``)."""
    spec = ModeSpec.from_label(raw["mode"], raw.get("variant"))
    return RunSummary(spec=spec, **decode.fields(RunSummary, raw, {RunSummary: _summary}, skip=("spec",)))
