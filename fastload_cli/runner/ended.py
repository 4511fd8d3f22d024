"""How a run's process ended by itself: as it said when it left, or by the signal that killed it."""

from __future__ import annotations

import signal

from fastload_cli.records import RunStatus, StopReason
from fastload_cli.runner.collect import EventCollector


def ended(c: EventCollector) -> tuple[RunStatus, StopReason]:
    """The outcome of a process that ended by itself, as it said when it left."""
    if c.end_reason is StopReason.SCRIPT_ENDED:
        return (RunStatus.OK if c.end_exit_code == 0 else RunStatus.FAILED), StopReason.SCRIPT_ENDED
    if c.end_reason is StopReason.SCRIPT_RAISED:
        return RunStatus.FAILED, StopReason.SCRIPT_RAISED
    return RunStatus.FAILED, StopReason.CHILD_DIED


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
