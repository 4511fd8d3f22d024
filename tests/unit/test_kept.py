"""A long run's batch records: bounded however long it runs, its figures those of every batch."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from fastload_cli.analyzer.metrics import summarize
from fastload_cli.records import BatchRecord, IteratorInfo, Mode, ModeSpec, RunResult
from fastload_cli.runner.collect import EventCollector
from fastload_cli.runner.kept import KeptBatches, without_dropped
from tests.unit import builders as b

EPOCHS, PER_EPOCH = 4, 600


def _epochs(seed: int = 1) -> tuple[list[BatchRecord], list[IteratorInfo]]:
    """Four epochs of a loop without workers whose waits and steps vary batch to batch."""
    rng = random.Random(seed)
    found: list[BatchRecord] = []
    iterators = []
    start = 0
    for epoch in range(1, EPOCHS + 1):
        waits = [rng.uniform(0.5, 30.0) for _ in range(PER_EPOCH)]
        computes = [rng.uniform(5.0, 15.0) for _ in range(PER_EPOCH)]
        records = b.batches(waits, computes, iterator_id=epoch, start_ns=start + 3 * b.MS)
        iterators.append(
            IteratorInfo(loader_id=1, iterator_id=epoch, started_ns=start, ready_ns=start, worker_pids=(), reused=False)
        )
        found.extend(dataclasses.replace(r, samples=rng.choice((32, 32, 32, 17))) for r in records)
        start = found[-1].wait_end_ns + 40 * b.MS  # the script's work between epochs
    return found, iterators


def _whole_run(records: list[BatchRecord], iterators: list[IteratorInfo]) -> RunResult:
    run = b.run("real", records, loaders=[b.loader(num_workers=0)], warmup=5)
    samples = b.host_samples(records[-1].wait_end_ns, main_cores=0.8)
    return dataclasses.replace(run, iterators=tuple(iterators), host_samples=samples)


def _folded(run: RunResult, first: int, latest: int) -> RunResult:
    kept = KeptBatches(first=first, latest=latest)
    for record in run.batches:
        kept.add(record)
    iterators = without_dropped(list(run.iterators), kept.dropped_epochs)
    return dataclasses.replace(run, batches=kept.records(), folded=kept.folded(), iterators=tuple(iterators))


def test_a_long_run_keeps_its_first_and_latest_batches_and_folds_those_between() -> None:
    records, _ = _epochs()
    kept = KeptBatches(first=100, latest=200)
    for record in records:
        kept.add(record)
    found, (fold,) = kept.records(), kept.folded()
    assert len(found) == 300
    assert found[:100] == tuple(records[:100])
    assert [r.wait_end_ns for r in found[100:]] == [r.wait_end_ns for r in records[-200:]]
    assert fold.batches == len(records) - 300
    assert fold.samples == sum(r.samples for r in records[100:-200])
    assert fold.epochs == 3  # the second, third and fourth epochs began among the folded batches
    # the first batch kept after the folded ones says where its step began: the last folded one's end
    assert found[100].after_ns == records[-201].wait_end_ns
    assert kept.dropped_epochs == [(1, 2), (1, 3)]  # folded whole; the first and the last keep batches


@pytest.mark.parametrize("first, latest", [(50, 50), (200, 700), (1_000, 300)])
def test_a_folded_run_reads_as_the_same_run_kept_whole(first: int, latest: int) -> None:
    whole = _whole_run(*_epochs())
    folded = _folded(whole, first, latest)
    assert folded.folded and len(folded.batches) == first + latest
    one, other = summarize(whole), summarize(folded)
    assert other.batches == one.batches and other.samples == one.samples
    assert other.epoch_boundaries == one.epoch_boundaries
    for name in ("wall_s", "throughput_samples_per_s", "data_wait_fraction", "training_samples_per_s"):
        assert getattr(other, name) == pytest.approx(getattr(one, name), rel=1e-9), name
    assert other.main_cpu_percent == pytest.approx(one.main_cpu_percent, rel=1e-6)


def test_a_folded_run_with_workers_counts_every_step_but_each_epochs_first() -> None:
    records, iterators = _epochs()
    whole = dataclasses.replace(_whole_run(records, iterators), loaders=(b.loader(num_workers=2),))
    folded = _folded(whole, 300, 300)
    steps = [r for r in records[5:] if r.index > 0]  # after warm-up, each epoch's first left out
    assert summarize(folded).batches == len(steps)
    assert summarize(folded).samples == sum(r.samples for r in steps)
    assert summarize(whole).batches < len(steps)  # kept whole: each epoch's burst and drain left out


def _event(record: BatchRecord) -> bytes:
    return json.dumps({"kind": "batch", **dataclasses.asdict(record)}).encode() + b"\n"


def test_the_collector_keeps_a_long_runs_records_and_its_epochs_bounded() -> None:
    records, iterators = _epochs()
    c = EventCollector(kept=KeptBatches(first=100, latest=100))
    by_epoch = {it.iterator_id: it for it in iterators}
    for record in records:
        if record.index == 0:
            it = by_epoch[record.iterator_id]
            c.feed(json.dumps({"kind": "iterator", **dataclasses.asdict(it)}).encode() + b"\n")
        c.feed(_event(record))
    assert len(c.batches) == 200 and c.most_batches() == len(records)
    assert [it.iterator_id for it in c.iterators] == [1, 4]  # the epochs folded whole are gone
    (fold,) = c.folded()
    assert fold.batches == len(records) - 200


def test_a_run_in_parts_keeps_every_record(monkeypatch) -> None:
    from pathlib import Path

    from fastload_cli.config import RunConfig
    from fastload_cli.records import ChildSpec
    from fastload_cli.runner import kept as keeping
    from fastload_cli.runner.kept import for_run

    monkeypatch.setattr(keeping, "FIRST_BATCHES", 100)
    monkeypatch.setattr(keeping, "LATEST_BATCHES", 100)
    for mode in (Mode.SPLIT, Mode.REAL_SYNTHETIC, Mode.IN_PROCESS):
        config = RunConfig(script=Path("train.py"), script_arg0="train.py", child=ChildSpec(mode=ModeSpec(mode=mode)))
        kept = for_run(config)
        for record in _epochs()[0]:
            kept.add(record)
        assert len(kept) == EPOCHS * PER_EPOCH and not kept.folded()
    real = RunConfig(script=Path("train.py"), script_arg0="train.py")
    kept = for_run(real)
    for record in _epochs()[0]:
        kept.add(record)
    assert len(kept) == 200 + real.warmup and kept.folded()  # its warm-up, first and latest batches
