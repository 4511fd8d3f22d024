"""How long the parent holds a run past the batches it measured, before it stops it anyway.

A run whose training loader's epoch ends near its requested batches (``RunConfig.reach``) goes
on to that end; a real+synthetic run, once the real part has what it needs, waits for its first
replay (``NEXT_SIGNAL``). Either wait ends where the script has left the loop (a step limit, an
evaluation next, the script's end), and is not waited on to its end.

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


def reach_s(ran_s: float) -> float:
    """How long a run that had run ``ran_s`` is held for its epoch's near end."""
    return max(REACH_MIN_S, REACH_SHARE * ran_s)


def replay_s(ran_s: float, longest_gap_s: float, ride_s: float) -> float:
    """How long the first replay is awaited, from the ask or the last batch heard since."""
    return max(reach_s(ran_s), SWITCH_GAPS * longest_gap_s + ride_s)
