"""The cached split: from the separate runs of the modes, and from the split run's turns."""

from __future__ import annotations

import dataclasses
import random

import pytest

from fastload_cli.analyzer import split
from fastload_cli.records import (
    INTERLEAVED,
    SEPARATE_RUNS,
    HostSample,
    InputSplit,
    IteratorInfo,
    PhaseMark,
    ProcRole,
    ProcSample,
    RunResult,
    RunStatus,
    StopReason,
    SystemSample,
)
from fastload_cli.reporters import terminal
from tests.unit import builders as b
from tests.unit.test_report_sections import full_report, text

PER_BATCH = {"real": 40.0, "cached": 30.0, "no-aug": 25.0, "cached-no-aug": 18.0}
PALINDROME = ("real", "no-aug", "cached", "cached-no-aug", "cached-no-aug", "cached", "no-aug", "real")


def test_the_cached_runs_split_a_batchs_time_and_the_synthetic_run_gives_the_step_inside_the_rest() -> None:
    per_batch = {**PER_BATCH, "synthetic": 10.0}
    found = {m: dataclasses.replace(b.summary(m), throughput_batches_per_s=1000 / ms) for m, ms in per_batch.items()}
    parts = split.input_split(
        found["real"], found["cached"], found["no-aug"], found["cached-no-aug"], found["synthetic"]
    )
    assert parts is not None and parts.method == SEPARATE_RUNS
    assert parts.real_ms == pytest.approx(40.0)
    assert parts.storage_decode_ms == pytest.approx(10.0)  # real - cached
    assert parts.augmentation_ms == pytest.approx(15.0)  # real - no-aug
    assert parts.rest_ms == pytest.approx(18.0)  # cached-no-aug: collate, the handoff and the step
    assert parts.step_ms == pytest.approx(10.0)  # synthetic
    assert parts.residual_ms == pytest.approx(-3.0)  # the parts overlap: removing both saved less than each alone
    partial = split.input_split(found["real"], found["cached"], None, None, found["synthetic"])
    assert partial is not None and partial.augmentation_ms is None and partial.rest_ms is None
    assert partial.residual_ms is None
    assert split.input_split(found["real"], None, found["no-aug"], found["cached-no-aug"], None) is None


def split_run(
    order: tuple[str, ...] = PALINDROME,
    *,
    turn: int = 6,
    warmup: int = 2,
    workers: int = 0,
    drift: float = 0.0,
    epoch: int | None = None,
    per_batch: dict[str, float] = PER_BATCH,
) -> RunResult:
    """A split run whose pipelines take ``turn`` batches each in ``order``, each batch ``per_batch``
    of its pipeline apart, slower by ``drift`` per batch; a new epoch every ``epoch`` batches, whose
    first batch waits a second for its workers."""
    times = [per_batch["real"]] * warmup
    marks = []
    for position, phase in enumerate(order):
        marks.append(PhaseMark(loader_id=1, batch=warmup + position * turn, phase=phase))
        times += [per_batch[phase]] * turn
    times = [ms * (1 + drift * n) for n, ms in enumerate(times)]
    found, t = [], 0
    for n, ms in enumerate(times):
        iterator, index = (n // epoch + 1, n % epoch) if epoch else (1, n)
        t += int((1000.0 if epoch and index == 0 and n else ms) * b.MS)
        found.append(dataclasses.replace(b.batches([0.0], 0.0)[0], iterator_id=iterator, index=index, wait_end_ns=t))
    run = b.run("split", found, loaders=[b.loader(num_workers=workers)], warmup=warmup)
    return dataclasses.replace(run, phases=tuple(marks))


def test_the_split_runs_turns_give_each_pipelines_time_per_batch() -> None:
    parts = split.interleaved_split(split_run(), None)
    assert parts is not None and parts.method == INTERLEAVED and parts.turns == 2
    assert parts.real_ms == pytest.approx(40.0)
    assert parts.storage_decode_ms == pytest.approx(10.0)
    assert parts.augmentation_ms == pytest.approx(15.0)
    assert parts.rest_ms == pytest.approx(18.0)
    assert parts.residual_ms == pytest.approx(-3.0)
    assert parts.spread == pytest.approx(0.0)


def test_a_turns_first_batches_are_left_out_as_prepared_under_the_turn_before() -> None:
    # two workers with two batches each prefetched: six of each turn may come from the turn before
    run = split_run(turn=10, workers=2)
    assert split.turn_settle(run.loaders[0]) == 6
    # each turn's first batch comes half a second late (the pipeline changing over): left out
    late = [
        dataclasses.replace(x, wait_end_ns=x.wait_end_ns + 500 * b.MS * sum(m.batch <= i for m in run.phases))
        for i, x in enumerate(run.batches)
    ]
    parts = split.interleaved_split(dataclasses.replace(run, batches=tuple(late)), None)
    assert parts is not None and parts.real_ms == pytest.approx(40.0) and parts.rest_ms == pytest.approx(18.0)
    assert [len(t) for t in split.turn_times(run)["real"]] == [4, 4]  # ten a turn, six left out


def test_an_epochs_start_up_is_left_out_of_the_turn_it_falls_in() -> None:
    parts = split.interleaved_split(split_run(epoch=20), None)
    assert parts is not None and parts.real_ms == pytest.approx(40.0) and parts.rest_ms == pytest.approx(18.0)


def test_turns_in_a_palindrome_cancel_a_steady_drift() -> None:
    drifting = split.interleaved_split(split_run(drift=0.01), None)
    assert drifting is not None and drifting.real_ms > 40.0  # everything slowed down ...
    # ... every pipeline alike: the shares stay those of a machine that did not drift
    assert drifting.storage_decode_ms / drifting.real_ms == pytest.approx(10.0 / 40.0)
    assert drifting.rest_ms / drifting.real_ms == pytest.approx(18.0 / 40.0)
    # in one direction only, the pipelines measured later look slower than they are
    forwards = split.interleaved_split(split_run(PALINDROME[:4] * 2, drift=0.01), None)
    assert forwards is not None and forwards.rest_ms / forwards.real_ms > 18.0 / 40.0 + 0.01


def test_turn_to_turn_noise_is_reported_as_the_spread() -> None:
    rng = random.Random(7)
    run = split_run()
    noisy = [dataclasses.replace(x, wait_end_ns=x.wait_end_ns + rng.randrange(0, 3 * b.MS)) for x in run.batches]
    parts = split.interleaved_split(dataclasses.replace(run, batches=tuple(noisy)), None)
    assert parts is not None and 0 < parts.spread < 0.5


# What a batch of each pipeline costs the workers, in CPU milliseconds: storage and decoding cost
# 30 beside the augmentation and 8 beside its stand-ins (the two parts overlap).
WORKER_CPU = {"real": 70.0, "cached": 40.0, "no-aug": 20.0, "cached-no-aug": 12.0}


def with_worker_cpu(run: RunResult) -> RunResult:
    """``run`` with two workers whose CPU time grows by ``WORKER_CPU`` of the pipeline in force
    at each batch (half each), sampled at every batch's end."""
    spent, samples = 0.0, []
    phase_at = {}
    for mark in run.phases:
        phase_at[mark.batch] = mark.phase
    phase = "real"
    for n, batch in enumerate(run.batches):
        phase = phase_at.get(n, phase)  # batch n (from 0) is the (n + 1)th: the turn from mark n on
        spent += WORKER_CPU[phase] / 2000.0 if n else 0.0
        workers = tuple(
            ProcSample(pid=pid, role=ProcRole.WORKER, cpu_s=spent, runq_s=0.0, rss_bytes=None, read_bytes=None)
            for pid in (201, 202)
        )  # fmt: skip
        system = SystemSample(busy_s=0.0, idle_s=0.0, iowait_s=None, disk_read_bytes=None)
        samples.append(HostSample(t_ns=batch.wait_end_ns, procs=workers, system=system))
    return dataclasses.replace(run, host_samples=tuple(samples))


def test_the_split_run_splits_the_workers_cpu_time_per_batch_the_same_way() -> None:
    run = with_worker_cpu(split_run(turn=12, workers=1))  # one worker, two batches prefetched: 3 left out a turn
    assert split.workers_cpu(run) == pytest.approx(WORKER_CPU)
    parts = split.interleaved_split(run, None)
    assert parts is not None and parts.workers_cpu is not None
    cpu = parts.workers_cpu
    assert cpu.real_ms == pytest.approx(70.0)
    assert cpu.storage_decode_ms == pytest.approx(30.0)  # beside the augmentation (8 beside its stand-ins)
    assert cpu.augmentation_ms == pytest.approx(50.0)
    assert cpu.rest_ms == pytest.approx(12.0)
    assert cpu.residual_ms == pytest.approx(-22.0)  # the parts overlap in the work itself
    # the workers' CPU time not sampled: no CPU split
    unsampled = split.interleaved_split(split_run(turn=12, workers=1), None)
    assert unsampled is not None and unsampled.workers_cpu is None and split.workers_cpu(split_run()) == {}


def test_without_turns_of_a_real_and_a_cached_pipeline_there_is_no_split() -> None:
    assert split.interleaved_split(None, None) is None
    no_turns = dataclasses.replace(split_run(), phases=())
    assert split.interleaved_split(no_turns, None) is None
    uncached = split_run(("real", "no-aug", "no-aug", "real"))
    assert split.interleaved_split(uncached, None) is None


def test_the_split_run_is_sized_by_the_loader() -> None:
    assert split.split_batches(b.loader(num_workers=0)) == (1 + split.TURN_MEASURED, (1 + split.TURN_MEASURED) * 8)
    assert split.split_batches(b.loader(num_workers=4)) == (12 + split.TURN_MEASURED, (12 + split.TURN_MEASURED) * 8)


def test_the_split_runs_length_is_estimated_from_each_pipelines_own_pace() -> None:
    # two workers, two batches prefetched: turns of 6 + 16 = 22 batches, two of each pipeline;
    # every run so far spent 3 s besides its measured window (start-up, imports, warm-up)
    def run(mode: str, ms: float) -> object:
        found = dataclasses.replace(b.summary(mode), throughput_batches_per_s=1000 / ms, wall_s=5.0)
        return dataclasses.replace(found, run_wall_s=8.0)

    summaries = [run("real", 200.0), run("synthetic", 60.0), run("no-aug", 120.0), run("cached", 150.0)]
    loader = b.loader(num_workers=2)
    # 44 batches each at real 200, no-aug 120, cached 150 ms, and cached-no-aug, not measured yet,
    # at the fastest pace measured (the synthetic run's 60 ms): 44 x 530 ms = 23.3 s, plus 3 s
    assert split.split_run_s(loader, summaries) == pytest.approx(3.0 + 44 * 0.530)
    # the median run's overhead; no estimate before any run measured a pace
    assert split.split_run_s(loader, [run("real", 200.0)]) == pytest.approx(3.0 + 44 * 4 * 0.2)
    assert split.split_run_s(loader, [dataclasses.replace(b.summary(), throughput_batches_per_s=None)]) is None


def test_the_split_runs_no_aug_and_cached_turns_stand_for_those_modes_runs() -> None:
    from fastload_cli.analyzer.metrics import summarize
    from fastload_cli.records import CACHE_LOCATION, SPLIT_LOCATION, Mode, Substitution

    # two workers: each turn's first 6 batches were prepared under the turn before it
    run = split_run(turn=22, workers=2, drift=0.0)
    said = (
        b.NO_AUG_SUBSTITUTION,
        Substitution(loader_id=1, location=CACHE_LOCATION, original="Folder", replacement="cached in memory"),
        Substitution(loader_id=1, location=SPLIT_LOCATION, original="the split", replacement="unchanged"),
    )
    found = split.modes_of(dataclasses.replace(run, substitutions=said))
    assert set(found) == {Mode.NO_AUG, Mode.CACHED}  # real and cached-no-aug are no mode diagnose compares
    for mode, phase in ((Mode.NO_AUG, "no-aug"), (Mode.CACHED, "cached")):
        turns = found[mode]
        assert len(turns) == 2 and all(t.spec.mode is mode for t in turns)
        for turn in turns:
            assert len(turn.batches) == 22 and turn.warmup_batches == split.turn_settle(turn.loaders[0])
            figures = summarize(turn)
            # its own pipeline's pace alone, the batches prepared under the turn before left out
            assert figures.batches == 22 - 6 and 1000 / figures.throughput_batches_per_s == pytest.approx(
                PER_BATCH[phase], rel=1e-3
            )
    # an epoch that started inside a turn gives that turn no start-up figure (its iter() came after the
    # turn's first batch): the start-up of an epoch is the real run's to report
    epoch = IteratorInfo(loader_id=1, iterator_id=2, started_ns=run.batches[60].wait_end_ns + 1, ready_ns=0,
                         worker_pids=(), reused=False)  # fmt: skip
    again = split.modes_of(dataclasses.replace(run, iterators=(*run.iterators, epoch), substitutions=said))
    assert all(summarize(t).startup_s is None for turns in again.values() for t in turns)
    assert [s.location for s in found[Mode.NO_AUG][0].substitutions] == [b.NO_AUG_SUBSTITUTION.location]
    assert [s.location for s in found[Mode.CACHED][0].substitutions] == [CACHE_LOCATION]
    assert split.modes_of(dataclasses.replace(run, phases=())) == {}  # a run that took no turns


def test_one_turn_a_pipeline_gives_no_turn_to_turn_spread_and_the_report_says_why() -> None:
    once = split.interleaved_split(split_run(PALINDROME[:4]), None)  # the script ended after a round
    assert once is not None and once.turns == 1 and once.spread is None
    assert once.real_ms == pytest.approx(40.0) and once.storage_decode_ms == pytest.approx(10.0)
    said = report_text(once)
    assert "one turn each, so how much turns differ is not known" in said and "spread" not in said
    twice = split.interleaved_split(split_run(), None)
    assert twice is not None and "(2 turns each, turn-to-turn spread ±0%)" in report_text(twice)


def report_text(found: InputSplit) -> str:
    """The report's split section for ``found``, as one line of text (the terminal wraps it)."""
    return " ".join(text(*terminal.SECTIONS["split"](dataclasses.replace(full_report(), split=found))).split())


def test_a_script_whose_loop_ends_before_the_split_runs_turns_is_too_short_for_it() -> None:
    loader = b.loader(num_workers=2)  # 6 batches a turn prepared under the one before, 16 measured
    _, needed = split.split_batches(loader)
    assert needed == 22 * 8

    def ended(batches: int, stop: StopReason = StopReason.SCRIPT_ENDED) -> RunResult:
        return b.run("synthetic", b.batches([5.0] * batches, 10.0), loaders=[loader], warmup=5, stop=stop)

    assert split.too_short([b.run("real", b.batches([5.0] * 30, 10.0), loaders=[loader])], 5) is None  # stopped
    assert split.too_short([b.run("real", b.batches([5.0] * 30, 10.0)), ended(64)], 5) == 64
    assert split.too_short([ended(5 + needed)], 5) is None
    assert split.too_short([ended(64, StopReason.SETTLED)], 5) is None
    failed = dataclasses.replace(ended(64), status=RunStatus.FAILED)
    assert split.too_short([failed], 5) is None  # the script failed: its length is not its loop's


def test_the_split_run_for_no_aug_is_over_after_one_round_where_no_augs_answer_is_decided() -> None:
    real_rate = 1000.0 * 32 / PER_BATCH["real"]  # the real run's samples/s, at the real turn's pace
    # no-aug 1.6x the real pipeline: past augmentation's line by more than twice the precision
    assert not split.decided(split_run(PALINDROME[:4]), rate=real_rate)  # the round's last turn may go on
    assert split.decided(split_run(PALINDROME[:5]), rate=real_rate)  # the second round began
    assert not split.decided(split_run(PALINDROME[:5]), rate=real_rate * 1.4)  # 1.14x the real run: near it
    near = {**PER_BATCH, "no-aug": 33.0}  # 1.21x: within the line's reach, the second round runs
    assert not split.decided(split_run(PALINDROME[:5], per_batch=near), rate=real_rate)
    costless = {**PER_BATCH, "no-aug": 45.0}  # no faster without augmentation: decided too
    assert split.decided(split_run(PALINDROME[:5], per_batch=costless), rate=real_rate)
    alone = split_run(("real", "cached", "cached", "real"))  # nothing to replace: no-aug has no answer
    assert not split.decided(alone, rate=real_rate)
