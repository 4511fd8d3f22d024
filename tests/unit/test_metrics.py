"""Per-run metrics on hand-built runs; every expectation is computed by hand in the comments."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer.counters import Cumulative
from fastload_cli.analyzer.facts.gather import startup_busy_fraction
from fastload_cli.analyzer.metrics import percentile, summarize
from fastload_cli.analyzer.search import sizing
from fastload_cli.analyzer.window import spans, steady_steps
from fastload_cli.records import RunResult, RunStatus, ScriptError, StopReason
from tests.unit import builders as b
from tests.unit.builders import MS


def one_epoch() -> list:
    # batch 0 waits 100 ms (start-up); then 9 steps of 30 ms compute + 10 ms wait
    return b.batches([100] + [10] * 9, 30)


def test_steady_state_leaves_out_warmup_and_first_batch() -> None:
    s = summarize(b.run("real", one_epoch(), warmup=2))
    # steady = batches 2..9: 8 steps of 40 ms = 320 ms, 8 x 32 = 256 samples
    assert s.batches == 8
    assert s.samples == 256
    assert s.wall_s == pytest.approx(0.320)
    assert s.throughput_samples_per_s == pytest.approx(800.0)
    assert s.throughput_batches_per_s == pytest.approx(25.0)
    assert s.data_wait_fraction == pytest.approx(80 / 320)
    assert s.step_ms_p50 == pytest.approx(40.0)
    assert s.compute_ms_p50 == pytest.approx(30.0)
    assert s.startup_s == pytest.approx(0.100)


def test_epoch_boundaries_and_the_gap_between_epochs_are_not_steps() -> None:
    first = b.batches([50, 10, 10, 10, 10], 30, iterator_id=1)
    second = b.batches([50, 10, 10, 10, 10], 30, iterator_id=2, start_ns=10_000 * MS)  # 10 s of validation between
    s = summarize(b.run("real", first + second, warmup=0))
    # each epoch contributes its batches 1..4: 8 steps of 40 ms; the 10 s gap is not counted
    assert s.batches == 8
    assert s.wall_s == pytest.approx(0.320)
    assert s.throughput_samples_per_s == pytest.approx(800.0)


def test_the_start_up_burst_of_every_epoch_is_left_out_when_enough_batches_remain() -> None:
    # 4 workers x prefetch_factor 2: each epoch's first 8 batches arrive at once (no wait)
    def epoch(iterator_id: int, start_ns: int) -> list:
        return b.batches([200] + [0] * 7 + [30] * 22, 10, iterator_id=iterator_id, start_ns=start_ns)

    run = b.run("real", epoch(1, 0) + epoch(2, 10_000 * MS), loaders=[b.loader(num_workers=4)], warmup=2)
    steps = steady_steps(run)
    assert len(steps) == 2 * 22
    assert {s.batch.index for s in steps} == set(range(8, 30))
    assert summarize(run).data_wait_fraction == pytest.approx(30 / 40)


def test_the_start_up_burst_stays_in_when_too_few_batches_would_remain() -> None:
    run = b.run("real", b.batches([200] + [0] * 7 + [30] * 5, 10), loaders=[b.loader(num_workers=4)], warmup=2)
    assert summarize(run).batches == 11  # warm-up 2 only: 13 batches are too few to drop 8


def test_epochs_too_short_for_a_steady_state_count_whole_with_their_start_up() -> None:
    # 4 workers x 2 prefetched = 8-batch bursts in 12-batch epochs: no steady part to measure
    from fastload_cli.records import IteratorInfo

    first = b.batches([200] + [0] * 7 + [30] * 4, 10, iterator_id=1)
    second = b.batches([200] + [0] * 7 + [30] * 4, 10, iterator_id=2, start_ns=5_000 * MS)
    loader = dataclasses.replace(b.loader(num_workers=4), dataset_len=12 * 32)
    iterators = tuple(
        IteratorInfo(loader_id=1, iterator_id=i, started_ns=t, ready_ns=t, worker_pids=(), reused=False)
        for i, t in ((1, 0), (2, 5_000 * MS))
    )
    run = dataclasses.replace(b.run("real", first + second, loaders=[loader], warmup=12), iterators=iterators)
    steps = steady_steps(run)
    assert [s.batch.index for s in steps] == list(range(12))  # the whole second epoch
    assert steps[0].previous_end_ns == 5_000 * MS  # from iter(), its start-up included
    s = summarize(run)
    assert s.wall_s == pytest.approx((200 + 7 * 10 + 4 * 40) / 1000)


def test_each_epoch_a_next_iter_followed_is_timed_whole() -> None:
    # two 12-batch epochs 5 s apart, then a third begun: the first two are whole, from iter() to iter()
    from fastload_cli.analyzer.facts.gather import epoch_walls
    from fastload_cli.records import IteratorInfo

    starts = (0, 5_000 * MS, 12_000 * MS)
    epochs = [b.batches([200] + [30] * 11, 10, iterator_id=i + 1, start_ns=t) for i, t in enumerate(starts)]
    iterators = tuple(
        IteratorInfo(loader_id=1, iterator_id=i + 1, started_ns=t, ready_ns=t, worker_pids=(), reused=False)
        for i, t in reversed(list(enumerate(starts)))
    )
    run = dataclasses.replace(b.run("real", [x for e in epochs for x in e[:5]]), iterators=iterators)
    assert epoch_walls(run) == ((5.0, 5), (7.0, 5))
    # the last, once the loop's request past its last batch returned (no iter() after it): to that end
    ended = (dataclasses.replace(iterators[0], ended_ns=16_500 * MS), *iterators[1:])
    assert epoch_walls(dataclasses.replace(run, iterators=ended)) == ((5.0, 5), (7.0, 5), (4.5, 5))


def test_a_run_planned_in_whole_epochs_counts_only_the_epochs_that_ran_whole() -> None:
    # 12-batch epochs, 8-batch bursts; a warm-up of one whole epoch, and a run stopped at batch 5
    # of the fourth: the second and third epochs count. The fourth's start, counted, would
    # over-weigh its start-up against the batches it had.
    from fastload_cli.records import IteratorInfo

    starts = (0, 5_000 * MS, 10_000 * MS, 15_000 * MS)
    epochs = [b.batches([200] + [0] * 7 + [30] * 4, 10, iterator_id=i + 1, start_ns=t) for i, t in enumerate(starts)]
    loader = dataclasses.replace(b.loader(num_workers=4), dataset_len=12 * 32)
    iterators = tuple(
        IteratorInfo(loader_id=1, iterator_id=i + 1, started_ns=t, ready_ns=t, worker_pids=(), reused=False)
        for i, t in enumerate(starts)
    )
    batches = epochs[0] + epochs[1] + epochs[2] + epochs[3][:5]
    run = dataclasses.replace(b.run("real", batches, loaders=[loader], warmup=12), iterators=iterators)
    steps = steady_steps(run)
    assert {s.batch.iterator_id for s in steps} == {2, 3}
    assert summarize(run).wall_s == pytest.approx(2 * (200 + 7 * 10 + 4 * 40) / 1000)
    # a warm-up that ends inside an epoch was not planned in whole epochs: every batch after it
    # counts, as a mode asked for exactly --max-batches measures them
    unplanned = dataclasses.replace(run, warmup_batches=14)
    assert len(steady_steps(unplanned)) == len(batches) - 14
    # planned, but no epoch ran whole after the warm-up: the batches after it, as they are
    unfinished = dataclasses.replace(run, batches=tuple(epochs[0] + epochs[1][:9]))
    assert len(steady_steps(unfinished)) == 9


def test_an_epoch_counted_whole_runs_to_its_end_past_its_last_batch() -> None:
    # 12-batch epochs, 8-batch bursts, a warm-up of one whole epoch. After an epoch's last batch
    # the loop trains on it (10 ms) and the iterator shuts its 4 workers down (60 ms) before the
    # request past it ends: each epoch costs that, as it costs its start-up. The fourth epoch ran
    # whole but the run stopped before its end: with the others' ends seen, it is left out.
    from fastload_cli.records import IteratorInfo

    starts = (0, 5_000 * MS, 10_000 * MS, 15_000 * MS)
    epochs = [b.batches([200] + [0] * 7 + [30] * 4, 10, iterator_id=i + 1, start_ns=t) for i, t in enumerate(starts)]
    last = (200 + 7 * 10 + 4 * 40) * MS  # an epoch's last batch, from its iter()
    loader = dataclasses.replace(b.loader(num_workers=4), dataset_len=12 * 32)
    iterators = tuple(
        IteratorInfo(
            loader_id=1,
            iterator_id=i + 1,
            started_ns=t,
            ready_ns=t,
            worker_pids=(),
            reused=False,
            ended_ns=t + last + 70 * MS if i < 3 else None,
        )
        for i, t in enumerate(starts)
    )
    batches = [batch for epoch in epochs for batch in epoch]
    run = dataclasses.replace(b.run("real", batches, loaders=[loader], warmup=12), iterators=iterators)
    steps = steady_steps(run)
    assert {s.batch.iterator_id for s in steps} == {2, 3}
    assert [s.tail_ns for s in steps if s.batch.index == 11] == [70 * MS, 70 * MS]
    assert spans(steps) == [(t, t + last + 70 * MS) for t in starts[1:3]]
    s = summarize(run)
    assert s.wall_s == pytest.approx(2 * 0.5)
    assert s.throughput_samples_per_s == pytest.approx(2 * 12 * 32 / 1.0)
    # no end seen (a loop that never asks past an epoch's last batch): epochs end at that batch
    blind = dataclasses.replace(run, iterators=tuple(dataclasses.replace(it, ended_ns=None) for it in iterators))
    assert summarize(blind).wall_s == pytest.approx(3 * last / 1e9)


def test_a_run_is_read_by_the_rule_it_was_planned_by() -> None:
    # 12 workers x 2 prefetched: 24-batch bursts in 62-batch epochs. 14 batches lie between the
    # burst and the drain, fewer than 3 rounds of 12 workers: the sweep plans such a setting in
    # whole epochs, and the run is read in whole epochs, each one's start-up included
    from fastload_cli.records import IteratorInfo, Mode, ModeSpec

    starts = (0, 20_000 * MS)
    epochs = [
        b.batches([1_500] + [0] * 23 + [30] * 38, 10, iterator_id=i + 1, start_ns=t) for i, t in enumerate(starts)
    ]
    loader = dataclasses.replace(b.loader(num_workers=12), dataset_len=62 * 32)
    assert sizing.whole_epochs(ModeSpec(mode=Mode.WORKERS, workers=12), loader)
    iterators = tuple(
        IteratorInfo(loader_id=1, iterator_id=i + 1, started_ns=t, ready_ns=t, worker_pids=(), reused=False)
        for i, t in enumerate(starts)
    )
    run = dataclasses.replace(b.run("real", epochs[0] + epochs[1], loaders=[loader], warmup=62), iterators=iterators)
    assert len(steady_steps(run)) == 62  # the second epoch whole, not the 14 batches between burst and drain
    assert summarize(run).wall_s == pytest.approx((1_500 + 23 * 10 + 38 * 40) / 1000)
    # 8 workers leave 30 batches between, 3 rounds and more: a steady window inside the epoch
    eight = dataclasses.replace(loader, num_workers=8)
    assert not sizing.whole_epochs(ModeSpec(mode=Mode.WORKERS, workers=8), eight)
    assert len(steady_steps(dataclasses.replace(run, loaders=(eight,)))) == 62 - 2 * 16


def test_a_window_of_whole_epochs_has_its_epochs_as_the_blocks_of_its_spread() -> None:
    # 10-batch epochs, 8-batch bursts: read whole. Each epoch takes 200 ms to start, 7 x 10 ms of
    # burst, 2 x 40 ms: 350 ms. Blocks of two rounds (8 steps) would cut the epochs, one holding a
    # start-up and another none, and read that as noise; the epochs themselves are alike.
    from fastload_cli.records import IteratorInfo

    def run_of(startups: list[int]):
        starts = [i * 5_000 * MS for i in range(len(startups))]
        epochs = [
            b.batches([up] + [0] * 7 + [30] * 2, 10, iterator_id=i + 1, start_ns=t)
            for i, (up, t) in enumerate(zip(startups, starts, strict=True))
        ]
        loader = dataclasses.replace(b.loader(num_workers=4), dataset_len=10 * 32)
        iterators = tuple(
            IteratorInfo(loader_id=1, iterator_id=i + 1, started_ns=t, ready_ns=t, worker_pids=(), reused=False)
            for i, t in enumerate(starts)
        )
        batches = [batch for epoch in epochs for batch in epoch]
        return dataclasses.replace(b.run("real", batches, loaders=[loader], warmup=10), iterators=iterators)

    assert summarize(run_of([200, 200, 200, 200])).throughput_spread == pytest.approx(0.0)
    # the last epoch starts in 550 ms: 700 ms for 320 samples against 350 ms; median 914.3/s
    spread = summarize(run_of([200, 200, 200, 550])).throughput_spread
    assert spread == pytest.approx((320 / 0.35 - 320 / 0.70) / 2 / (320 / 0.35))


def test_waits_for_a_second_loader_inside_a_step_are_data_wait_too() -> None:
    # zip(loader_a, loader_b): each step waits 10 ms for a, then 20 ms for b, then computes 10 ms
    a, b2 = [], []
    t = 0
    for i in range(12):
        a.append(dataclasses.replace(b.batches([10], 0)[0], index=i, wait_start_ns=t, wait_end_ns=t + 10 * MS))
        b2.append(
            dataclasses.replace(
                b.batches([20], 0, loader_id=2, iterator_id=2)[0],
                index=i,
                wait_start_ns=t + 10 * MS,
                wait_end_ns=t + 30 * MS,
            )
        )
        t += 40 * MS
    run = b.run("real", a + b2, loaders=[b.loader(num_workers=0), b.loader(num_workers=0, loader_id=2)], warmup=1)
    s = summarize(run)
    assert s.data_wait_fraction == pytest.approx(30 / 40)
    assert s.compute_ms_p50 == pytest.approx(10.0)


def test_window_spans_split_at_epochs() -> None:
    first = b.batches([50, 10, 10], 30, iterator_id=1)
    second = b.batches([50, 10, 10], 30, iterator_id=2, start_ns=1_000 * MS)
    window = spans(steady_steps(b.run("real", first + second, warmup=0)))
    assert len(window) == 2
    assert window[0] == (first[0].wait_end_ns, first[2].wait_end_ns)


def test_only_the_requested_batches_count() -> None:
    run = b.run("real", b.batches([10] * 20, 30), warmup=0, requested=10)
    assert summarize(run).batches == 9  # batches 1..9 of the first 10


def test_too_few_batches_for_warmup_uses_all_but_the_first() -> None:
    run = b.run("real", b.batches([100, 10, 10], 30), warmup=5, stop=StopReason.SCRIPT_ENDED)
    assert summarize(run).batches == 2


def test_no_batches_means_no_numbers_not_zeros() -> None:
    s = summarize(b.run("real", [], status=RunStatus.FAILED, stop=StopReason.SCRIPT_RAISED))
    assert s.batches == 0
    assert s.throughput_samples_per_s is None
    assert s.data_wait_fraction is None
    assert s.step_ms_p50 is None
    assert s.wall_s is None


def test_cpu_rates_over_the_window() -> None:
    batch_list = one_epoch()
    samples = b.host_samples(
        batch_list[-1].wait_end_ns, main_cores=1.0, worker_cores=(0.5, 0.5), worker_runq_cores=0.2, system_busy=0.6
    )
    s = summarize(b.run("real", batch_list, samples=samples))
    assert s.main_cpu_percent == pytest.approx(100.0)
    assert s.workers_cpu_percent == pytest.approx(100.0)
    # two workers: (2 x 0.5 CPU + 2 x 0.2 run queue) / 2 workers = 0.7
    assert s.loader_busy_fraction == pytest.approx(0.7)
    assert s.system_cpu_busy_fraction == pytest.approx(0.6)


def test_main_process_loading_busy_fraction_comes_from_the_waiting_thread() -> None:
    batch_list = b.batches([100] + [10] * 9, 30, thread_cpu_fraction=0.8)
    s = summarize(b.run("real", batch_list, loaders=[b.loader(num_workers=0)]))
    assert s.loader_busy_fraction == pytest.approx(0.8)
    assert s.workers_cpu_percent == 0.0  # there are no workers


def test_read_rate() -> None:
    batch_list = one_epoch()
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(0.1, 0.1), read_bytes_per_s=2e6)
    assert summarize(b.run("real", batch_list, samples=samples)).read_bytes_per_s == pytest.approx(2e6)


def test_workers_never_sampled_are_unknown_not_zero() -> None:
    batch_list = one_epoch()
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=())
    s = summarize(b.run("real", batch_list, samples=samples))
    assert s.workers_cpu_percent is None
    assert s.loader_busy_fraction is None


def test_the_loader_with_most_batches_is_measured() -> None:
    train = b.batches([10] * 12, 30, loader_id=1, iterator_id=1)
    val = b.batches([500] * 4, 5, loader_id=2, iterator_id=2)
    run = b.run("real", val + train, loaders=[b.loader(loader_id=1), b.loader(loader_id=2)], warmup=0, requested=100)
    s = summarize(run)
    assert s.batches == 11
    assert s.data_wait_fraction == pytest.approx(10 / 40)


def test_error_description() -> None:
    failed = b.run("real", [], status=RunStatus.FAILED, stop=StopReason.SCRIPT_RAISED)
    failed = dataclasses.replace(failed, error=ScriptError(type_name="ValueError", message="bad", traceback=""))
    assert summarize(failed).error == "ValueError: bad"
    assert summarize(b.run("real", [], status=RunStatus.TIMEOUT, stop=StopReason.TIMEOUT)).error == "timed out"


@pytest.mark.parametrize(
    ("values", "q", "expected"), [([1, 2, 3, 4], 0.5, 2.5), ([1, 2, 3, 4], 0.9, 3.7), ([5], 0.9, 5)]
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_cumulative_interpolates_and_clamps() -> None:
    c = Cumulative([(0, 0.0), (100, 10.0)])
    assert c.at(50) == pytest.approx(5.0)
    assert c.at(-10) == 0.0
    assert c.at(1000) == 10.0
    assert c.over([(0, 50), (50, 100)]) == pytest.approx(10.0)


def test_cpu_taken_by_other_processes_is_measured() -> None:
    batch_list = one_epoch()
    # the machine's 2 cores are 90% busy (1.8 cores); the run uses 1.0 + 2 x 0.1 = 1.2 cores
    samples = b.host_samples(batch_list[-1].wait_end_ns, main_cores=1.0, worker_cores=(0.1, 0.1), system_busy=0.9)
    s = summarize(b.run("real", batch_list, samples=samples))
    assert s.foreign_cpu_fraction == pytest.approx(0.3)  # (1.8 - 1.2) / 2 cores


def test_cpu_a_virtual_machines_host_held_back_is_said_and_not_read_as_other_processes() -> None:
    """A 2-vCPU guest whose host took a fifth of its CPU time (steal: its quota, or other guests)
    while the loaders kept both cores busy: no other process ran, and measuring again would meet
    the same quota."""
    from fastload_cli.analyzer import analyze

    batch_list = one_epoch()
    end = batch_list[-1].wait_end_ns
    samples = b.host_samples(end, main_cores=1.0, worker_cores=(0.3, 0.3), system_busy=0.96, steal=0.2)
    run = b.run("real", batch_list, samples=samples)
    s = summarize(run)
    assert s.steal_fraction == pytest.approx(0.2)
    assert s.foreign_cpu_fraction == pytest.approx(0.0, abs=1e-9)  # 1.92 - 0.4 stolen - 1.6 run: none
    said = analyze([run]).verdict.caveats
    assert any("held back 20% of its CPU time (steal) during the real run" in c for c in said), said
    assert not any("Other processes" in c for c in said), said
    unread = summarize(b.run("real", batch_list, samples=b.host_samples(end, steal=None)))
    assert unread.steal_fraction is None and unread.foreign_cpu_fraction is not None


def test_few_steady_batches_and_a_lagging_sampler_are_caveats() -> None:
    from fastload_cli.analyzer import analyze
    from fastload_cli.records import SamplerHealth

    few = b.run("real", b.batches([50] + [10] * 5, 30), warmup=0)
    lagging = dataclasses.replace(
        b.run("real", one_epoch()), host_health=SamplerHealth(interval_s=0.05, ticks=100, late_ticks=30)
    )
    assert any("only 5 steady-state batches" in c for c in analyze([few]).verdict.caveats)
    assert any("30 of 100 ticks late" in c for c in analyze([lagging]).verdict.caveats)
    on_time = dataclasses.replace(lagging, host_health=SamplerHealth(interval_s=0.05, ticks=100, late_ticks=5))
    assert not any("ticks late" in c for c in analyze([on_time]).verdict.caveats)
    health = SamplerHealth(interval_s=0.05, ticks=100, late_ticks=0, longest_interval_s=0.2, cpu_budget=0.05)
    stretched = dataclasses.replace(lagging, host_health=health)
    assert any("sampled every 0.20 s at the slowest" in c for c in analyze([stretched]).verdict.caveats)
    barely = dataclasses.replace(stretched, host_health=dataclasses.replace(health, longest_interval_s=0.06))
    assert not any("sampled every" in c for c in analyze([barely]).verdict.caveats)


def test_the_workers_kernel_share_of_their_cpu() -> None:
    batch_list = one_epoch()
    end = batch_list[-1].wait_end_ns
    samples = b.host_samples(end, worker_cores=(0.6, 0.4), worker_kernel_share=0.85, read_bytes_per_s=5e8)
    assert summarize(b.run("real", batch_list, samples=samples)).loader_kernel_fraction == pytest.approx(0.85)
    unknown = b.host_samples(end, worker_cores=(0.6, 0.4))
    assert summarize(b.run("real", batch_list, samples=unknown)).loader_kernel_fraction is None


def test_the_share_of_samples_that_found_the_loaders_blocked_on_storage() -> None:
    batch_list = one_epoch()
    end = batch_list[-1].wait_end_ns
    samples = b.host_samples(end, worker_cores=(0.2, 0.2), blocked_every=4)
    blocked = summarize(b.run("real", batch_list, samples=samples)).loader_blocked_fraction
    assert blocked == pytest.approx(0.25, abs=0.05)  # the window's samples, every fourth blocked
    main_loads = b.run("real", batch_list, loaders=[b.loader(num_workers=0)], samples=samples)
    assert summarize(main_loads).loader_blocked_fraction == pytest.approx(blocked)  # the main process's, then
    unread = b.host_samples(end, worker_cores=(0.2, 0.2))
    assert summarize(b.run("real", batch_list, samples=unread)).loader_blocked_fraction is None


def test_the_workers_cpu_during_epoch_start_ups() -> None:
    batch_list = one_epoch()
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(0.3, 0.1), worker_runq_cores=0.1)
    run = b.run("real", batch_list, samples=samples)
    starts = [(0, 100 * MS), (200 * MS, 300 * MS)]
    # (0.3 + 0.1 CPU + 2 x 0.1 run queue) / 2 workers
    assert startup_busy_fraction(run, starts) == pytest.approx(0.3)
    no_workers = b.run("real", batch_list, loaders=[b.loader(num_workers=0)], samples=samples)
    assert startup_busy_fraction(no_workers, starts) is None


def test_the_step_in_which_the_synthetic_mode_shut_the_workers_down_is_not_measured() -> None:
    computes = [10.0] * 40
    computes[6] = 500.0  # the first replay's step: the switch joined workers busy with slow samples
    switched = b.run("synthetic", b.batches([1.0] * 40, computes), warmup=6)
    steady = b.run("synthetic", b.batches([1.0] * 40, 10.0), warmup=6)
    assert summarize(switched).throughput_samples_per_s == pytest.approx(summarize(steady).throughput_samples_per_s)
    real = b.run("real", b.batches([1.0] * 40, computes), warmup=6)  # nothing switched: the step counts
    assert (summarize(real).throughput_samples_per_s or 0) < 0.7 * (summarize(steady).throughput_samples_per_s or 0)


def test_a_window_shorter_than_the_gpu_sampler_reads_the_first_reading_after_it() -> None:
    """NVML's busy % describes the period before the reading: a 40 ms window between two readings
    100 ms apart is covered by the next one, and never by one from before it."""
    from fastload_cli.analyzer.counters import gpu_util_percent
    from fastload_cli.records import GpuSample

    def reading(t_ms: float, util: float, index: int = 0) -> GpuSample:
        return GpuSample(
            t_ns=int(t_ms * MS), index=index, util_percent=util, memory_used_bytes=None,
            pcie_rx_bytes_per_s=None, pcie_tx_bytes_per_s=None,
        )  # fmt: skip

    run = dataclasses.replace(
        b.run("real", b.batches([10] * 5, 1)), gpu_samples=(reading(0, 5.0), reading(100, 80.0), reading(100, 30.0, 1))
    )
    assert gpu_util_percent(run, [(int(30 * MS), int(70 * MS))]) == pytest.approx(80.0)  # the busiest device
    assert gpu_util_percent(run, [(int(1200 * MS), int(1300 * MS))]) is None  # nothing read within a second
    inside = dataclasses.replace(run, gpu_samples=(*run.gpu_samples, reading(50, 60.0)))
    assert gpu_util_percent(inside, [(int(30 * MS), int(70 * MS))]) == pytest.approx(60.0)  # a reading inside wins


def test_a_caveat_many_runs_raise_alike_is_said_once_with_the_runs_named() -> None:
    from fastload_cli.analyzer import analyze
    from fastload_cli.records import SamplerHealth

    def stretched(mode: str, slowest_s: float) -> RunResult:
        health = SamplerHealth(interval_s=0.05, ticks=100, late_ticks=0, longest_interval_s=slowest_s, cpu_budget=0.05)
        few = b.batches([50] + [10] * 5, 30)  # 5 steady batches: rough figures, in every run
        return dataclasses.replace(b.run(mode, few, warmup=0), host_health=health)

    runs = [stretched("real", 0.09), stretched("synthetic", 0.15), stretched("workers=4", 0.12)]
    said = analyze(runs).verdict.caveats
    sampled = [c for c in said if "sampled every" in c]
    assert sampled == [
        "The process tree was large, so the real, synthetic and workers=4 runs were sampled every 0.09-0.15 s at "
        "the slowest (not every 0.05 s), keeping sampling within 5% of one core: CPU figures are coarser."
    ]
    rough = [c for c in said if "steady-state batches" in c]
    # the synthetic run counts from its first replay, a batch later: 4
    assert rough == [
        "The real, synthetic and workers=4 runs measured only 4-5 steady-state batches: figures are rough."
    ]
    assert len(said) == len(set(said))


def test_a_process_found_late_counts_its_cpu_from_its_start_under_the_role_it_was_found_to_have() -> None:
    from fastload_cli.analyzer.counters import role_delta, tree_delta
    from fastload_cli.records import HostSample, ProcRole, ProcSample, SystemSample

    def sample(t: int, role: ProcRole, cpu_s: float) -> HostSample:
        proc = ProcSample(pid=7, role=role, cpu_s=cpu_s, runq_s=None, rss_bytes=None, read_bytes=None, started_ns=50)
        return HostSample(
            t_ns=t, procs=(proc,), system=SystemSample(busy_s=0.0, idle_s=0.0, iowait_s=None, disk_read_bytes=None)
        )

    # a DataLoader worker started at 50, first sampled at 150 before the child named it a worker,
    # then at 250 as one: its CPU time from its start on is the worker's, counted once
    samples = (sample(150, ProcRole.OTHER, 1.5), sample(250, ProcRole.WORKER, 2.5))
    cpu = lambda p: p.cpu_s  # noqa: E731
    assert role_delta(samples, ProcRole.WORKER, [(100, 200)], cpu) == pytest.approx(2.0 - 0.75)
    assert role_delta(samples, ProcRole.OTHER, [(0, 300)], cpu) is None
    assert tree_delta(samples, [(0, 300)], cpu) == pytest.approx(2.5)


def test_a_worker_that_exits_inside_the_window_counts_its_cpu_as_the_runs_not_another_process() -> None:
    from fastload_cli.analyzer.counters import SystemCpu, foreign_cpu_fraction, own_cpu_s, tree_cpu_s
    from fastload_cli.records import HostSample, ProcRole, ProcSample, SystemSample

    def proc(pid: int, role: ProcRole, cpu_s: float, reaped_s: float = 0.0) -> ProcSample:
        return ProcSample(pid=pid, role=role, cpu_s=cpu_s, runq_s=None, rss_bytes=None, read_bytes=None,
                          started_ns=0, reaped_cpu_s=reaped_s)  # fmt: skip

    def sample(t: int, procs: tuple[ProcSample, ...], own_s: float) -> HostSample:
        system = SystemSample(busy_s=0.0, idle_s=0.0, iowait_s=None, disk_read_bytes=None)
        return HostSample(t_ns=t, procs=procs, system=system, own_cpu_s=own_s)

    # a worker last read at 0.4 s of CPU exits, and is waited for, having used 0.9 s: its parent's
    # count of reaped children holds it from then on; fastload's sampler took 0.1 s meanwhile
    samples = (
        sample(0, (proc(1, ProcRole.MAIN, 0.0), proc(2, ProcRole.WORKER, 0.0)), own_s=5.0),
        sample(100, (proc(1, ProcRole.MAIN, 0.5), proc(2, ProcRole.WORKER, 0.4)), own_s=5.05),
        sample(200, (proc(1, ProcRole.MAIN, 1.0, reaped_s=0.9),), own_s=5.1),
        sample(300, (proc(1, ProcRole.MAIN, 1.5, reaped_s=0.9),), own_s=5.15),
    )
    assert tree_cpu_s(samples, [(0, 200)]) == pytest.approx(1.9)
    assert tree_cpu_s(samples, [(200, 300)]) == pytest.approx(0.5)  # counted once, not again after the exit
    assert own_cpu_s(samples, [(0, 200)]) == pytest.approx(0.1)
    machine = SystemCpu(busy_s=2.0, iowait_s=None, total_s=4.0)  # 2 cores over the window, half busy
    assert foreign_cpu_fraction(machine, samples, [(0, 200)]) == pytest.approx(0.0)  # 2.0 - 1.9 - 0.1
