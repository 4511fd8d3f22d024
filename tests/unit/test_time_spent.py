"""Where a command's time went: each run cut into its start, warm-up, measured window and end; the
command's parts added up against its measuring limit."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import time_spent
from fastload_cli.analyzer.window import steady_steps
from fastload_cli.records import IteratorInfo, RunTime, TimeSpent
from fastload_cli.reporters.terminal import plain_text, render
from tests.unit import builders as b
from tests.unit.builders import MS


def timed_run():
    """The script starts for 500 ms before its first iter(), its workers start for 200 ms, then 30
    batches of 15 ms; the run ends 300 ms after its last batch (the stop and the shutdown)."""
    batches = b.batches([5.0] * 30, 10.0, start_ns=700 * MS)
    run = b.run("real", batches, warmup=5)
    iterator = IteratorInfo(
        loader_id=1, iterator_id=1, started_ns=500 * MS, ready_ns=600 * MS, worker_pids=(), reused=False
    )
    return dataclasses.replace(run, started_ns=0, ended_ns=batches[-1].wait_end_ns + 300 * MS, iterators=(iterator,))


def test_a_run_is_its_start_its_warm_up_its_window_and_its_end() -> None:
    run = timed_run()
    steps = steady_steps(run)
    window = (steps[0].previous_end_ns, steps[-1].end_ns)
    found = time_spent.of_run(run, [window])
    assert found.start_s == pytest.approx(0.5)
    assert found.measured_s == pytest.approx((window[1] - window[0]) / 1e9)
    assert found.end_s == pytest.approx(0.3)
    assert found.warmup_s == pytest.approx((window[0] - 500 * MS) / 1e9)
    assert found.wall_s == pytest.approx((run.ended_ns - run.started_ns) / 1e9)
    assert time_spent.windows([run]) == [window]


def test_settings_read_over_whole_epochs_count_those_epochs_whole_as_measured() -> None:
    # two 20-batch epochs, each starting with a 200 ms start-up: the first is the warm-up, the second
    # is read whole (start-up, burst and drain included), as a whole-epoch pair reads it
    first = b.batches([200.0] + [5.0] * 19, 10.0, iterator_id=1)
    second = b.batches([200.0] + [5.0] * 19, 10.0, iterator_id=2, start_ns=first[-1].wait_end_ns)
    run = b.run("workers=2", first + second, warmup=20)
    [steady] = time_spent.windows([run])
    [whole] = time_spent.windows([run], whole_epochs=True)
    assert whole == (first[-1].wait_end_ns, second[-1].wait_end_ns)
    assert whole[0] <= steady[0] and whole[1] >= steady[1] and whole != steady  # the start-up counted


def test_a_breakdown_timed_inside_a_run_is_the_breakdowns_time_not_its_warm_ups() -> None:
    run = dataclasses.replace(timed_run(), breakdown_ns=100 * MS)  # timed between its windows
    steps = steady_steps(run)
    window = (steps[0].previous_end_ns, steps[-1].end_ns)
    plain, found = time_spent.of_run(timed_run(), [window]), time_spent.of_run(run, [window])
    assert found.breakdown_s == pytest.approx(0.1) and found.warmup_s == pytest.approx(plain.warmup_s - 0.1)
    assert found.wall_s == pytest.approx(plain.wall_s)
    spent = time_spent.account([found], [b.summary("real")], total_s=3.0)
    assert spent.breakdown_s == pytest.approx(0.1) and spent.warmups_s == pytest.approx(found.warmup_s)


def test_a_run_that_never_iterated_was_all_start() -> None:
    run = dataclasses.replace(b.run("real", []), started_ns=0, ended_ns=2_000 * MS, iterators=())
    found = time_spent.of_run(run, [])
    assert (found.start_s, found.warmup_s, found.measured_s, found.end_s) == (2.0, 0.0, 0.0, 0.0)


def test_the_command_adds_its_runs_up_against_one_start_and_ten_batches_of_each_mode() -> None:
    real = dataclasses.replace(b.summary("real"), step_ms_p50=20.0)
    synthetic = dataclasses.replace(b.summary("synthetic"), step_ms_p50=10.0)
    again = dataclasses.replace(b.summary("synthetic"), step_ms_p50=12.0)  # a mode's second run: not another mode
    times = [
        RunTime(start_s=0.5, warmup_s=0.2, measured_s=1.0, end_s=0.3),
        RunTime(start_s=0.4, warmup_s=0.1, measured_s=0.5, end_s=0.2),
        RunTime(start_s=0.4, warmup_s=0.1, measured_s=0.5, end_s=0.2, again=True),
        RunTime(start_s=0.6, warmup_s=0.0, measured_s=0.0, end_s=0.4, breakdown=True),
    ]
    spent = time_spent.account(times, [real, synthetic, again], total_s=6.0)
    assert (spent.runs, spent.starts_s, spent.measured_s, spent.again_s, spent.breakdown_s) == pytest.approx(
        (4, 1.3, 2.0, 1.2, 1.0)
    )
    assert spent.limit_s == pytest.approx(0.5 + 10 * 0.030)  # the first run's start, ten batches of real and synthetic
    assert spent.fastload_s == pytest.approx(6.0 - 1.3 - 0.4 - 2.0 - 0.7 - 1.0)
    assert spent.over_limit == pytest.approx(6.0 / 0.8)


def test_the_terminal_says_where_the_time_went_when_asked() -> None:
    from tests.unit.test_report_sections import full_report

    spent = TimeSpent(
        total_s=12.0, runs=5, starts_s=4.0, warmups_s=2.0, measured_s=3.0, ends_s=1.0, again_s=2.5,
        breakdown_s=0.5, limit_s=2.0,
    )  # fmt: skip
    report = dataclasses.replace(full_report(), time_spent=spent)
    assert "Time to verdict" not in plain_text(report)
    from rich.console import Console

    console = Console(width=100, record=True, color_system=None)
    console.print(render(report, verbose=True))
    text = " ".join(console.export_text().split())
    assert "Time to verdict: 12.0 s against a measuring limit of 2.0 s (6.0x)" in text
    assert "5 starts of the script 4.0 s" in text and "measured windows 3.0 s" in text
    assert "runs that measured again what another run measured: 2.5 s" in text
    assert "fastload between the runs: 1.5 s" in text
