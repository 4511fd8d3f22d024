"""What a run in flight keeps of its start (``Before``) and of its stop (``Stopping``), apart from
the watch loop that reads and decides them (``flight.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastload_cli.records import StopReason
from fastload_cli.runner.lost import LostBatch


@dataclass(frozen=True, slots=True)
class Before:
    """What is read once, before the run starts."""

    started_ns: int
    cpu_s: float  # fastload's own CPU so far, all threads
    memory_available: int | None
    oom_kills: int | None


@dataclass(slots=True)
class Stopping:
    """Where the run is in its stop."""

    reason: StopReason | None = None
    asked_at: float | None = None
    end_seen_at: float | None = None  # when every process that runs the script said it is leaving
    window_read: bool = False  # the workers' memory was read where the measured window starts
    interrupted: bool = False
    stuck_at: tuple[str, ...] = ()  # the main thread's frames when the timeout hit
    lost: LostBatch = field(default_factory=LostBatch)  # a worker dropped a batch the loop would wait for
