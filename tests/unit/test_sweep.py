"""The num_workers search and its conclusions, driven by made-up measurement sequences."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from fastload_cli.analyzer import parts, sweep
from fastload_cli.analyzer.sweep import Limits
from fastload_cli.records import SweepPoint

GIB = 2**30
Model = Callable[[int], float]


def pt(
    workers: int,
    throughput: float | None,
    *,
    spread: float | None = 0.01,
    wait: float = 0.4,
    busy: float = 0.5,
    loaders: float = 0.9,
    rss: int | None = None,
    variant: str | None = None,
) -> SweepPoint:
    return SweepPoint(
        workers=workers,
        mode=f"workers={workers}",
        throughput_samples_per_s=throughput,
        spread=spread,
        data_wait_fraction=wait,
        system_cpu_busy_fraction=busy,
        loader_busy_fraction=loaders,
        rss_bytes=rss,
        variant=variant,
    )


def search(
    model: Model, limits: Limits, current: int | None, *, confirm: bool = False, **point_args: object
) -> list[SweepPoint]:
    """Run the planner to the end against a throughput model; the points in measuring order
    (without the confirming second runs unless ``confirm``)."""
    limits = dataclasses.replace(limits, confirm=confirm)
    points: list[SweepPoint] = []
    for _ in range(50):
        nxt = sweep.plan(points, limits, current).workers
        if nxt is None:
            return points
        points.append(pt(nxt, model(nxt), **point_args))  # type: ignore[arg-type]
    raise AssertionError("the search did not end")


def order(points: list[SweepPoint]) -> list[int]:
    return [p.workers for p in points]


# --------------------------------------------------------------------------------------------
# The ladder and noise
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("top", "rungs"),
    [(0, [0]), (1, [0, 1]), (4, [0, 1, 2, 4]), (12, [0, 1, 2, 4, 8, 12]), (32, [0, 1, 2, 4, 8, 16, 32])],
)
def test_the_ladder_doubles_up_to_max_workers(top: int, rungs: list[int]) -> None:
    assert sweep.ladder(top) == rungs


def test_one_flat_rung_does_not_end_the_climb() -> None:
    # a noisy dip at 4 workers; 8 is clearly faster again
    points = search(lambda w: {0: 10.0, 1: 20.0, 2: 40.0, 4: 39.0}.get(w, 90.0), Limits(max_workers=8, refine=0), 2)
    assert order(points) == [0, 1, 2, 4, 8]


def test_a_difference_within_the_noise_floor_is_not_faster() -> None:
    assert not sweep.faster(pt(4, 104.0), pt(2, 100.0))
    assert sweep.faster(pt(4, 106.0), pt(2, 100.0))


def test_a_run_with_a_wide_spread_widens_the_noise() -> None:
    assert not sweep.faster(pt(4, 110.0, spread=0.15), pt(2, 100.0))
    assert sweep.faster(pt(4, 120.0, spread=0.15), pt(2, 100.0))


def test_a_failed_point_is_never_faster() -> None:
    assert not sweep.faster(pt(4, None), pt(2, 100.0))
    assert not sweep.faster(pt(4, 100.0), pt(2, None))


# --------------------------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------------------------


def cpu_bound(w: int) -> float:
    """Two cores: one worker loads beside the step, two fill the machine, more only share it."""
    return {0: 50.0, 1: 90.0, 2: 120.0, 3: 121.0}.get(w, 119.0)


def latency_bound(w: int) -> float:
    """Each worker hides one read's latency: throughput grows with workers until the step limits it."""
    return 15.0 if w == 0 else min(20.0 * w, 300.0)


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


def test_the_climb_stops_at_max_workers_and_says_so() -> None:
    points = search(latency_bound, Limits(max_workers=4, refine=0), current=2)
    assert order(points) == [0, 1, 2, 4]
    result = sweep.conclude(points, 2, Limits(max_workers=4), cpu_count=2)
    assert result is not None
    assert result.stopped == "it reached --max-workers 4"
    assert result.reason.startswith("returns had not ended at 4 workers") and result.diminishing_at is None


def test_the_climb_stops_where_the_next_rung_would_not_fit_in_memory() -> None:
    def with_rss(points: list[SweepPoint]) -> list[SweepPoint]:
        return [dataclasses.replace(p, rss_bytes=GIB + p.workers * GIB) for p in points]

    limits = Limits(memory_budget_bytes=6 * GIB, refine=0, confirm=False)
    points: list[SweepPoint] = []
    while (nxt := sweep.plan(points, limits, 2).workers) is not None:
        points = with_rss([*points, pt(nxt, latency_bound(nxt))])
    # 8 workers: 9 GiB projected from 1 GiB per worker; 5 is the most that fits in 6 GiB
    assert order(points) == [0, 1, 2, 4, 5]
    rung, stopped = sweep.climb(points, limits)
    assert rung is None
    assert stopped is not None and "8 workers would need about 9.0 GiB" in stopped


def test_a_failed_rung_ends_the_climb() -> None:
    points = search(lambda w: 0.0 if w == 8 else latency_bound(w), Limits(refine=0), current=2)
    points = [dataclasses.replace(p, throughput_samples_per_s=None) if p.workers == 8 else p for p in points]
    assert sweep.plan(points, Limits(refine=0, confirm=False), 2).workers is None
    assert sweep.climb(points, Limits())[1] == "the run with 8 workers failed"


def test_a_grid_measures_exactly_its_settings_and_the_scripts_own() -> None:
    points = search(latency_bound, Limits(grid=(0, 2, 4)), current=3)
    assert order(points) == [0, 2, 4, 3]


def test_a_peak_is_refined_above_it_first() -> None:
    points = search(lambda w: {0: 10.0, 1: 20.0, 2: 40.0, 4: 80.0, 8: 60.0}.get(w, 70.0), Limits(), current=0)
    assert order(points) == [0, 1, 2, 4, 8, 16, 6, 5]


def test_refinement_is_bounded() -> None:
    points = search(latency_bound, Limits(refine=1), current=2)
    assert order(points) == [0, 1, 2, 4, 8, 16, 32, 12]


# --------------------------------------------------------------------------------------------
# Conclusions
# --------------------------------------------------------------------------------------------


def test_latency_bound_recommends_the_fewest_workers_near_the_best() -> None:
    points = [
        dataclasses.replace(p, data_wait_fraction=0.02 if p.workers >= 16 else 0.6)
        for p in search(latency_bound, Limits(), current=2, wait=0.6, loaders=0.1)
    ]
    result = sweep.conclude(points, 2, Limits(), cpu_count=2)
    assert result is not None
    assert result.best_workers == 16  # 16, 24 and 32 all measured 300/s; the first is kept
    assert result.recommended_workers == 16
    assert result.speedup == pytest.approx(300.0 / 40.0)
    assert result.significant
    assert result.diminishing_at == 16
    assert result.reason.startswith("IO latency hidden")


def test_cpu_bound_at_the_scripts_setting_keeps_it_and_names_the_saturated_cores() -> None:
    points = search(cpu_bound, Limits(), current=2, busy=0.97)
    result = sweep.conclude(points, 2, Limits(), cpu_count=2)
    assert result is not None
    assert result.recommended_workers == 2
    assert not result.significant
    assert result.diminishing_at == 2
    assert result.reason.startswith("cores saturated: the 2 CPUs were 97% busy at 2 workers")


def test_a_step_bound_pipeline_is_called_step_bound() -> None:
    points = search(lambda w: 100.0, Limits(), current=0, wait=0.02, busy=0.5)
    result = sweep.conclude(points, 0, Limits(), cpu_count=2)
    assert result is not None
    assert order(points) == [0, 1, 2, 4]
    assert result.diminishing_at == 0
    assert result.reason.startswith("step-bound")


def test_unexplained_flattening_says_the_cause_was_not_measured() -> None:
    points = search(cpu_bound, Limits(), current=0, busy=0.5, wait=0.5)
    result = sweep.conclude(points, 0, Limits(), cpu_count=2)
    assert result is not None and result.significant
    assert result.recommended_workers == 2
    assert result.reason.endswith("the cause was not measured")


def test_memory_cost_is_the_difference_in_process_tree_rss() -> None:
    points = [pt(0, 50.0, rss=GIB), pt(2, 100.0, rss=3 * GIB)]
    result = sweep.conclude(points, 0, Limits(grid=(0, 2)), cpu_count=2)
    assert result is not None
    assert result.memory_cost_bytes == 2 * GIB


def test_a_measurably_faster_variant_is_recommended_with_its_setting() -> None:
    points = [
        pt(0, 50.0),
        pt(2, 100.0),
        pt(2, 120.0, variant="prefetch_factor=4"),
        pt(2, 101.0, variant="pin_memory=True"),
    ]
    result = sweep.conclude(points, 0, Limits(grid=(0, 2)), cpu_count=2)
    assert result is not None
    assert result.recommended_variant == "prefetch_factor=4"
    assert result.speedup == pytest.approx(120.0 / 50.0)


def test_a_variant_within_noise_is_not_recommended() -> None:
    points = [pt(0, 50.0), pt(2, 100.0), pt(2, 103.0, variant="prefetch_factor=4")]
    result = sweep.conclude(points, 0, Limits(grid=(0, 2)), cpu_count=2)
    assert result is not None and result.recommended_variant is None


def test_nothing_measured_concludes_nothing() -> None:
    assert sweep.conclude([pt(0, None)], 0, Limits(), cpu_count=2) is None


def test_projected_rss_extrapolates_from_the_two_largest_settings() -> None:
    points = [pt(0, 1.0, rss=GIB), pt(2, 1.0, rss=2 * GIB), pt(4, 1.0, rss=4 * GIB)]
    assert sweep.projected_rss(points, 8) == 8 * GIB
    assert sweep.projected_rss(points, 4) is None  # measured, not projected
    assert sweep.projected_rss(points[:1], 8) is None  # one setting: no per-worker cost yet


def test_the_climb_stops_where_start_up_and_drain_would_fill_an_epoch() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(latency_bound, limits, current=2)
    # 16 workers: 32 prefetched at the start, 32 drained at the end, nothing left; 9 is the last
    assert order(points) == [0, 1, 2, 4, 8, 9]
    stopped = sweep.climb(points, limits)[1]
    assert stopped is not None and stopped.startswith("an epoch has 64 batches: 16 workers would prefetch 32")


def test_a_grid_measures_every_setting_asked_for_even_when_an_epoch_is_short() -> None:
    limits = Limits(grid=(0, 8, 16), epoch_batches=64, prefetch_factor=2)
    points = search(latency_bound, limits, current=2)
    assert order(points) == [0, 8, 16, 2]  # exactly as asked, and the script's own setting
    result = sweep.conclude(points, 2, limits, cpu_count=2)
    assert result is not None and result.stopped is None
    (caveat,) = result.caveats  # 16 workers: 32 prefetched, 32 drained of 64 batches
    assert caveat.startswith("workers=16: an epoch has 64 batches") and "measured as asked" in caveat


def test_limits_take_the_epoch_length_from_the_loader() -> None:
    from tests.unit import builders as b

    loader = dataclasses.replace(b.loader(num_workers=2), dataset_len=1000, batch_size=16)
    limits = Limits().with_loader(loader)
    assert limits.epoch_batches == 62
    assert limits.prefetch_factor == 2
    assert limits.too_many(8) is None  # 16 at the start + 3 rounds of 8 + 16 drained = 56 of 62 batches
    assert limits.too_many(9) is not None


def test_the_best_and_the_scripts_own_setting_are_measured_twice_when_they_differ() -> None:
    points = search(latency_bound, Limits(refine=0), current=8, confirm=True)  # 300 against 160
    assert order(points) == [0, 1, 2, 4, 8, 16, 32, 16, 8]


def test_no_second_runs_where_the_best_is_twice_as_fast_as_the_scripts_own() -> None:
    points = search(latency_bound, Limits(refine=0), current=2, confirm=True)  # 300 against 40
    assert order(points) == [0, 1, 2, 4, 8, 16, 32]


def test_no_second_runs_when_the_scripts_own_setting_is_the_best() -> None:
    points = search(cpu_bound, Limits(refine=0), current=3, confirm=True)
    assert order(points) == [0, 1, 2, 4, 8, 3]


def test_repeated_runs_merge_into_their_mean_with_the_spread_between_them() -> None:
    merged = sweep.merge([pt(2, 100.0, spread=0.02), pt(4, 150.0), pt(2, 120.0, spread=0.03)])
    assert [p.workers for p in merged] == [2, 4]
    assert merged[0].throughput_samples_per_s == pytest.approx(110.0)
    assert merged[0].spread == pytest.approx(10.0 / 110.0)
    assert merged[0].runs == 2


def test_a_second_run_that_disagrees_turns_a_gain_into_noise() -> None:
    once = [pt(0, 150.0), pt(2, 120.0)]
    assert sweep.conclude(once, 2, Limits(), cpu_count=2).significant  # type: ignore[union-attr]
    twice = [*once, pt(0, 110.0), pt(2, 121.0)]
    result = sweep.conclude(twice, 2, Limits(), cpu_count=2)
    assert result is not None and not result.significant
    assert result.recommended_workers == 2


def test_still_rising_at_a_limit_has_no_knee_and_says_what_stopped_it() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(latency_bound, limits, current=2)
    result = sweep.conclude(points, 2, limits, cpu_count=2)
    assert result is not None
    assert result.diminishing_at is None
    assert result.reason.startswith("returns had not ended at 9 workers, the most the search could try: an epoch")


def test_a_last_allowed_rung_that_does_not_improve_still_names_the_limit() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(lambda w: 100.0 if w == 9 else latency_bound(w), limits, current=2)
    result = sweep.conclude(points, 2, limits, cpu_count=2)
    assert result is not None and result.diminishing_at == 8  # 9 was clearly slower: returns ended
    assert result.stopped is not None and result.stopped.startswith("an epoch has 64 batches")


def test_a_last_allowed_rung_within_noise_of_the_best_is_still_rising() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(lambda w: 158.0 if w == 9 else latency_bound(w), limits, current=2)
    result = sweep.conclude(points, 2, limits, cpu_count=2)
    assert result is not None and result.best_workers == 8 and result.diminishing_at is None
    assert result.reason.startswith("returns had not ended at 9 workers")


def test_a_setting_measured_after_the_first_epoch_replaces_its_runs_inside_it() -> None:
    inside = [pt(2, 100.0), pt(4, 150.0)]
    later = [dataclasses.replace(pt(8, 140.0), after_first_epoch=True)]
    # 2 and 4 were measured inside the first epoch, 8 after it: both are measured again, in order
    assert parts.again_after_first_epoch([*inside, *later]) == [2, 4]
    assert parts.again_after_first_epoch(inside) == []  # all in one part: nothing to measure again
    again = dataclasses.replace(pt(2, 130.0), after_first_epoch=True)
    kept = parts.comparable([*inside, *later, again])
    assert [(p.workers, p.throughput_samples_per_s) for p in kept] == [(4, 150.0), (8, 140.0), (2, 130.0)]
    assert parts.again_after_first_epoch(kept) == [4]
    # a run after the first epoch that measured nothing leaves the one inside it, and is not redone
    failed = dataclasses.replace(pt(4, None), after_first_epoch=True)
    kept = parts.comparable([*inside, *later, again, failed])
    assert [(p.workers, p.throughput_samples_per_s) for p in kept] == [(4, 150.0), (8, 140.0), (2, 130.0), (4, None)]
    assert parts.again_after_first_epoch(kept) == []
    # more than FIRST_EPOCH_MARGIN (1.5x) below the fastest after it: the comparison cannot turn on
    # it, so it is not measured again (its caveat says it was measured inside the first epoch)
    faster = [dataclasses.replace(pt(8, 200.0), after_first_epoch=True)]
    assert parts.inside_first_epoch([*inside, *faster]) == [2, 4]
    assert parts.again_after_first_epoch([*inside, *faster]) == [4]


def test_settings_left_inside_the_first_epoch_beside_others_after_it_are_a_caveat() -> None:
    later = [dataclasses.replace(pt(w, 100.0 * (w + 1)), after_first_epoch=True) for w in (2, 8)]
    result = sweep.conclude([pt(0, 90.0), *later], 2, Limits(), None)
    assert result is not None
    assert [c for c in result.caveats if "first epoch" in c] == [
        "workers=0: measured only inside the script's first epoch and the other settings after it; the first "
        "epoch's workers can run slower than later epochs', so the comparison is not like with like"
    ]
    again = dataclasses.replace(pt(0, 95.0), after_first_epoch=True)
    result = sweep.conclude([pt(0, 90.0), *later, again], 2, Limits(), None)
    assert result is not None and not [c for c in result.caveats if "first epoch" in c]
