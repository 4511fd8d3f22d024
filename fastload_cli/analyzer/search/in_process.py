"""An in-process run (``runner/child/in_process.py``: several num_workers settings in turn in one
run of the script) as the workers=N runs it stands for, cut at its PHASE marks.

Each setting's run holds the batches it delivered, its own start-up burst as warm-up (the new
workers start with nothing prefetched), the machine's samples of its span, and a start-up that
begins when it took over. Where a setting can be measured this way is decided in ``step``.

Pure functions.
"""

from __future__ import annotations

from dataclasses import replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.settle import settled
from fastload_cli.analyzer.window import epoch_batches, primary_loader, primary_loader_id, startup_burst
from fastload_cli.records import (
    BatchRecord,
    IteratorInfo,
    LoaderInfo,
    Mode,
    ModeSpec,
    PhaseMark,
    RunResult,
    RunStatus,
    StopReason,
    Streamed,
    setting_location,
)


def runs_of(run: RunResult, *, at_epochs: bool = False) -> tuple[RunResult, ...]:
    """One workers=N run per setting the in-process run measured, in order; none without marks.
    ``at_epochs``: the settings took over as epochs started (``ChildSpec.turn_at_epochs``), and
    each later setting's run begins with the epoch before its own as its warm-up, as a run of its
    own measured over whole epochs after one (``epochs.sizes``) begins."""
    marks, own = _marks(run)
    if not marks:
        return ()
    lead = (epoch_batches(primary_loader(run)) or 0) if at_epochs else 0
    ends = [*(m.batch for m in marks[1:]), len(own)]
    found = []
    for position, (mark, end) in enumerate(zip(marks, ends, strict=True)):
        start = max(0, mark.batch - lead)
        mine = own[start:end]
        if not mine or len(mine) <= mark.batch - start:
            continue
        began = _began(own, start, run.started_ns)
        last = position == len(marks) - 1
        found.append(_point(run, mark, mine, began, last, lead=mark.batch - start if at_epochs else None))
    return tuple(found)


def setting_settled(run: Streamed) -> bool:
    """The setting in force in an in-process run in flight has a stable estimate (``settle.settled``
    on its batches since it took over): the parent moves the run on to the next one."""
    marks, own = _marks(run)
    if not marks or len(own) <= marks[-1].batch:  # none in force, or nothing delivered under it yet
        return False
    mark = marks[-1]
    return settled(_point(_as_run(run), mark, own[mark.batch :], _began(own, mark.batch, 0), last=True))


def _marks(run: RunResult | Streamed) -> tuple[list[PhaseMark], list[BatchRecord]]:
    """The training loader's PHASE marks and its batches."""
    loader_id = primary_loader_id(run)
    return [m for m in run.phases if m.loader_id == loader_id], [b for b in run.batches if b.loader_id == loader_id]


def _as_run(run: Streamed) -> RunResult:
    """A run in flight, as a finished run of an in-process run reads (the fields ``_point`` needs)."""
    return RunResult(
        spec=ModeSpec(mode=Mode.IN_PROCESS),
        status=RunStatus.OK,
        stop_reason=StopReason.ENOUGH_BATCHES,
        requested_batches=run.requested_batches,
        warmup_batches=run.warmup_batches,
        started_ns=0,
        ended_ns=0,
        loaders=run.loaders,
        iterators=run.iterators,
        batches=run.batches,
        phases=run.phases,
    )


def _began(own: list[BatchRecord], batch: int, started_ns: int) -> int:
    """When the ``batch``-th batch (from 0) began to be waited for: as the one before it arrived."""
    return own[batch - 1].wait_end_ns if batch else started_ns


def _point(
    run: RunResult, mark: PhaseMark, mine: list[BatchRecord], began: int, last: bool, *, lead: int | None = None
) -> RunResult:
    """The workers=N run of ``mark``'s setting: its batches ``mine``. ``lead``, for a setting that
    took over as an epoch started: how many of ``mine`` the setting before it loaded (the epoch
    before, its warm-up; none for the first), and the run keeps its mark, moved to there."""
    spec = ModeSpec.parse(mark.phase)
    workers = spec.workers or 0
    ended = mine[-1].wait_end_ns
    loaders = tuple(_at(lo, workers) if lo.loader_id == mark.loader_id else lo for lo in run.loaders)
    took_over = IteratorInfo(
        loader_id=mark.loader_id,
        iterator_id=mine[0].iterator_id,
        started_ns=began,
        ready_ns=began,
        worker_pids=mark.worker_pids,
        reused=False,
    )
    iterators = tuple(it for it in run.iterators if began <= it.started_ns <= ended)
    burst = startup_burst(next((lo for lo in loaders if lo.loader_id == mark.loader_id), None))
    warmup = lead if lead else max(burst, 1)
    return replace(
        run,
        spec=spec,
        status=run.status if last else RunStatus.OK,
        stop_reason=run.stop_reason if last else _why_ended(mark, mine[lead:]),
        requested_batches=len(mine),
        warmup_batches=warmup if mark.batch else run.warmup_batches,
        started_ns=began,
        ended_ns=ended,
        loaders=loaders,
        iterators=(iterators if lead else (took_over, *iterators)) if mark.batch else run.iterators,
        batches=tuple(b for b in run.batches if began < b.wait_end_ns <= ended),
        substitutions=tuple(
            replace(s, replacement=f"num_workers={workers}") if s.location == setting_location("num_workers") else s
            for s in run.substitutions
        ),
        host_samples=tuple(s for s in run.host_samples if began <= s.t_ns <= ended),
        gpu_samples=tuple(s for s in run.gpu_samples if began <= s.t_ns <= ended),
        phases=(replace(mark, batch=lead),) if lead is not None else (),
        profile=None,
    )


def _why_ended(mark: PhaseMark, mine: list[BatchRecord]) -> StopReason:
    """A setting that handed over before its planned batches did so once it had settled."""
    return StopReason.SETTLED if mark.planned and len(mine) < mark.planned else StopReason.ENOUGH_BATCHES


def _at(loader: LoaderInfo, workers: int) -> LoaderInfo:
    """The loader as the setting ran it: torch's prefetch_factor of 2 where it had none."""
    factor = loader.prefetch_factor if loader.prefetch_factor is not None or not workers else th.DEFAULT_PREFETCH_FACTOR
    return replace(loader, num_workers=workers, prefetch_factor=factor)
