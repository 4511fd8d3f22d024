"""The climb: the ladder, when it ends, refinement and confirmation (``search/climb.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer.search import climb
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.records import SweepPoint
from tests.unit.search.sweeps import GIB, cpu_bound, latency_bound, order, pt, search


@pytest.mark.parametrize(
    ("top", "rungs"),
    [(0, [0]), (1, [0, 1]), (4, [0, 1, 2, 4]), (12, [0, 1, 2, 4, 8, 12]), (32, [0, 1, 2, 4, 8, 16, 32])],
)
def test_the_ladder_doubles_up_to_max_workers(top: int, rungs: list[int]) -> None:
    assert climb.ladder(top) == rungs


def test_one_flat_rung_does_not_end_the_climb() -> None:
    # a noisy dip at 4 workers; 8 is clearly faster again
    points = search(lambda w: {0: 10.0, 1: 20.0, 2: 40.0, 4: 39.0}.get(w, 90.0), Limits(max_workers=8, refine=0), 2)
    assert order(points) == [0, 1, 2, 4, 8]


def test_cpu_bound_climb_stops_after_two_flat_rungs_past_the_cores_and_refines() -> None:
    points = search(cpu_bound, Limits(), current=2)
    assert order(points) == [0, 1, 2, 4, 8, 3]  # 4 and 8 no faster than 2: the plateau; then 3


def test_latency_bound_climb_goes_past_the_core_count() -> None:
    points = search(latency_bound, Limits(), current=2)
    assert order(points)[:7] == [0, 1, 2, 4, 8, 16, 32]
    assert order(points)[7:] == [12, 14]  # a plateau from 16 up: refined below the best


def test_a_climb_with_a_floor_starts_at_the_scripts_own_setting() -> None:
    points = search(latency_bound, Limits(min_workers=2), current=2)
    assert order(points)[:5] == [2, 4, 8, 16, 32]
    assert min(order(points)) == 2


def test_one_worker_that_gains_nothing_does_not_end_the_climb() -> None:
    # the step is negligible: one worker loads exactly as fast as the main process did
    points = search(lambda w: 125.0 * max(w, 1), Limits(max_workers=8, refine=0), current=0)
    assert order(points) == [0, 1, 2, 4, 8]


def test_the_scripts_own_setting_is_always_measured() -> None:
    points = search(cpu_bound, Limits(), current=6)
    assert order(points)[:6] == [0, 1, 2, 4, 8, 6]


def test_the_climb_stops_where_the_next_rung_would_not_fit_in_memory() -> None:
    def with_rss(points: list[SweepPoint]) -> list[SweepPoint]:
        return [dataclasses.replace(p, rss_bytes=GIB + p.workers * GIB) for p in points]

    limits = Limits(memory_budget_bytes=6 * GIB, refine=0, confirm=False)
    points: list[SweepPoint] = []
    while (nxt := climb.plan(points, limits, 2).workers) is not None:
        points = with_rss([*points, pt(nxt, latency_bound(nxt))])
    # 8 workers: 9 GiB projected from 1 GiB per worker; 5 is the most that fits in 6 GiB
    assert order(points) == [0, 1, 2, 4, 5]
    rung, stopped = climb.climb(points, limits)
    assert rung is None
    assert stopped is not None and "8 workers would need about 9.0 GiB" in stopped


def test_a_failed_rung_ends_the_climb() -> None:
    points = search(lambda w: 0.0 if w == 8 else latency_bound(w), Limits(refine=0), current=2)
    points = [dataclasses.replace(p, throughput_samples_per_s=None) if p.workers == 8 else p for p in points]
    assert climb.plan(points, Limits(refine=0, confirm=False), 2).workers is None
    assert climb.climb(points, Limits())[1] == "the run with 8 workers failed"


def test_a_grid_measures_exactly_its_settings_and_the_scripts_own() -> None:
    points = search(latency_bound, Limits(grid=(0, 2, 4)), current=3)
    assert order(points) == [0, 2, 4, 3]


def test_a_peak_is_refined_above_it_first() -> None:
    points = search(lambda w: {0: 10.0, 1: 20.0, 2: 40.0, 4: 80.0, 8: 60.0}.get(w, 70.0), Limits(), current=0)
    assert order(points) == [0, 1, 2, 4, 8, 16, 6, 5]


def test_refinement_is_bounded() -> None:
    points = search(latency_bound, Limits(refine=1), current=2)
    assert order(points) == [0, 1, 2, 4, 8, 16, 32, 12]


def test_the_climb_stops_where_start_up_and_drain_would_fill_an_epoch() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(latency_bound, limits, current=2)
    # 16 workers: 32 prefetched at the start, 32 drained at the end, nothing left; 9 is the last
    assert order(points) == [0, 1, 2, 4, 8, 9]
    stopped = climb.climb(points, limits)[1]
    assert stopped is not None and stopped.startswith("an epoch has 64 batches: 16 workers would prefetch 32")


def test_the_best_and_the_scripts_own_setting_are_measured_twice_when_they_differ() -> None:
    points = search(latency_bound, Limits(refine=0), current=8, confirm=True)  # 300 against 160
    assert order(points) == [0, 1, 2, 4, 8, 16, 32, 16, 8]


def test_no_second_runs_where_the_best_is_twice_as_fast_as_the_scripts_own() -> None:
    points = search(latency_bound, Limits(refine=0), current=2, confirm=True)  # 300 against 40
    assert order(points) == [0, 1, 2, 4, 8, 16, 32]


def test_a_run_whose_own_window_swings_is_measured_again_at_any_difference_alone() -> None:
    # slow-samples: the script's 4 workers read ±60% across their window (a stall every few batches),
    # so their one run can be far off the setting's rate: it goes again. The best, 3.75x as fast
    # and steady, would not change the answer by a second run: it does not.
    swinging = {4: 0.6}
    limits = Limits(max_workers=16, refine=0)
    points = [pt(w, latency_bound(w), spread=swinging.get(w, 0.1)) for w in (0, 1, 2, 4, 8, 16)]
    assert climb.plan(points, limits, 4).workers == 4
    points.append(pt(4, latency_bound(4), spread=0.2))
    assert climb.plan(points, limits, 4).workers is None
    steady = [pt(w, latency_bound(w), spread=0.1) for w in (0, 1, 2, 4, 8, 16)]
    assert climb.plan(steady, limits, 4).workers is None  # 300 against 80, neither swinging: as measured
    top_swings = [pt(w, latency_bound(w), spread=0.6 if w == 16 else 0.1) for w in (0, 1, 2, 4, 8, 16)]
    assert climb.plan(top_swings, limits, 4).workers == 16  # the best swung: it goes again, the script's own not


def test_a_swinging_run_within_twice_the_best_sends_both_again() -> None:
    # below SWEEP_CONFIRM_BELOW both runs go again, whichever swung
    model = {0: 20.0, 1: 40.0, 2: 60.0, 4: 100.0, 8: 150.0, 16: 150.0}
    limits = Limits(max_workers=16, refine=0)
    points = [pt(w, rate, spread=0.6 if w == 4 else 0.1) for w, rate in model.items()]
    assert climb.plan(points, limits, 4).workers == 8


def test_a_swinging_setting_measured_again_gets_a_longer_window() -> None:
    # the confirmation of the script's 4 workers, whose first run swung by ±60%: four times the
    # batches (SWEEP_SWING_WINDOW); the best, which did not swing, keeps its window
    from fastload_cli.analyzer import thresholds as th
    from fastload_cli.analyzer.search import step
    from fastload_cli.analyzer.search.state import Sizing, State

    limits = Limits(max_workers=16, refine=0)
    points = [pt(w, latency_bound(w), spread=0.6 if w == 4 else 0.1) for w in (0, 1, 2, 4, 8, 16)]

    def next_run(measured: list[SweepPoint]) -> step.Step | None:
        state = State(
            points=tuple(measured), current=4, loader=None, limits=limits, prediction=None, cpu_count=2,
            measured_any=True, sizing=Sizing(warmup=5, max_batches=50),
        )  # fmt: skip
        return step.next_step(state)

    own = next_run(points)
    assert own is not None and own.specs[0].workers == 4
    assert own.max_batches == 50 * th.SWEEP_SWING_WINDOW and own.note == step.AGAIN_LONGER
    points[-1] = pt(16, latency_bound(16), spread=0.6)  # the best swung as well: it goes first, as long
    best = next_run(points)
    assert best is not None and best.specs[0].workers == 16 and best.max_batches == 50 * th.SWEEP_SWING_WINDOW


def test_runs_of_one_setting_pool_weighed_by_their_batches() -> None:
    from fastload_cli.analyzer.search import points

    short, long = dataclasses.replace(pt(4, 192.0), batches=47), dataclasses.replace(pt(4, 274.0), batches=197)
    (pooled,) = points.per_setting([short, long])
    assert pooled.throughput_samples_per_s == pytest.approx((192.0 * 47 + 274.0 * 197) / 244)
    assert pooled.runs == 2 and pooled.batches == 244


def test_no_second_runs_when_the_scripts_own_setting_is_the_best() -> None:
    points = search(cpu_bound, Limits(refine=0), current=3, confirm=True)
    assert order(points) == [0, 1, 2, 4, 8, 3]


def test_a_cheaper_setting_the_best_does_not_beat_beyond_the_noise_is_measured_again() -> None:
    from fastload_cli.analyzer.search import outcome

    runs = {0: iter([155.0, 168.0])}  # a slow first run of main-process loading, as noise makes one
    model = {1: 160.0, 2: 140.0, 4: 130.0}
    limits = Limits(max_workers=4, refine=0)
    points = search(lambda w: next(runs[w]) if w in runs else model[w], limits, current=4, confirm=True)
    assert order(points) == [0, 1, 2, 4, 1, 4, 0]
    result = outcome.conclude(points, 4, Limits(max_workers=4), cpu_count=2)
    assert result is not None and result.recommended_workers == 0


def test_a_cheaper_setting_beaten_beyond_the_noise_is_not_measured_again() -> None:
    model = {0: 140.0, 1: 160.0, 2: 140.0, 4: 130.0}
    points = search(model.__getitem__, Limits(max_workers=4, refine=0), current=4, confirm=True)
    assert order(points) == [0, 1, 2, 4, 1, 4]
