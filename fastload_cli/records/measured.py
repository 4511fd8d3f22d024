"""What one run of the script measured: the child's events and the parent's samples, as records."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fastload_cli.records.modes import ModeSpec, RunStatus, StopReason

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
    framework: str | None = None  # the training framework that built or wrapped it ("transformers", "timm", ...)
    batches_per_epoch: int | None = None  # len(loader), map-style: drop_last and a last partial batch counted
    # Where the script built it: the file and line of the constructor's call, the class called
    call_file: str | None = None
    call_line: int | None = None
    call_class: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IteratorInfo:
    loader_id: int
    iterator_id: int
    started_ns: int  # iter(loader) called
    ready_ns: int  # iter(loader) returned (workers spawned)
    worker_pids: tuple[int, ...]
    reused: bool  # persistent workers: the same iterator reset for a new epoch
    # The loop's request past the epoch's last batch ended (StopIteration, after the iterator shut
    # its workers down): the epoch's last step and its teardown lie between its last batch and this.
    ended_ns: int | None = None


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
    # The same thread between its previous batch and this wait: the step. What is left of the
    # step's wall time was the thread blocked (on the CPU backend: in the collectives).
    step_cpu_ns: int | None = None
    step_runq_ns: int | None = None
    # A loader's first batches in the real run and in runs with fixes: its tensors' paths, dtypes and
    # shapes, and a digest of their bytes (None where not readable on the CPU).
    layout_key: str | None = None
    values_key: str | None = None
    worker: int | None = None  # the index of the DataLoader worker that made it (None: the main process)
    # An IterableDataset's batch: a digest of its first and last samples, to find workers that
    # yield the same samples (None: a map-style dataset, whose sampler hands out distinct indices).
    samples_key: str | None = None
    # the digest of the sample indices it was drawn for (map-style; runs whose batches are compared)
    indices_key: str | None = None
    # A long run's first batch kept after batches folded into totals (``FoldedBatches``): the end of
    # the previous batch's wait, where its step began (None: the previous batch is kept too).
    after_ns: int | None = None

    @property
    def wait_ns(self) -> int:
        return self.wait_end_ns - self.wait_start_ns


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldedBatches:
    """One loader's batches of a long run that fastload did not keep one by one (it keeps each
    loader's first batches and the run's latest): their totals, and the time their steps took.

    A step is a batch after another of the same epoch: from the end of that one's wait to the end
    of its own. An epoch's first batch is counted in ``batches`` but makes no step (its wait holds
    the epoch's start-up), as in the measured window."""

    loader_id: int
    batches: int
    samples: int  # all the folded batches'
    steps: int
    step_samples: int
    step_wait_ns: int
    epochs: int  # folded batches that began an epoch
    spans: tuple[tuple[int, int], ...]  # the steps' time: contiguous stretches, one an epoch as a rule


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


UNCHANGED = "unchanged"  # a substitution's replacement when it could not be made


def setting_location(name: str) -> str:
    """Where a substitution of a DataLoader argument (``num_workers``, ``prefetch_factor``...) is reported."""
    return f"DataLoader({name}=...)"


SYNTHETIC_LOCATION = "synthetic replay"  # substitutions about the synthetic replay itself
CACHE_LOCATION = "decoded-sample cache"  # the cached modes' substitutions: the dataset, cached in memory
SPLIT_LOCATION = "split run"  # substitutions about the split run itself


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseMark:
    """The split run: after the loader's ``batch``-th batch (counting from 1, warm-up included),
    its samples take the pipeline ``phase`` names (``real``, ``no-aug``, ``cached``, ...); an
    in-process run: its batches come from the setting ``phase`` names (``workers=N``)."""

    loader_id: int
    batch: int
    phase: str
    worker_pids: tuple[int, ...] = ()  # points: the processes of the setting that takes over
    planned: int = 0  # points: the batches it was to have at most (it ends sooner once settled)


@dataclass(frozen=True, slots=True, kw_only=True)
class Substitution:
    loader_id: int
    location: str  # where in the dataset, e.g. "dataset.transform.transforms[2]"
    original: str
    replacement: str
    guessed: bool = False  # True: a user class judged random from its name
    undone: bool = False  # made, then undone: the stand-ins did not give a sample like the original
    reason: str = ""  # why it was undone

    @property
    def applied(self) -> bool:
        """The replacement was in place while the run measured."""
        return self.replacement != UNCHANGED and not self.undone

    @property
    def transform(self) -> str:
        """The replaced transform's name, without its arguments: ``ColorJitter``."""
        return self.original.split("(")[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildEnv:
    python: str | None = None
    torch: str | None = None
    cuda_available: bool | None = None
    cuda_in_use: bool | None = None
    cuda_devices: tuple[str, ...] = ()
    torch_threads: int | None = None
    process_group: bool | None = None  # torch.distributed's process group was formed (said only when it was)
    sharing_strategy: str | None = None  # torch.multiprocessing's: "file_descriptor" or "file_system"
    fd_limit: int | None = None  # the soft limit on open file descriptors (RLIMIT_NOFILE)
    shm_total_bytes: int | None = None  # /dev/shm, where workers put the batches they hand over
    shm_free_bytes: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptError:
    type_name: str
    message: str
    traceback: str
    rank: int | None = None  # in a data-parallel job: the rank it was raised on


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
    # In uninterruptible sleep when sampled (state D): blocked in the kernel, almost always on
    # storage (a read, a page fault on a mapped file); None where the state could not be read.
    blocked: bool | None = None
    threads: int | None = None
    involuntary_switches: int | None = None  # cumulative: taken off a CPU while runnable
    # Read on some ticks only (None between): open file descriptors on every few, and a worker's own
    # memory (USS: pages it copied from its parent or made; shared pages left out), in turn with the others.
    fds: int | None = None
    unique_bytes: int | None = None
    thread_cpu_s: tuple[tuple[int, float], ...] = ()  # (thread id, cumulative CPU seconds) for each thread
    minor_faults: int | None = None  # cumulative: pages touched first, or copied from the parent on a write
    # When the process started, on the sampler's clock: its cumulative counters were 0 then.
    started_ns: int | None = None
    # Cumulative CPU seconds of its children that exited and were waited for (Linux: cutime +
    # cstime): where a worker's CPU time goes once it has exited, past the sampler's last look at it.
    reaped_cpu_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemSample:
    busy_s: float  # cumulative CPU seconds, all cores, not idle and not iowait
    idle_s: float
    iowait_s: float | None
    disk_read_bytes: int | None
    steal_s: float | None = None  # cumulative, all cores, inside busy_s: a virtual machine's host ran other guests


@dataclass(frozen=True, slots=True, kw_only=True)
class HostSample:
    t_ns: int  # time.monotonic_ns(), the child's clock too
    procs: tuple[ProcSample, ...]
    system: SystemSample
    own_cpu_s: float | None = None  # fastload's own CPU seconds (all its threads), cumulative


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
    longest_interval_s: float | None = None  # stretched to keep sampling within its CPU budget
    cpu_budget: float | None = None  # the share of one core the sampler may take
    unavailable: tuple[str, ...] = ()  # "field: reason" for what could not be read


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuDevice:
    index: int
    name: str
    memory_total_bytes: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakdownStep:
    """One step of loading a sample: a transform, the rest of ``__getitem__``, or collate."""

    name: str
    location: str  # where it sits: dataset.transform[2], dataset.__getitem__, loader.collate_fn
    kind: str  # "transform", "getitem" (reading and decoding) or "collate"
    ms_per_sample: float
    share: float  # of the per-sample total; the shares add up to 1
    input_kind: str | None = None  # what the step was given first: "image" (PIL) or "tensor"
    input_shape: tuple[int, ...] = ()  # its size: (width, height) for an image, the shape of a tensor

    @property
    def input_pixels(self) -> int | None:
        """Width x height of the image the step was given, when it was given an image."""
        if self.input_kind != "image" or len(self.input_shape) != 2:
            return None
        return self.input_shape[0] * self.input_shape[1]


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
    folded: tuple[FoldedBatches, ...] = ()  # a long run: the batches not kept one by one, by loader
    layouts: tuple[BatchLayout, ...] = ()
    substitutions: tuple[Substitution, ...] = ()
    host_samples: tuple[HostSample, ...] = ()
    host_health: SamplerHealth | None = None
    gpu_health: SamplerHealth | None = None  # NVML fields that could not be read, and why
    breakdown: Breakdown | None = None  # the breakdown run's measurement, or one timed inside a run of modes
    breakdown_ns: int = 0  # the time timing it took (inside a run of modes: no window's, no warm-up's)
    phases: tuple[PhaseMark, ...] = ()  # the split run: where each pipeline took its turn
    memory_available_bytes: int | None = None  # memory free for new processes when the run started
    profile: Profile | None = None  # py-spy samples of the loading processes, when asked for
    gpu_samples: tuple[GpuSample, ...] = ()
    gpu_unavailable: str | None = None  # why there are no GPU samples
    schedstat: bool = False  # the child could read its thread's run-queue time
    profiler_cpu_s: float | None = None  # fastload's own CPU time (all its threads) during the run
    channel_bytes: int | None = None  # the events this process sent fastload, in bytes
    stuck_at: tuple[str, ...] = ()  # timed out: the main thread's frames, most recent first ("file:line in f")
    oom_kills: int | None = None  # processes the kernel's OOM killer killed during the run (None: unreadable)
    # A data-parallel job: this view's rank (global, local, world size), and every rank of this node.
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    ranks: tuple[RunResult, ...] = ()

    @property
    def label(self) -> str:
        return self.spec.label


@dataclass(frozen=True, slots=True, kw_only=True)
class Streamed:
    """What a run in flight has streamed so far: the batches its measured window is cut from, read
    the way a finished ``RunResult`` is (the parent asks whether the estimate is stable yet)."""

    batches: tuple[BatchRecord, ...]
    loaders: tuple[LoaderInfo, ...]
    iterators: tuple[IteratorInfo, ...]
    warmup_batches: int
    requested_batches: int
    phases: tuple[PhaseMark, ...] = ()  # an in-process run: where each setting took over so far
    folded: tuple[FoldedBatches, ...] = ()  # a long run: the batches not kept one by one, by loader
