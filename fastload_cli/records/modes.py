"""Modes, statuses and the child protocol: what a run is asked to do, and how the child speaks."""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field

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
    # Not a mode a user picks: the real pipeline, timed step by step on a sample of items at the
    # first iter(loader), after which the script ends. Its numbers are the report's breakdown.
    BREAKDOWN = "breakdown"

    @property
    def selectable(self) -> bool:
        """A mode a command line may name in --modes."""
        return self is not Mode.BREAKDOWN


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
    warmup: int = 5  # batches before the synthetic mode caches the one it replays
    keep_transforms: tuple[str, ...] = ()  # no-aug: class names never replaced
    drop_transforms: tuple[str, ...] = ()  # no-aug: class names always replaced
    breakdown_items: int = 0  # breakdown: samples timed step by step

    def to_json(self) -> str:
        raw = asdict(self)
        raw["mode"]["mode"] = self.mode.mode.value
        return json.dumps(raw)

    @classmethod
    def from_json(cls, text: str) -> ChildSpec:
        raw = json.loads(text)
        mode = raw.pop("mode")
        return cls(
            mode=ModeSpec(**{**mode, "mode": Mode(mode["mode"])}),
            keep_transforms=tuple(raw.pop("keep_transforms")),
            drop_transforms=tuple(raw.pop("drop_transforms")),
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
