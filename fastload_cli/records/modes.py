"""Modes, statuses and the child protocol: what a run is asked to do, and how the child speaks."""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field

SCHEMA = "fastload.report/1"

# --------------------------------------------------------------------------------------------
# Modes and statuses
# --------------------------------------------------------------------------------------------


class Command(enum.Enum):
    """The commands that write a report, its ``command``: those that run a script (``demo``
    reports as ``diagnose``), and ``merge``, the report of a data-parallel job from its nodes'."""

    DIAGNOSE = "diagnose"
    SYNTHETIC_COMPARE = "synthetic-compare"
    SWEEP_WORKERS = "sweep-workers"
    TRY = "try"
    MERGE = "merge"


class Mode(enum.Enum):
    """How the child changes the script's input pipeline for one run."""

    REAL = "real"
    SYNTHETIC = "synthetic"
    # Training on CUDA: the synthetic replay with its cached batch already on the GPU, so the
    # script's .to(device) copies nothing. Against the host-resident replay (synthetic), the
    # difference is what the host-to-device copies cost.
    SYNTHETIC_DEVICE = "synthetic-device"
    NO_AUG = "no-aug"
    WORKERS = "workers"
    # Each sample read and decoded once into memory before the first batch; the real transforms
    # and collate run on the cached samples (indices mapped onto them): storage and decode are free.
    CACHED = "cached"
    # Both of the above: storage, decoding and augmentation free. What is left (collate, the
    # handoff, the step) is the third part of the cached split.
    CACHED_NO_AUG = "cached-no-aug"
    # The four pipelines the split compares (real, no-aug, cached, cached-no-aug) taking turns in
    # one run of the script, a few batches each, so the machine's drift between runs cancels out.
    # Not a mode a user picks: diagnose runs it where the split was asked for.
    SPLIT = "split"
    # Several num_workers settings in turn in one run of the script (in-process), each for its
    # batches (``ChildSpec.turns``), so the script starts once. Not a mode a user picks: a
    # sweep measures its settings this way where the loader allows it; each becomes a workers=N run.
    IN_PROCESS = "in-process"
    # The real run, then the synthetic replay from the batch after the real window has what it
    # needs, in one run of the script: its start, imports and warm-up are paid once. Not a mode a
    # user picks: diagnose measures the pair this way where one process runs the script; the run
    # becomes a real run and a synthetic one (``analyzer.in_turn``).
    REAL_SYNTHETIC = "real+synthetic"
    # Fixes applied inside the child (``fastload try --fix``): ``fix:NAME``, or names joined by "+".
    FIX = "fix"
    # Not a mode a user picks: the real pipeline, timed step by step on a sample of items at the
    # first iter(loader), after which the script ends. Its numbers are the report's breakdown.
    BREAKDOWN = "breakdown"

    @property
    def selectable(self) -> bool:
        """A mode a command line may name in --modes (fixes are asked for with ``try --fix``)."""
        return self not in (Mode.BREAKDOWN, Mode.FIX, Mode.SPLIT, Mode.IN_PROCESS, Mode.REAL_SYNTHETIC)


class Fix(enum.Enum):
    """A fix ``fastload try`` applies inside the child; some take a value (``prefetch-factor=4``)."""

    PERSISTENT_WORKERS = "persistent-workers"
    PREFETCH_FACTOR = "prefetch-factor"
    PIN_MEMORY = "pin-memory"
    WORKERS = "workers"
    THREAD_PREFETCH = "thread-prefetch"
    CUDA_PREFETCH = "cuda-prefetch"
    CACHE_DECODED = "cache-decoded"
    IN_ORDER = "in-order"  # in_order=False: a ready batch overtakes a slow one
    WORKER_THREADS = "worker-threads"  # each worker's thread pools limited to N threads

    @property
    def takes_value(self) -> bool:
        return self in (Fix.PREFETCH_FACTOR, Fix.WORKERS, Fix.WORKER_THREADS)

    @property
    def minimum(self) -> int:
        """The smallest value it takes."""
        return 1 if self in (Fix.PREFETCH_FACTOR, Fix.WORKER_THREADS) else 0


@dataclass(frozen=True, slots=True)
class FixSpec:
    """One fix with its value: ``prefetch-factor=4`` -> (PREFETCH_FACTOR, 4)."""

    fix: Fix
    value: int | None = None

    @property
    def text(self) -> str:
        return self.fix.value if self.value is None else f"{self.fix.value}={self.value}"

    @classmethod
    def parse(cls, text: str) -> FixSpec:
        """``"persistent-workers"`` or ``"prefetch-factor=4"``; ValueError that says what is known."""
        name, sep, arg = text.strip().partition("=")
        try:
            fix = Fix(name)
        except ValueError:
            known = ", ".join(f.value + ("=N" if f.takes_value else "") for f in Fix)
            raise ValueError(f"unknown fix '{text}' (known: {known})") from None
        if not fix.takes_value:
            if sep:
                raise ValueError(f"'{text}': {name} takes no value")
            return cls(fix)
        if not arg.isdigit() or int(arg) < fix.minimum:
            raise ValueError(f"'{text}': {name}=N needs a whole number N >= {fix.minimum}")
        return cls(fix, int(arg))


@dataclass(frozen=True, slots=True, kw_only=True)
class ModeSpec:
    """A mode plus its parameter (the worker count of ``workers=N``)."""

    mode: Mode
    workers: int | None = None
    prefetch_factor: int | None = None  # workers=N only: also override prefetch_factor
    pin_memory: bool | None = None  # workers=N only: also override pin_memory
    fixes: tuple[str, ...] = ()  # fix only: the fixes applied together, as FixSpec texts
    # A data-parallel job: the mode applies on these ranks alone, the others run the script as it is
    # (what freeing one rank's input pipeline would give the job). Empty: every rank.
    ranks: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        """The report's ``mode``: ``real``, ``synthetic``, ``no-aug``, ``cached``, ``workers=N``
        or ``fix:NAME`` (several fixes applied together: their names joined by ``+``); applied on
        some ranks alone, ``@rank`` and their numbers follow (``synthetic@rank1``)."""
        if self.mode is Mode.WORKERS:
            base = f"workers={self.workers}"
        elif self.mode is Mode.FIX:
            base = "fix:" + "+".join(self.fixes)
        else:
            base = self.mode.value
        return f"{base}@rank{'+'.join(map(str, self.ranks))}" if self.ranks else base

    @property
    def fix_specs(self) -> tuple[FixSpec, ...]:
        return tuple(FixSpec.parse(text) for text in self.fixes)

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
    def from_label(cls, label: str, variant: str | None = None) -> ModeSpec:
        """The mode a report's ``mode`` and ``variant`` name (``label`` and ``variant`` read back):
        ``workers=4`` with ``prefetch_factor=4,pin_memory=True``, ``fix:a+b``, ``synthetic@rank1``,
        or any mode's own name; ValueError for a label no mode has."""
        base, _, ranks = label.partition("@rank")
        name, _, arg = base.partition("=")
        numbers = tuple(int(r) for r in ranks.split("+")) if ranks else ()
        if base.startswith("fix:"):
            return cls(mode=Mode.FIX, fixes=tuple(base.removeprefix("fix:").split("+")), ranks=numbers)
        if name == Mode.WORKERS.value and arg.isdigit():
            settings = dict(part.partition("=")[::2] for part in variant.split(",")) if variant else {}
            factor, pin = settings.get("prefetch_factor"), settings.get("pin_memory")
            return cls(
                mode=Mode.WORKERS,
                workers=int(arg),
                prefetch_factor=int(factor) if factor is not None else None,
                pin_memory=pin == "True" if pin is not None else None,
                ranks=numbers,
            )
        try:
            return cls(mode=Mode(base), ranks=numbers)
        except ValueError:
            raise ValueError(f"no mode is labelled '{label}'") from None

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
            mode: Mode | None = Mode(name)
        except ValueError:
            mode = None
        if mode is None or not mode.selectable:
            known = ", ".join([m.value for m in Mode if m.selectable and m is not Mode.WORKERS] + ["workers=N"])
            raise ValueError(f"unknown mode '{text}' (known: {known})")
        return cls(mode=mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildSpec:
    """Everything the child is told about its run: the mode with its parameters and what the mode
    needs to apply it. Written once, as JSON on the child's command line, and read back as this."""

    mode: ModeSpec = field(default_factory=lambda: ModeSpec(mode=Mode.REAL))
    warmup: int = 5  # batches before the measured ones (the synthetic mode replays from the last of them)
    keep_transforms: tuple[str, ...] = ()  # no-aug: class names never replaced
    drop_transforms: tuple[str, ...] = ()  # no-aug: class names always replaced
    breakdown_items: int = 0  # breakdown: samples timed step by step
    # real+synthetic: the breakdown is timed at the switch only where the workers were busy at least
    # this share of their lives (0: wherever asked)
    breakdown_busy: float = 0.0
    cache_batches: int = 0  # cached / cache-decoded: batches' worth of samples decoded into memory
    cache_bytes: int = 0  # ... and the memory they may take at most (0: no bound)
    phase_batches: int = 0  # split: batches each pipeline takes in turn (after the warm-up)
    turns: tuple[tuple[int, int], ...] = ()  # in-process: (num_workers, batches) in turn, from the first batch
    turn_at_epochs: bool = False  # in-process: a setting takes over only as an epoch starts

    def on_rank(self, rank: int | None) -> ChildSpec:
        """What this rank runs: the mode, or the script as it is where the mode applies on other
        ranks alone."""
        if not self.mode.ranks or rank in self.mode.ranks:
            return self
        return ChildSpec(warmup=self.warmup)

    def to_json(self) -> str:
        raw = asdict(self)
        raw["mode"]["mode"] = self.mode.mode.value
        return json.dumps(raw)

    @classmethod
    def from_json(cls, text: str) -> ChildSpec:
        raw = json.loads(text)
        mode = raw.pop("mode")
        return cls(
            mode=ModeSpec(
                **{
                    **mode,
                    "mode": Mode(mode["mode"]),
                    "fixes": tuple(mode.get("fixes", ())),
                    "ranks": tuple(int(r) for r in mode.get("ranks", ())),
                }
            ),
            keep_transforms=tuple(raw.pop("keep_transforms")),
            drop_transforms=tuple(raw.pop("drop_transforms")),
            turns=tuple((int(w), int(n)) for w, n in raw.pop("turns", ())),
            **raw,
        )


class RunStatus(enum.Enum):
    OK = "ok"
    FAILED = "failed"  # the script raised or exited non-zero
    TIMEOUT = "timeout"  # the per-mode timeout expired
    INTERRUPTED = "interrupted"  # Ctrl-C / SIGTERM to fastload
    SKIPPED = "skipped"  # not run (an earlier failure made it pointless)


class StopReason(enum.Enum):
    """Why a child run ended."""

    ENOUGH_BATCHES = "enough-batches"  # fastload stopped it: the measurement was complete
    SETTLED = "settled"  # fastload stopped it before --max-batches: its throughput estimate was stable
    SCRIPT_ENDED = "script-ended"  # the script returned or called sys.exit
    SCRIPT_RAISED = "script-raised"  # uncaught exception in the script
    CHILD_DIED = "child-died"  # killed by a signal, or exited without a word
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"
    BATCH_LOST = "batch-lost"  # fastload stopped it: a worker dropped a batch the loop would wait for forever


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
    HELLO = "hello"  # child started: pid, whether schedstat is readable, its rank in a data-parallel job
    LOADER = "loader"  # a DataLoader was constructed: its settings and the overrides applied
    SUBSTITUTION = "substitution"  # a transform replaced (no-aug) or a setting overridden
    ITERATOR = "iterator"  # iter(loader): start/ready times, worker pids
    EPOCH_END = "epoch-end"  # the loop asked past an epoch's last batch: its iterator ended
    BATCH = "batch"  # one batch delivered where the loop blocks
    LAYOUT = "layout"  # the tensors of a loader's first batch
    ENV = "env"  # torch version, CUDA availability
    EXCEPTION = "exception"  # uncaught exception in the script
    END = "end"  # the child is leaving: why, and its exit code
    BREAKDOWN = "breakdown"  # per-step loading time of a sample of items (the breakdown run)
    PHASE = "phase"  # the split run: from this batch on, the samples take this pipeline (in-process: setting)
