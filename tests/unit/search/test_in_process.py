"""An in-process run (several num_workers settings in turn in one run) cut into its settings'
runs, and the settings a sweep measures that way (``search/in_process.py``, ``search/step.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import search
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.search import epochs, sizing, step
from fastload_cli.analyzer.search.in_process import runs_of, setting_settled
from fastload_cli.records import (
    WHOLE_EPOCHS,
    Mode,
    ModeSpec,
    PhaseMark,
    RunResult,
    RunSummary,
    StopReason,
    Streamed,
    Substitution,
)
from tests.unit import builders as b
from tests.unit.search.sweeps import pt


def in_process_run() -> object:
    # one 200-batch epoch: 2 workers for batches 1-40 (a 40 ms step, all loading), then 4 workers
    # (20 ms) for 41-100: the first 8 of those wait 100 ms (new workers starting), the rest 20 ms
    waits = [100] + [40] * 39 + [100] * 8 + [20] * 52
    found = b.run("in-process", b.batches(waits, 0), loaders=[b.loader(num_workers=2)], warmup=4)
    marks = (
        PhaseMark(loader_id=1, batch=0, phase="workers=2", worker_pids=(11, 12)),
        PhaseMark(loader_id=1, batch=40, phase="workers=4", worker_pids=(21, 22, 23, 24)),
    )
    workers = Substitution(
        loader_id=1, location="DataLoader(num_workers=...)", original="num_workers=0", replacement="num_workers=2"
    )
    return dataclasses.replace(found, phases=marks, substitutions=(workers,))


def test_an_in_process_run_is_cut_into_one_workers_run_per_setting() -> None:
    first, second = runs_of(in_process_run())
    assert first.spec == ModeSpec(mode=Mode.WORKERS, workers=2) and first.label == "workers=2"
    assert second.label == "workers=4" and second.loaders[0].num_workers == 4
    assert [len(first.batches), len(second.batches)] == [40, 60]
    assert second.substitutions[0].replacement == "num_workers=4"
    # the second setting's warm-up is its own start-up burst: 4 workers x 2 prefetched
    assert second.warmup_batches == 8 and first.warmup_batches == 4
    # its start-up runs from the switch (the end of batch 40) to its first batch
    assert second.iterators[0].started_ns == first.batches[-1].wait_end_ns
    assert second.iterators[0].worker_pids == (21, 22, 23, 24)
    a, c = summarize(first), summarize(second)
    assert a.num_workers == 2 and c.num_workers == 4
    assert a.throughput_batches_per_s == pytest.approx(25.0)  # 40 ms a batch
    assert c.throughput_batches_per_s == pytest.approx(50.0)  # 20 ms, the 8 slow ones left out
    assert c.startup_s == pytest.approx(0.100)


def epochs_in_turn() -> RunResult:
    """Epochs of 4 batches (100 ms steps): a warm-up epoch and one more at 2 workers (each epoch's
    first batch waits 300 ms for its workers), then one at 0 workers (each batch waits 50 ms)."""
    out, start = [], 0
    for epoch, waits in enumerate(([300.0, 0, 0, 0], [300.0, 0, 0, 0], [50.0] * 4), start=1):
        made = b.batches(waits, 100.0, iterator_id=epoch, start_ns=start)
        out.extend(made)
        start = made[-1].wait_end_ns + 100 * b.MS
    loader = dataclasses.replace(b.loader(num_workers=2), dataset_len=128)
    found = b.run("in-process", out, loaders=[loader], warmup=4, requested=12)
    marks = (
        PhaseMark(loader_id=1, batch=0, phase="workers=2", worker_pids=(11, 12), planned=8),
        PhaseMark(loader_id=1, batch=8, phase="workers=0", planned=4),
    )
    return dataclasses.replace(found, phases=marks)


def test_settings_in_turn_at_epochs_are_cut_into_runs_of_whole_epochs_after_one() -> None:
    first, second = runs_of(epochs_in_turn(), at_epochs=True)
    assert [first.label, second.label] == ["workers=2", "workers=0"]
    # each is a run of one whole epoch after one: the second's warm-up is the epoch before its own
    assert (first.warmup_batches, first.requested_batches) == (4, 8)
    assert (second.warmup_batches, second.requested_batches) == (4, 8)
    assert [b.iterator_id for b in second.batches] == [2] * 4 + [3] * 4
    # each read over its epoch: the step before it, its start-up or waits, its steps
    two = epochs.as_point(first, pt(2, 320.0))
    none = epochs.as_point(second, pt(0, 213.0))
    assert two.variant == none.variant == WHOLE_EPOCHS
    assert two.throughput_samples_per_s == pytest.approx(128 / 0.7)
    assert none.throughput_samples_per_s == pytest.approx(128 / 0.6)


def test_a_run_without_marks_stands_for_no_setting() -> None:
    assert runs_of(dataclasses.replace(in_process_run(), phases=())) == ()


def test_the_first_setting_keeps_the_runs_warm_up_and_later_ones_lead_with_their_burst() -> None:
    loader = b.loader(num_workers=2)  # 10,000 samples in batches of 32: a long epoch
    warmup, phases = sizing.in_turn((2, 4), loader, 5, 30)
    assert warmup == 5 and phases == ((2, 5 + 30), (4, 8 + 30))


def together(runs: list[RunResult], summaries: list[RunSummary], limits: search.Limits) -> tuple[int, ...]:
    """The settings the search's next step measures in turn, as the session would see them."""
    found = search.state(runs, summaries, limits)
    workers = step.next_setting(found).workers
    return step.in_process_settings(found, workers) if workers is not None else ()


def test_a_sweep_measures_in_one_run_only_what_it_knows_it_will_measure() -> None:
    own = b.run("real", b.batches([10] * 60, 30), loaders=[b.loader(num_workers=2)])
    runs, summaries = [own], [summarize(own)]
    grid = search.Limits(grid=(1, 4, 8), in_process=True)
    assert together(runs, summaries, grid) == (1, 4, 8)
    assert together(runs, summaries, dataclasses.replace(grid, in_process=False)) == ()  # the default
    persistent = dataclasses.replace(own, loaders=(dataclasses.replace(own.loaders[0], persistent_workers=True),))
    assert together([persistent], [summarize(persistent)], grid) == ()
    # a setting whose epoch leaves no steady window is measured over whole epochs, in its own run,
    # after the first epoch; so is every setting compared with it, each in its own run too
    short = dataclasses.replace(own, loaders=(dataclasses.replace(own.loaders[0], dataset_len=40 * 32),))
    assert together([short], [summarize(short)], grid) == ()
    assert together([short], [summarize(short)], dataclasses.replace(grid, grid=(1, 4))) == (1, 4)


def test_a_setting_that_handed_over_before_its_planned_batches_had_settled() -> None:
    run = in_process_run()
    marks = (dataclasses.replace(run.phases[0], planned=60), dataclasses.replace(run.phases[1], planned=60))
    first, second = runs_of(dataclasses.replace(run, phases=marks))
    assert first.stop_reason is StopReason.SETTLED  # 40 of its 60 batches
    assert second.stop_reason is run.stop_reason  # the last one ended with the run


def test_the_setting_in_force_is_settled_on_its_own_batches() -> None:
    run = in_process_run()

    def streamed(batches: int) -> Streamed:
        return Streamed(
            batches=run.batches[:batches],
            loaders=run.loaders,
            iterators=run.iterators,
            warmup_batches=run.warmup_batches,
            requested_batches=200,
            phases=tuple(m for m in run.phases if m.batch < batches),
        )

    # the second setting's 52 steady batches at 20 ms: settled; its first 12 (8 of them start-up): not yet
    assert setting_settled(streamed(100))
    assert not setting_settled(streamed(52))
    assert not setting_settled(dataclasses.replace(streamed(100), phases=()))
    # the next setting marked, its first batch not yet delivered
    assert not setting_settled(dataclasses.replace(streamed(40), phases=run.phases))
