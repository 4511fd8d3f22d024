"""What the measured settings say (``search/outcome.py``)."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer.search import outcome
from fastload_cli.analyzer.search.limits import Limits
from tests.unit.search.sweeps import GIB, cpu_bound, latency_bound, order, pt, search


def test_the_climb_stops_at_max_workers_and_says_so() -> None:
    points = search(latency_bound, Limits(max_workers=4, refine=0), current=2)
    assert order(points) == [0, 1, 2, 4]
    result = outcome.conclude(points, 2, Limits(max_workers=4), cpu_count=2)
    assert result is not None
    assert result.stopped == "it reached --max-workers 4"
    assert result.reason.startswith("returns had not ended at 4 workers") and result.diminishing_at is None


def test_latency_bound_recommends_the_fewest_workers_near_the_best() -> None:
    points = [
        dataclasses.replace(p, data_wait_fraction=0.02 if p.workers >= 16 else 0.6)
        for p in search(latency_bound, Limits(), current=2, wait=0.6, loaders=0.1)
    ]
    result = outcome.conclude(points, 2, Limits(), cpu_count=2)
    assert result is not None
    assert result.best_workers == 16  # 16, 24 and 32 all measured 300/s; the first is kept
    assert result.recommended_workers == 16
    assert result.speedup == pytest.approx(300.0 / 40.0)
    assert result.significant
    assert result.diminishing_at == 16
    assert result.reason.startswith("IO latency hidden")


def test_cpu_bound_at_the_scripts_setting_keeps_it_and_names_the_saturated_cores() -> None:
    points = search(cpu_bound, Limits(), current=2, busy=0.97)
    result = outcome.conclude(points, 2, Limits(), cpu_count=2)
    assert result is not None
    assert result.recommended_workers == 2
    assert not result.significant
    assert result.diminishing_at == 2
    assert result.reason.startswith("cores saturated: the 2 CPUs were 97% busy at 2 workers")


def test_a_step_bound_pipeline_is_called_step_bound() -> None:
    points = search(lambda w: 100.0, Limits(), current=0, wait=0.02, busy=0.5)
    result = outcome.conclude(points, 0, Limits(), cpu_count=2)
    assert result is not None
    assert order(points) == [0, 1, 2, 4]
    assert result.diminishing_at == 0
    assert result.reason.startswith("step-bound")


def test_unexplained_flattening_says_the_cause_was_not_measured() -> None:
    points = search(cpu_bound, Limits(), current=0, busy=0.5, wait=0.5)
    result = outcome.conclude(points, 0, Limits(), cpu_count=2)
    assert result is not None and result.significant
    assert result.recommended_workers == 2
    assert result.reason.endswith("the cause was not measured")


def test_memory_cost_is_the_difference_in_process_tree_rss() -> None:
    points = [pt(0, 50.0, rss=GIB), pt(2, 100.0, rss=3 * GIB)]
    result = outcome.conclude(points, 0, Limits(grid=(0, 2)), cpu_count=2)
    assert result is not None
    assert result.memory_cost_bytes == 2 * GIB


def test_a_measurably_faster_variant_is_recommended_with_its_setting() -> None:
    points = [
        pt(0, 50.0),
        pt(2, 100.0),
        pt(2, 120.0, variant="prefetch_factor=4"),
        pt(2, 101.0, variant="pin_memory=True"),
    ]
    result = outcome.conclude(points, 0, Limits(grid=(0, 2)), cpu_count=2)
    assert result is not None
    assert result.recommended_variant == "prefetch_factor=4"
    assert result.speedup == pytest.approx(120.0 / 50.0)


def test_a_variant_within_noise_is_not_recommended() -> None:
    points = [pt(0, 50.0), pt(2, 100.0), pt(2, 103.0, variant="prefetch_factor=4")]
    result = outcome.conclude(points, 0, Limits(grid=(0, 2)), cpu_count=2)
    assert result is not None and result.recommended_variant is None


def test_nothing_measured_concludes_nothing() -> None:
    assert outcome.conclude([pt(0, None)], 0, Limits(), cpu_count=2) is None


def test_a_grid_measures_every_setting_asked_for_even_when_an_epoch_is_short() -> None:
    limits = Limits(grid=(0, 8, 16), epoch_batches=64, prefetch_factor=2)
    points = search(latency_bound, limits, current=2)
    assert order(points) == [0, 8, 16, 2]  # exactly as asked, and the script's own setting
    result = outcome.conclude(points, 2, limits, cpu_count=2)
    assert result is not None and result.stopped is None
    (caveat,) = result.caveats  # 16 workers: 32 prefetched, 32 drained of 64 batches
    assert caveat.startswith("workers=16: an epoch has 64 batches") and "measured as asked" in caveat


def test_a_second_run_that_disagrees_turns_a_gain_into_noise() -> None:
    once = [pt(0, 150.0), pt(2, 120.0)]
    assert outcome.conclude(once, 2, Limits(), cpu_count=2).significant  # type: ignore[union-attr]
    twice = [*once, pt(0, 110.0), pt(2, 121.0)]
    result = outcome.conclude(twice, 2, Limits(), cpu_count=2)
    assert result is not None and not result.significant
    assert result.recommended_workers == 2


def test_still_rising_at_a_limit_has_no_knee_and_says_what_stopped_it() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(latency_bound, limits, current=2)
    result = outcome.conclude(points, 2, limits, cpu_count=2)
    assert result is not None
    assert result.diminishing_at is None
    assert result.reason.startswith("returns had not ended at 9 workers, the most the search could try: an epoch")


def test_a_last_allowed_rung_that_does_not_improve_still_names_the_limit() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(lambda w: 100.0 if w == 9 else latency_bound(w), limits, current=2)
    result = outcome.conclude(points, 2, limits, cpu_count=2)
    assert result is not None and result.diminishing_at == 8  # 9 was clearly slower: returns ended
    assert result.stopped is not None and result.stopped.startswith("an epoch has 64 batches")


def test_a_last_allowed_rung_within_noise_of_the_best_is_still_rising() -> None:
    limits = Limits(epoch_batches=64, prefetch_factor=2, refine=0)
    points = search(lambda w: 158.0 if w == 9 else latency_bound(w), limits, current=2)
    result = outcome.conclude(points, 2, limits, cpu_count=2)
    assert result is not None and result.best_workers == 8 and result.diminishing_at is None
    assert result.reason.startswith("returns had not ended at 9 workers")


def test_settings_left_inside_the_first_epoch_beside_others_after_it_are_a_caveat() -> None:
    later = [dataclasses.replace(pt(w, 100.0 * (w + 1)), after_first_epoch=True) for w in (2, 8)]
    result = outcome.conclude([pt(0, 90.0), *later], 2, Limits(), None)
    assert result is not None
    assert [c for c in result.caveats if "first epoch" in c] == [
        "workers=0: measured only inside the script's first epoch and the other settings after it; the first "
        "epoch's workers can run slower than later epochs', so the comparison is not like with like: it can only "
        "understate them"
    ]
    again = dataclasses.replace(pt(0, 95.0), after_first_epoch=True)
    result = outcome.conclude([pt(0, 90.0), *later, again], 2, Limits(), None)
    assert result is not None and not [c for c in result.caveats if "first epoch" in c]


def test_a_gain_is_measured_against_the_noise_of_every_setting_on_the_way() -> None:
    # sweep-workers --workers 0,4,8 on a script with num_workers=0: workers=4 read 0.81x ±34%, then
    # workers=8 1.09x with a steady window; the runs on the way vary far more than the gain
    grid = Limits(grid=(0, 4, 8))
    points = [pt(0, 100.0, spread=0.03), pt(4, 81.0, spread=0.34), pt(8, 109.0, spread=0.04)]
    result = outcome.conclude(points, 0, grid, cpu_count=2)
    assert result is not None and not result.significant and result.recommended_workers == 0
    assert result.noise == pytest.approx(0.34)
    assert result.conclusion.startswith("Keep num_workers=0")


def test_once_both_ends_are_measured_again_their_own_runs_are_the_noise() -> None:
    # in-memory-tensors: 0 workers against the script's 4, each measured twice; one run of 1 worker
    # between them varied by 15% across its window
    ends = [pt(0, 14000.0, spread=0.03), pt(4, 11500.0, spread=0.09), pt(0, 14200.0), pt(4, 11500.0, spread=0.12)]
    result = outcome.conclude([*ends, pt(1, 11600.0, spread=0.15), pt(2, 11400.0)], 4, Limits(), cpu_count=2)
    assert result is not None and result.significant and result.recommended_workers == 0
    assert result.noise == pytest.approx(0.12)
    # 1.23x measured, 1.09x once the ends' own noise is off: "Use num_workers=0: 1.09x"
    assert result.conclusion.startswith("Use num_workers=0: 1.09x the script's own setting as measured")
    once = [pt(0, 13000.0, spread=0.03), pt(4, 11500.0, spread=0.09), pt(1, 11600.0, spread=0.15)]
    result = outcome.conclude(once, 4, Limits(), cpu_count=2)
    assert result is not None and not result.significant and result.noise == pytest.approx(0.15)


def test_a_gain_its_noise_leaves_under_five_percent_is_not_advised() -> None:
    # 0 workers against the script's 4, each measured twice: 1.14x, beyond the ends' ±12%, but only
    # 1.02x once that noise is off: no setting is measurably faster, so the script's own is kept
    ends = [pt(0, 13000.0, spread=0.03), pt(4, 11500.0, spread=0.09), pt(0, 13200.0), pt(4, 11500.0, spread=0.12)]
    result = outcome.conclude(ends, 4, Limits(), cpu_count=2)
    assert result is not None and not result.significant and result.recommended_workers == 4
    assert result.conclusion.startswith("Keep num_workers=4: no setting measurably faster")


def test_a_gain_after_a_slower_setting_is_advised_only_once_both_ends_are_measured_again() -> None:
    grid = Limits(grid=(0, 4, 8))
    once = [pt(0, 100.0), pt(4, 81.0), pt(8, 115.0)]
    result = outcome.conclude(once, 0, grid, cpu_count=2)
    assert result is not None and not result.significant
    assert any("num_workers=4 between them measured 0.81x" in c for c in result.caveats), result.caveats
    again = [*once, pt(0, 101.0), pt(8, 116.0)]
    result = outcome.conclude(again, 0, grid, cpu_count=2)
    assert result is not None and result.significant and result.recommended_workers == 8
    assert not any("between them" in c for c in result.caveats)


def test_the_search_measures_a_gain_after_a_slower_setting_again() -> None:
    from fastload_cli.analyzer.search.climb import confirmation, plain

    monotonic = plain([pt(0, 100.0), pt(4, 150.0), pt(8, 260.0)])
    assert confirmation(monotonic, Limits(), current=0) is None  # far apart, on a rising curve: as measured
    dipped = plain([pt(0, 100.0), pt(4, 81.0), pt(8, 260.0)])
    assert confirmation(dipped, Limits(), current=0) == 8


def test_a_setting_past_where_returns_end_is_not_worth_gigabytes_for_a_gain_inside_the_noise() -> None:
    # long_epochs.py --latency-ms 4 on two cores: 2, 9, 12 and 32 workers measured 476, 1762, 2402
    # and 2742 samples/s (±16% between settings). 32 is the fastest and 12 lies 12% below it, past
    # the 3% within which fewer workers are preferred; but 32 does not beat 12 beyond the noise
    # (returns end at 12), gains 1.14x over it (under 1.2x) and needs 8 GiB more, of the 18 GiB a
    # setting may use: 12 is advised
    def measured(rss_32: int) -> list:
        return [
            pt(2, 476.0, spread=0.16, rss=1 * GIB),
            pt(9, 1762.0, spread=0.16, rss=4 * GIB),
            pt(12, 2402.0, spread=0.16, rss=5 * GIB),
            pt(32, 2742.0, spread=0.16, rss=rss_32),
        ]

    two_cores = Limits(memory_budget_bytes=18 * GIB)
    result = outcome.conclude(measured(13 * GIB), 2, two_cores, cpu_count=2)
    assert result is not None
    assert (result.best_workers, result.diminishing_at, result.recommended_workers) == (32, 12, 12)
    assert result.speedup == pytest.approx(2402.0 / 476.0)
    assert result.memory_cost_bytes == 4 * GIB
    assert result.conclusion.startswith("Use num_workers=12:")
    # 1.5 GiB apart, under a tenth of the 18: the fastest is kept as before
    kept = outcome.conclude(measured(6 * GIB + GIB // 2), 2, two_cores, cpu_count=2)
    assert kept is not None and kept.recommended_workers == 32
    # and so it is where the memory free is not known
    unknown = outcome.conclude(measured(13 * GIB), 2, Limits(), cpu_count=2)
    assert unknown is not None and unknown.recommended_workers == 32


def test_a_setting_past_where_returns_end_is_kept_where_it_gains_as_much_as_it_costs() -> None:
    # a first run of the same script: 9 and 11 workers measured 1735 and 2262 samples/s (±41%), so
    # returns "end" at 9 inside that noise; 11 gains 1.30x over 9, a gain worth its 2 GiB: plain
    # runs train 1745 samples/s with 9 workers and 2245 with 12
    points = [
        pt(2, 436.0, spread=0.41, rss=1 * GIB),
        pt(9, 1735.0, spread=0.41, rss=4 * GIB),
        pt(11, 2262.0, spread=0.41, rss=6 * GIB),
    ]
    result = outcome.conclude(points, 2, Limits(memory_budget_bytes=18 * GIB), cpu_count=2)
    assert result is not None
    assert (result.diminishing_at, result.recommended_workers) == (9, 11)


def test_on_a_64_core_host_the_last_workers_are_weighed_against_the_memory_it_has() -> None:
    # the script's 8 workers against 32, 48 and 64 (±10%), each worker 0.5 GiB: 64 is the fastest,
    # 6% over 48 for 8 GiB more; 48 is 14% over 32, beyond the noise, so returns end at 48. With
    # 400 GiB a setting may use, 8 GiB is 2% of it and 64 is advised; with 48 GiB, a sixth: 48
    def at(workers: int, rate: float):
        return pt(workers, rate, spread=0.1, wait=0.3, busy=0.6, rss=2 * GIB + workers * GIB // 2)

    points = [at(8, 800.0), at(32, 2900.0), at(48, 3300.0), at(64, 3500.0)]
    roomy = outcome.conclude(points, 8, Limits(memory_budget_bytes=400 * GIB), cpu_count=64)
    assert roomy is not None
    assert (roomy.best_workers, roomy.diminishing_at, roomy.recommended_workers) == (64, 48, 64)
    tight = outcome.conclude(points, 8, Limits(memory_budget_bytes=48 * GIB), cpu_count=64)
    assert tight is not None and tight.recommended_workers == 48
    assert tight.significant and tight.memory_cost_bytes == 20 * GIB
