"""A batch a DataLoader worker could not hand over, which the training loop would wait for forever.

A worker puts each batch on its result queue, whose feeder thread pickles it into the pipe. Where
that fails (out of /dev/shm, an object that cannot be pickled), Python prints the feeder's
traceback and drops the batch. The DataLoader returns batches in order and, unless the script gave
it a ``timeout``, waits for that one without end: its workers are alive, so nothing tells it the
batch is gone. The run would sit until ``--timeout`` (small-shm's once took 300 s). fastload reads
the traceback in the script's output and stops the run once nothing more was heard from it for
``LOST_QUIET_S``, or ``LOST_QUIET_GAPS`` times the longest wait between its events before (a
batch ahead of the lost one may still come, and a slow step may still end), unless the loop
started another iterator since.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastload_cli.records.protocol import FEEDER_FAILED

LOST_QUIET_S = 5.0
LOST_QUIET_GAPS = 3.0
_FEEDER = re.compile(FEEDER_FAILED.encode())
_LOOKBACK = 256  # bytes of output before a new chunk searched again: the frame may straddle two chunks


@dataclass(slots=True)
class LostBatch:
    """Whether the script's output said a batch was dropped, and how long the run has been silent."""

    seen_at: float | None = None  # when the feeder's traceback was first read
    heard_at: float | None = None  # the run's last event
    longest_gap_s: float = 0.0  # the longest wait between two of its events so far

    def on_output(self, tail: bytes | bytearray, new: int, now: float) -> None:
        """``tail``: the output kept so far, of which the last ``new`` bytes just came."""
        if self.seen_at is None and _FEEDER.search(tail, max(0, len(tail) - new - _LOOKBACK)):
            self.seen_at = now

    def on_events(self, now: float) -> None:
        if self.heard_at is not None:
            self.longest_gap_s = max(self.longest_gap_s, now - self.heard_at)
        self.heard_at = now

    def moved_on(self) -> None:
        """The loop started another iterator (or setting): the one that lost a batch was left (its
        ``timeout`` raised, and the script went on), so what is lost is no longer waited for."""
        self.seen_at = None

    def lost(self, now: float) -> bool:
        """A batch was dropped, and the run has been silent since long enough to call it waiting for it."""
        if self.seen_at is None:
            return False
        quiet = max(LOST_QUIET_S, LOST_QUIET_GAPS * self.longest_gap_s)
        return now - max(self.seen_at, self.heard_at or 0.0) > quiet
