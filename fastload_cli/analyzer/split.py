"""Where the real pipeline's time per batch goes: storage+decode, augmentation, and the rest.

Each part is what removing it saves: storage and decoding (``cached``: decoded samples kept in
memory), the augmentation (``no-aug``), and what is left with both removed (``cached-no-aug``:
collate, the handoff from workers, the step beside them). The parts come from the split run when
one ran (``interleaved_split``: the pipelines took turns in one run of the script, so they share
the machine's state), otherwise from the separate runs of those modes (``input_split``). The
split run also splits the DataLoader workers' CPU time per batch the same way: where the parts
overlap there too, removing one changes what the others cost in work, not only in timing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.counters import Span, role_delta
from fastload_cli.analyzer.settle import clear_of
from fastload_cli.analyzer.window import Batches, folded, loader_batches, primary_loader, primary_loader_id
from fastload_cli.records import (
    CACHE_LOCATION,
    INTERLEAVED,
    SPLIT_LOCATION,
    BatchRecord,
    GpuSample,
    HostSample,
    InputSplit,
    LoaderInfo,
    Mode,
    ModeSpec,
    PhaseMark,
    ProcRole,
    RunResult,
    RunStatus,
    RunSummary,
    StopReason,
)

# Batches each pipeline measures per turn of the split run, once those prefetched under the turn
# before it are through; and the rounds of turns the run takes.
TURN_MEASURED = 16
SPLIT_ROUNDS = 2
PIPELINES = 4  # real, no-aug, cached, cached-no-aug


def input_split(
    real: RunSummary | None,
    cached: RunSummary | None,
    no_aug: RunSummary | None,
    bare: RunSummary | None,
    synthetic: RunSummary | None,
) -> InputSplit | None:
    """The real run's time per batch, split by the runs that removed part of loading (``bare``:
    the cached-no-aug run); None without a cached run (or a real one) that measured throughput."""
    found = {"real": _batch_ms(real), "cached": _batch_ms(cached), "no-aug": _batch_ms(no_aug)}
    return _split({**found, "cached-no-aug": _batch_ms(bare)}, _batch_ms(synthetic))


def interleaved_split(run: RunResult | None, synthetic: RunSummary | None) -> InputSplit | None:
    """The split from the split run's turns: each pipeline's time per batch over the batches of
    its turns (each turn's first ones, prefetched under the turn before, left out); None when
    the run took no turns with a real and a cached pipeline."""
    if run is None:
        return None
    per_turn = turn_times(run)
    found = {phase: _mean(turns) for phase, turns in per_turn.items()}
    split = _split(found, _batch_ms(synthetic))
    if split is None:
        return None
    means = {phase: [sum(t) / len(t) for t in turns] for phase, turns in per_turn.items()}
    turns = min(len(turns) for turns in per_turn.values())
    # one turn of a pipeline (a script that ended first) says nothing of how its turns differ
    spread = max((max(m) - min(m)) / (max(m) + min(m)) for m in means.values()) if turns > 1 else None
    return replace(split, method=INTERLEAVED, turns=turns, spread=spread, workers_cpu=_split(workers_cpu(run), None))


def turn_times(run: Batches) -> dict[str, list[list[float]]]:
    """Per pipeline, per turn of the training loader: the milliseconds between consecutive
    batches, the first ``turn_settle`` of the turn and of each epoch left out."""
    return {
        phase: [[(end - start) / 1e6 for start, end in turn] for turn in turns]
        for phase, turns in turn_spans(run).items()
    }


def turn_spans(run: Batches) -> dict[str, list[list[Span]]]:
    """Per pipeline, per turn of the training loader: the intervals (from the batch before to
    each batch) that its turn measured, the first ``turn_settle`` of the turn and of each epoch
    left out."""
    loader_id = primary_loader_id(run)
    batches = [b for b in run.batches if b.loader_id == loader_id]
    marks: Sequence[PhaseMark] = [m for m in run.phases if m.loader_id == loader_id]
    if not marks:
        return {}
    settle = turn_settle(primary_loader(run))
    found: dict[str, list[list[Span]]] = defaultdict(list)
    ends = [*(m.batch for m in marks[1:]), len(batches)]
    for mark, end in zip(marks, ends, strict=True):
        end = min(end, len(batches))
        # batch number n (from 1) is batches[n - 1]; each interval ends at a batch of this turn
        intervals = [
            (batches[n - 2].wait_end_ns, batches[n - 1].wait_end_ns)
            for n in range(mark.batch + settle + 1, end + 1)
            if batches[n - 1].index > settle  # an epoch's workers start with nothing prefetched
        ]
        if intervals:
            found[mark.phase].append(intervals)
    return dict(found)


def decided(run: Batches, *, rate: float) -> bool:
    """The split run that measures no-aug and cached for diagnose (``Keep.SPLIT_MODES``) has
    answered what they are asked, after one round of turns: every pipeline took its turn, and
    no-aug's rate lies at least twice ``DECIDED_PRECISION`` from augmentation's line
    (``AUG_SPEEDUP_SIGNIFICANT``), on the same side against ``rate`` (the real run's, which the
    verdict reads it against) and against the real pipeline's turn. A second round could not
    turn that answer; where it could, the run takes its second round, backwards (a steady drift
    then shifts every pipeline alike, and the turns give their spread)."""
    marks = [m for m in run.phases if m.loader_id == primary_loader_id(run)]
    if len(marks) <= len({m.phase for m in marks}):  # the second round has not begun
        return False
    times = turn_times(run)
    real, no_aug = times.get("real"), times.get("no-aug")
    if not real or not no_aug or rate <= 0:
        return False
    samples = sorted(b.samples for b in loader_batches(run))
    gains = (
        _mean(real) / _mean(no_aug),  # against the real pipeline's turn
        1000.0 * samples[len(samples) // 2] / _mean(no_aug) / rate,  # against the real run
    )
    line = th.AUG_SPEEDUP_SIGNIFICANT
    sides = {g > line for g in gains}
    return len(sides) == 1 and all(clear_of(g, line) for g in gains)


def _mean(turns: list[list[float]]) -> float:
    """The mean of a pipeline's milliseconds between batches over all its turns."""
    return sum(map(sum, turns)) / sum(map(len, turns))


def workers_cpu(run: RunResult) -> dict[str, float]:
    """Per pipeline, the DataLoader workers' CPU milliseconds per batch over the intervals its
    turns measured; empty when the workers' CPU time was not sampled (or the loader has none)."""
    found = {}
    for phase, turns in turn_spans(run).items():
        window = [span for turn in turns for span in turn]
        cpu = role_delta(run.host_samples, ProcRole.WORKER, window, lambda p: p.cpu_s)
        if cpu is None:
            return {}
        found[phase] = 1000.0 * cpu / len(window)
    return found


def turn_settle(loader: LoaderInfo | None) -> int:
    """Batches of a turn that were (or may have been) prepared under the turn before it: those
    the workers had prefetched when the pipeline changed, and the ones they were building."""
    if loader is None or not loader.num_workers:
        return 1
    return loader.num_workers * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR) + loader.num_workers


def split_batches(loader: LoaderInfo | None) -> tuple[int, int]:
    """The split run's batches per turn, and all it measures after its warm-up: every pipeline
    ``SPLIT_ROUNDS`` turns of ``turn_settle`` + ``TURN_MEASURED`` batches."""
    turn = turn_settle(loader) + TURN_MEASURED
    return turn, turn * PIPELINES * SPLIT_ROUNDS


def too_short(runs: Sequence[RunResult], warmup: int) -> int | None:
    """The batches the script's training loop takes in all, where one of ``runs`` ended with the
    script (a real+synthetic run's replays hold all its batches) and they are fewer than the
    split run needs (``warmup`` and every pipeline's turns, ``split_batches``): its pipelines could
    not all take their turns in a run of the script. None where the split run fits, or where
    fastload stopped every run before the script ended (its length is not known)."""
    ended = next((r for r in runs if r.status is RunStatus.OK and r.stop_reason is StopReason.SCRIPT_ENDED), None)
    if ended is None or folded(ended) is not None:  # a run long enough to fold its batches holds the split
        return None
    loader_id = primary_loader_id(ended)
    taken = sum(1 for b in ended.batches if b.loader_id == loader_id)
    _, needed = split_batches(primary_loader(ended))
    return taken if taken < warmup + needed else None


def split_run_s(loader: LoaderInfo | None, summaries: Sequence[RunSummary]) -> float | None:
    """About how long the split run would take: the start-up and warm-up of the median run so
    far, then each pipeline's turns at the pace its own run measured (one not measured yet at the
    fastest pace measured); None before a run measured its pace."""
    pace = {s.mode: ms for s in summaries if (ms := _batch_ms(s)) is not None}
    if not pace:
        return None
    turn, _ = split_batches(loader)
    paces = [pace.get(mode, min(pace.values())) for mode in ("real", "no-aug", "cached", "cached-no-aug")]
    overheads = sorted(s.run_wall_s - s.wall_s for s in summaries if s.run_wall_s is not None and s.wall_s)
    overhead = overheads[len(overheads) // 2] if overheads else 0.0
    return overhead + SPLIT_ROUNDS * turn * sum(paces) / 1000.0


def apart_sooner(loader: LoaderInfo | None, real: RunSummary, start_s: float, warmup: int) -> bool:
    """The no-aug and cached runs, each in a run of its own, would be over sooner than the split
    run that measures them in turns: each its warm-up and as many steady batches as the real run's
    window held, one start more (``start_s``: the script's first start, its libraries' import
    included, which a run forked from the warm starter does not repeat), against every pipeline's
    ``SPLIT_ROUNDS`` turns; every batch at the real run's pace, which a pipeline with part of its
    loading removed does not exceed. A script whose batches are slow beside its start pays more
    for the split run's turns than for a start: albumentations_train.py's split run took 157
    batches at 80 ms (12.5 s) where the two runs took 10-20 batches each."""
    pace = _batch_ms(real)
    if pace is None:
        return False
    _, turns = split_batches(loader)
    apart = 2 * (warmup + real.batches)
    return apart * pace / 1000.0 + start_s < turns * pace / 1000.0


def _split(ms: Mapping[str, float | None], step_ms: float | None) -> InputSplit | None:
    real_ms, cached_ms, no_aug_ms, rest_ms = (ms.get(k) for k in ("real", "cached", "no-aug", "cached-no-aug"))
    if real_ms is None or cached_ms is None:
        return None
    storage = real_ms - cached_ms
    augmentation = real_ms - no_aug_ms if no_aug_ms is not None else None
    parts = (storage, augmentation, rest_ms)
    residual = real_ms - sum(p for p in parts if p is not None) if None not in parts else None
    return InputSplit(
        real_ms=real_ms,
        storage_decode_ms=storage,
        augmentation_ms=augmentation,
        rest_ms=rest_ms,
        step_ms=step_ms,
        residual_ms=residual,
    )


def _batch_ms(summary: RunSummary | None) -> float | None:
    rate = summary.throughput_batches_per_s if summary is not None else None
    return 1000.0 / rate if rate else None


# The pipelines of the split run that stand for a mode diagnose compares, and which of the split
# run's substitutions each one made: the no-aug stand-ins, or the cache.
AS_MODES = {"no-aug": Mode.NO_AUG, "cached": Mode.CACHED}


def modes_of(run: RunResult) -> dict[Mode, tuple[RunResult, ...]]:
    """The no-aug and cached runs the split run stands for: one run per turn of each pipeline,
    its batches those of the turn, the first ``turn_settle`` (prepared under the turn before it)
    its warm-up, the machine's samples of its span, and the substitutions that pipeline made.
    A pipeline that took no turn (nothing to replace, or nothing to cache) has none."""
    loader_id = primary_loader_id(run)
    own = loader_batches(run)
    marks = [m for m in run.phases if m.loader_id == loader_id]
    if not marks:
        return {}
    ends = [*(m.batch for m in marks[1:]), len(own)]
    settle = turn_settle(primary_loader(run))
    found: dict[Mode, list[RunResult]] = defaultdict(list)
    for mark, end in zip(marks, ends, strict=True):
        mode = AS_MODES.get(mark.phase)
        if mode is not None and mark.batch >= 1 and end - mark.batch > settle:
            found[mode].append(_turn(run, mode, own[mark.batch - 1 : end], settle))
    return {mode: tuple(turns) for mode, turns in found.items()}


def _turn(run: RunResult, mode: Mode, turn: list[BatchRecord], settle: int) -> RunResult:
    """One turn of the split run as a run of ``mode``: ``turn``, its training loader's batches
    from the one before it to its last, the first ``settle`` of its own its warm-up."""
    began, ended = turn[0].wait_end_ns, turn[-1].wait_end_ns
    cached = mode is Mode.CACHED
    return replace(
        run,
        spec=ModeSpec(mode=mode),
        status=RunStatus.OK,
        stop_reason=StopReason.ENOUGH_BATCHES,
        requested_batches=len(turn) - 1,
        warmup_batches=settle,
        started_ns=began,
        ended_ns=ended,
        exit_code=None,
        signal_name=None,
        error=None,
        iterators=(),  # a turn has no iter() of its own: no start-up figure (an epoch's is the real run's)
        batches=tuple(b for b in run.batches if began < b.wait_end_ns <= ended),
        substitutions=tuple(
            s for s in run.substitutions if s.location != SPLIT_LOCATION and (s.location == CACHE_LOCATION) == cached
        ),
        host_samples=_around(run.host_samples, began, ended),
        gpu_samples=_around(run.gpu_samples, began, ended),
        phases=(),
        profile=None,
        stuck_at=(),
    )


Sample = TypeVar("Sample", HostSample, GpuSample)


def _around(samples: tuple[Sample, ...], began: int, ended: int) -> tuple[Sample, ...]:
    """The samples of the span, and the last before it and the first after it, which the
    counters' readings at its edges are interpolated from."""
    first = max(0, next((i for i, s in enumerate(samples) if s.t_ns >= began), len(samples)) - 1)
    after = next((i for i, s in enumerate(samples) if s.t_ns > ended), len(samples))
    return samples[first : after + 1]
