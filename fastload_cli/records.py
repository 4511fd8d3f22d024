"""Records that cross fastload's stage boundaries.

Everything the runner hands to the analyzer, and the analyzer to the reporters, is one of these
frozen dataclasses. Units are in field names; missing measurements are ``None`` (the reason lives
in a caveat), never 0. This module imports nothing from fastload and nothing outside the stdlib,
so the child process can use it too.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

SCHEMA = "fastload.report/1"

# --------------------------------------------------------------------------------------------
# Modes and statuses
# --------------------------------------------------------------------------------------------


class Mode(enum.Enum):
    """How the child changes the script's input pipeline for one run."""

    REAL = "real"
    SYNTHETIC = "synthetic"
    NO_AUG = "no-aug"
    WORKERS = "workers"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeSpec:
    """A mode plus its parameter (the worker count of ``workers=N``)."""

    mode: Mode
    workers: int | None = None
    prefetch_factor: int | None = None  # workers=N only: also override prefetch_factor
    pin_memory: bool | None = None  # workers=N only: also override pin_memory

    @property
    def label(self) -> str:
        """The report's ``mode``: ``real``, ``synthetic``, ``no-aug`` or ``workers=N``."""
        if self.mode is Mode.WORKERS:
            return f"workers={self.workers}"
        return self.mode.value

    @property
    def variant(self) -> str | None:
        """The loader settings a workers=N run overrides besides num_workers, if any."""
        parts = []
        if self.prefetch_factor is not None:
            parts.append(f"prefetch_factor={self.prefetch_factor}")
        if self.pin_memory is not None:
            parts.append(f"pin_memory={self.pin_memory}")
        return ",".join(parts) or None

    @classmethod
    def parse(cls, text: str) -> ModeSpec:
        """``"real"``, ``"synthetic"``, ``"no-aug"`` or ``"workers=N"``; ValueError otherwise."""
        name, _, arg = text.strip().partition("=")
        if name == Mode.WORKERS.value:
            if not arg.isdigit():
                raise ValueError(f"'{text}': workers=N needs a whole number N >= 0")
            return cls(mode=Mode.WORKERS, workers=int(arg))
        if arg:
            raise ValueError(f"'{text}': only workers=N takes a value")
        try:
            return cls(mode=Mode(name))
        except ValueError:
            known = ", ".join([m.value for m in Mode if m is not Mode.WORKERS] + ["workers=N"])
            raise ValueError(f"unknown mode '{text}' (known: {known})") from None


class RunStatus(enum.Enum):
    OK = "ok"
    FAILED = "failed"  # the script raised or exited non-zero
    TIMEOUT = "timeout"  # the per-mode timeout expired
    INTERRUPTED = "interrupted"  # Ctrl-C / SIGTERM to fastload
    SKIPPED = "skipped"  # not run (an earlier failure made it pointless)


class StopReason(enum.Enum):
    """Why a child run ended."""

    ENOUGH_BATCHES = "enough-batches"  # fastload stopped it: the measurement was complete
    SCRIPT_ENDED = "script-ended"  # the script returned or called sys.exit
    SCRIPT_RAISED = "script-raised"  # uncaught exception in the script
    CHILD_DIED = "child-died"  # killed by a signal, or exited without a word
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"


class Bottleneck(enum.Enum):
    CPU = "cpu"
    IO = "io"
    COMPUTE = "compute"
    TRANSFER = "transfer"
    HOST = "host"
    INCONCLUSIVE = "inconclusive"


# --------------------------------------------------------------------------------------------
# The child protocol: one JSON object per line on the event channel, ``{"kind": ..., ...}``.
# --------------------------------------------------------------------------------------------


class EventKind(enum.Enum):
    HELLO = "hello"  # child started: pid, python, whether schedstat is readable
    LOADER = "loader"  # a DataLoader was constructed: its settings and the overrides applied
    SUBSTITUTION = "substitution"  # a transform replaced (no-aug) or a setting overridden
    ITERATOR = "iterator"  # iter(loader): start/ready times, worker pids
    BATCH = "batch"  # one batch delivered where the loop blocks
    LAYOUT = "layout"  # the tensors of a loader's first batch
    ENV = "env"  # torch version, CUDA availability
    EXCEPTION = "exception"  # uncaught exception in the script
    END = "end"  # the child is leaving: why, and its exit code
    BREAKDOWN = "breakdown"  # per-step loading time of a sample of items (the breakdown run)


# Environment variable carrying the event channel's file descriptor to the child.
CHANNEL_FD_ENV = "FASTLOAD_EVENT_FD"
# Environment variable every process of a run inherits; lets tests and cleanup find strays.
RUN_ID_ENV = "FASTLOAD_RUN_ID"

# --------------------------------------------------------------------------------------------
# What the child reports
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class LoaderInfo:
    loader_id: int
    created_ns: int
    batch_size: int | None
    num_workers: int
    pin_memory: bool
    persistent_workers: bool
    prefetch_factor: int | None
    dataset_type: str
    dataset_len: int | None
    iterable_dataset: bool
    multiprocessing_context: str | None
    augmentations: tuple[str, ...] = ()  # random transforms found in the dataset's pipelines
    original_num_workers: int | None = None  # set when a workers=N mode overrode it


@dataclass(frozen=True, slots=True, kw_only=True)
class IteratorInfo:
    loader_id: int
    iterator_id: int
    started_ns: int  # iter(loader) called
    ready_ns: int  # iter(loader) returned (workers spawned)
    worker_pids: tuple[int, ...]
    reused: bool  # persistent workers: the same iterator reset for a new epoch


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchRecord:
    loader_id: int
    iterator_id: int
    index: int  # position within its iterator (0 = first batch of an epoch)
    wait_start_ns: int
    wait_end_ns: int
    samples: int
    nbytes: int
    thread_cpu_ns: int | None  # CPU time of the waiting thread during the wait
    thread_runq_ns: int | None  # time that thread was runnable but not running
    synthetic: bool = False

    @property
    def wait_ns(self) -> int:
        return self.wait_end_ns - self.wait_start_ns


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorLeaf:
    path: str  # e.g. "[0]" or "['image']"
    dtype: str
    shape: tuple[int, ...]
    nbytes: int
    pinned: bool | None
    device: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchLayout:
    loader_id: int
    python_type: str
    leaves: tuple[TensorLeaf, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Substitution:
    loader_id: int
    location: str  # where in the dataset, e.g. "dataset.transform.transforms[2]"
    original: str
    replacement: str
    guessed: bool = False  # True: a user class judged random from its name


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildEnv:
    python: str | None = None
    torch: str | None = None
    cuda_available: bool | None = None
    cuda_in_use: bool | None = None
    cuda_devices: tuple[str, ...] = ()
    torch_threads: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptError:
    type_name: str
    message: str
    traceback: str


# --------------------------------------------------------------------------------------------
# What the parent samples
# --------------------------------------------------------------------------------------------


class ProcRole(enum.Enum):
    MAIN = "main"  # the process running the script
    WORKER = "worker"  # a DataLoader worker
    OTHER = "other"  # any other descendant


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcSample:
    pid: int
    role: ProcRole
    cpu_s: float  # cumulative user+system CPU seconds since the process started
    runq_s: float | None  # cumulative seconds runnable but waiting for a CPU (main thread)
    rss_bytes: int | None
    read_bytes: int | None  # cumulative bytes read from storage
    kernel_cpu_s: float | None = None  # the system (kernel) part of cpu_s: syscalls such as reads


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemSample:
    busy_s: float  # cumulative CPU seconds, all cores, not idle and not iowait
    idle_s: float
    iowait_s: float | None
    disk_read_bytes: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSample:
    t_ns: int  # time.monotonic_ns(), the child's clock too
    procs: tuple[ProcSample, ...]
    system: SystemSample


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSample:
    t_ns: int
    index: int
    util_percent: float | None
    memory_used_bytes: int | None
    pcie_rx_bytes_per_s: float | None
    pcie_tx_bytes_per_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplerHealth:
    interval_s: float
    ticks: int
    late_ticks: int  # ticks that started after their deadline (the sampler fell behind)
    unavailable: tuple[str, ...] = ()  # "field: reason" for what could not be read


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuDevice:
    index: int
    name: str
    memory_total_bytes: int | None


# --------------------------------------------------------------------------------------------
# One run of the script under one mode
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    spec: ModeSpec
    status: RunStatus
    stop_reason: StopReason
    requested_batches: int  # warm-up + measured
    warmup_batches: int
    started_ns: int
    ended_ns: int
    exit_code: int | None = None
    signal_name: str | None = None  # the child was killed by this signal
    error: ScriptError | None = None
    output_tail: str = ""  # the last lines the script printed (stdout and stderr)
    cpu_count: int | None = None
    env: ChildEnv = ChildEnv()
    loaders: tuple[LoaderInfo, ...] = ()
    iterators: tuple[IteratorInfo, ...] = ()
    batches: tuple[BatchRecord, ...] = ()
    layouts: tuple[BatchLayout, ...] = ()
    substitutions: tuple[Substitution, ...] = ()
    host_samples: tuple[HostSample, ...] = ()
    host_health: SamplerHealth | None = None
    gpu_health: SamplerHealth | None = None  # NVML fields that could not be read, and why
    breakdown: Breakdown | None = None  # the breakdown run's measurement
    memory_available_bytes: int | None = None  # memory free for new processes when the run started
    profile: Profile | None = None  # py-spy samples of the loading processes, when asked for
    gpu_samples: tuple[GpuSample, ...] = ()
    gpu_unavailable: str | None = None  # why there are no GPU samples
    schedstat: bool = False  # the child could read its thread's run-queue time
    profiler_cpu_s: float | None = None  # fastload's own CPU time (all its threads) during the run

    @property
    def label(self) -> str:
        return self.spec.label


# --------------------------------------------------------------------------------------------
# What the analyzer derives, and what the reporters render
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """Per-run numbers, as they appear in the report's ``runs`` list."""

    mode: str
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
    profiler_cpu_percent: float | None = None  # fastload's own CPU over the run, % of one core
    # Half the range of throughput across consecutive blocks of the window, relative to the
    # throughput: how steady the run was (None when the window is too short to split).
    throughput_spread: float | None = None
    variant: str | None = None  # loader settings overridden besides num_workers (workers=N runs)
    # Share of the DataLoader workers' CPU time spent in the kernel (reading files, copying pages).
    loader_kernel_fraction: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    bottleneck: Bottleneck
    label: str
    confidence: float
    speedup_ceiling: float | None
    evidence: tuple[str, ...]
    caveats: tuple[str, ...]
    augmentation_speedup: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    id: str
    title: str
    detail: str
    expected_speedup: float | None
    measured: bool
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakdownStep:
    """One step of loading a sample: a transform, the rest of ``__getitem__``, or collate."""

    name: str
    location: str  # where it sits: dataset.transform[2], dataset.__getitem__, loader.collate_fn
    kind: str  # "transform", "getitem" (reading and decoding) or "collate"
    ms_per_sample: float
    share: float  # of the per-sample total; the shares add up to 1
    input_size: str | None = None  # what the step was given first: "500x375 image", "3x224x224 tensor"


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakdown:
    """Where a sample's loading time goes, measured in-process on a sample of items."""

    loader_id: int | None
    items: int  # samples timed
    threads: int  # torch threads while timing (1, as in DataLoader workers)
    ms_per_sample: float | None  # the sum of the steps
    steps: tuple[BreakdownStep, ...]  # largest first
    unavailable: str | None = None  # why there are no steps


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileEntry:
    function: str  # py-spy's frame: "function (file.py:line)"
    share: float  # of all samples, as the innermost frame


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """py-spy's view of the loading processes during the real run."""

    role: str  # "workers" or "main"
    pids: tuple[int, ...]
    samples: int
    top: tuple[ProfileEntry, ...]  # by share of samples, largest first
    unavailable: str | None = None  # why there is no profile


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
    variant: str | None = None  # prefetch_factor / pin_memory overrides, when the sweep tried them
    runs: int = 1  # runs of this setting: throughput is their mean, spread covers their difference


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    python: str
    torch: str | None
    cuda_available: bool | None
    gpus: tuple[GpuDevice, ...]
    cpu_count: int | None
    nvml: str  # "available" or "unavailable: <reason>"


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    command: str
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
    schema: str = SCHEMA
