"""A real+synthetic run (``runner/child/modes.py``, ``RealThenReplay``: the script as it is, then
the synthetic replay, in one run of the script) as the real run and the synthetic run it stands
for; and, while it is in flight, the part the parent is measuring.

The real run is everything up to the step on its training loader's last loaded batch: its
batches, the machine's samples (and the next, which its counters' reading at that end needs),
and its end there; nothing of the replays. The synthetic run is the whole run
with its warm-up up to the first replay, as the synthetic mode's own run begins with the real
batches it replays from (``window``: the first replay's step, in which the workers were shut
down, is left out). Where no batch was replayed (the script ended first, or its batch could not
be copied), the run is the real run alone. In flight, the settle rule reads the part in force
(``part_settled``); the parent asks for the replays once the real part settled.

Pure functions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from fastload_cli.analyzer.settle import real_settled, settled
from fastload_cli.analyzer.window import first_replay, primary_loader_id
from fastload_cli.records import (
    SYNTHETIC_LOCATION,
    BatchRecord,
    GpuSample,
    HostSample,
    Mode,
    ModeSpec,
    RunResult,
    RunStatus,
    StopReason,
    Streamed,
)

REAL, SYNTHETIC = ModeSpec(mode=Mode.REAL), ModeSpec(mode=Mode.SYNTHETIC)
Sample = TypeVar("Sample", HostSample, GpuSample)
Run = TypeVar("Run", RunResult, Streamed)


def modes_of(run: RunResult) -> tuple[RunResult, ...]:
    """The real run and the synthetic run ``run`` measured in turn; the real run alone where no
    batch was replayed."""
    own = _own(run)
    switch = first_replay(own)
    substitutions = tuple(s for s in run.substitutions if s.location != SYNTHETIC_LOCATION)
    if not switch:
        return (replace(run, spec=REAL, substitutions=substitutions),)
    last = own[switch].wait_start_ns  # the loop asked for the first replay: the last real step is over
    real = replace(
        run,
        spec=REAL,
        status=RunStatus.OK,
        stop_reason=StopReason.SETTLED if switch < run.requested_batches else StopReason.ENOUGH_BATCHES,
        exit_code=None,
        signal_name=None,
        error=None,
        ended_ns=last,
        iterators=tuple(it for it in run.iterators if it.started_ns <= last),
        batches=tuple(b for b in run.batches if b.wait_end_ns <= last),
        substitutions=substitutions,
        host_samples=_through(run.host_samples, last),
        gpu_samples=_through(run.gpu_samples, last),
        stuck_at=(),
    )
    return real, replace(_replays(run, switch), spec=SYNTHETIC, profile=None)


def part_settled(run: Streamed) -> bool:
    """The part of a real+synthetic run in flight has a stable estimate: the real part
    (``settle.real_settled``: settled, or its verdict decided), or once the replays began, the
    synthetic part read as ``modes_of`` reads it (``settle.settled``). An
    epoch of replays starts no workers, so the replays are never held for an epoch's start (the
    real part's start-up, which asks for that, is not theirs)."""
    switch = first_replay(_own(run))
    if switch:
        return settled(replace(_replays(run, switch), iterators=()))
    return real_settled(run)


def _replays(run: Run, switch: int) -> Run:
    """``run`` read from its first replay (the batch at ``switch``): its warm-up up to it and its
    step, and as many replays after it as the real part asked for."""
    measured = run.requested_batches - run.warmup_batches
    return replace(run, warmup_batches=switch + 1, requested_batches=switch + 1 + measured)


def _through(samples: tuple[Sample, ...], end_ns: int) -> tuple[Sample, ...]:
    """The samples up to ``end_ns`` and the first after it, which the counters' reading at the real
    window's end is interpolated from."""
    after = next((i for i, s in enumerate(samples) if s.t_ns > end_ns), len(samples))
    return samples[: after + 1]


def _own(run: RunResult | Streamed) -> list[BatchRecord]:
    """The training loader's batches, all of them."""
    loader_id = primary_loader_id(run)
    return [b for b in run.batches if b.loader_id == loader_id]
