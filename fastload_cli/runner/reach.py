"""How long the parent holds a run past the batches it measured, before it stops it anyway.

A run whose training loader's epoch ends near its requested batches (``RunConfig.reach``) goes
on to that end; a real+synthetic run, once the real part has what it needs, waits for its first
replay (``NEXT_SIGNAL``). Either wait ends where the script has left the loop (a step limit, an
evaluation next, the script's end), and is not waited on to its end.

A loop that has had no batch for ``STALL_S`` since its last one, its window past
``STALL_BATCHES`` steady batches, is not held for the next: whether a worker stalls (two workers
whose numpy threads oversubscribe two cores once took 50 s for one batch, in a window of ten) or
the script does something else (a checkpoint, an evaluation), that wait is no step's. Its window
stands as measured, and a real+synthetic run's replays take a run of their own. Not after an
epoch's end or an iterator's start: an epoch's start-up is part of what training pays.

The first replay comes after the loader's next batch, its caching, the workers' shutdown and the
breakdown's ride where one rides the switch (``RIDE_BUDGET_S``). A loop that stalls (workers
fighting over the cores) can take seconds for that batch: thread-oversubscription's once came
5.3 s after the ask where every wait before it was under 0.8 s. The wait for the replay runs
from the ask or from the last batch heard since, whichever is later: a batch heard says the loop
still asks for them, and the next request is the switch's.
"""

from __future__ import annotations

# A run held past its batches is held at most this share of the time it had run, and at least
# REACH_MIN_S.
REACH_SHARE = 0.5
REACH_MIN_S = 2.0
# The first replay is awaited at least this many times the run's longest quiet between events so
# far, plus the ride.
SWITCH_GAPS = 2.0
# A run stops once its loop has had no batch for this long, its window holding STALL_BATCHES
# (the least a window may hold): as long as a window that stalls is held before it hands over
# (the analyzer's STARVED_WINDOW_S).
STALL_S = 15.0
STALL_BATCHES = 10


def reach_s(ran_s: float) -> float:
    """How long a run that had run ``ran_s`` is held for its epoch's near end."""
    return max(REACH_MIN_S, REACH_SHARE * ran_s)


def replay_s(ran_s: float, longest_gap_s: float, ride_s: float) -> float:
    """How long the first replay is awaited, from the ask or the last batch heard since."""
    return max(reach_s(ran_s), SWITCH_GAPS * longest_gap_s + ride_s)


def stalled(quiet_s: float, steady: int) -> bool:
    """A loop quiet for ``quiet_s`` since its last batch, ``steady`` batches into its window, is
    not held for the next."""
    return steady >= STALL_BATCHES and quiet_s >= STALL_S
