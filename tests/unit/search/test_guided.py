"""The sweep that starts from a prediction: what it measures, against hand-built throughput models."""

from __future__ import annotations

import dataclasses
import math

import pytest

from fastload_cli.analyzer import search
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.search import guided, outcome, sizing, step
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.analyzer.search.predict import Curve
from fastload_cli.records import WHOLE_EPOCHS, Mode, ModeSpec, SweepPoint
from tests.unit import builders as b
from tests.unit.search.sweeps import Model, latency_bound, pt


def curve(best: int, top: int = 32) -> Curve:
    return Curve(points=tuple((n, 10.0 * min(n, best)) for n in range(top + 1)), best=best, limit="the cores")


def verify(
    model: Model,
    limits: Limits,
    current: int,
    predicted: Curve,
    down: bool = False,
    busy: float = 0.5,
    wait: float | None = None,
) -> list[int]:
    """The settings the guided search measures after the script's own in steady windows, in order (no
    confirmations; settings it then measures over whole epochs are not listed).
    The loop waits for data in proportion to what a setting falls short of the model's plateau
    (the step's rate), or ``wait`` of the time at every setting; the cores are ``busy``."""
    limits = dataclasses.replace(limits, confirm=False)
    plateau = max(model(n) for n in range(65))

    def measured(workers: int) -> SweepPoint:
        waited = 1 - model(workers) / plateau if wait is None else wait
        return pt(workers, model(workers), wait=waited, busy=busy)

    points = [measured(current)]
    for _ in range(20):
        found = guided.plan(points, limits, current, predicted, down=down)
        if found.workers is None:
            return [p.workers for p in points[1:] if p.variant is None]
        point = measured(found.workers)
        points.append(dataclasses.replace(point, variant=WHOLE_EPOCHS) if found.whole_epochs else point)
    raise AssertionError("the search did not end")


def test_a_right_prediction_is_verified_by_the_setting_below_and_one_above() -> None:
    # throughput rises to 8 workers, flat after: predicted 8, then 6 (slower), then 12 (as fast)
    def model(w: int) -> float:
        return 100.0 * min(max(w, 1), 8)

    assert verify(model, Limits(), current=2, predicted=curve(8)) == [8, 6, 12]


def test_a_prediction_too_low_is_followed_up_while_throughput_keeps_rising() -> None:
    # predicted 4, but latency-bound loading rises to 16: the loop still waits at 4 beside idle
    # cores, so the search climbs before it looks below, half as many more each time (no rate with
    # free inputs to aim at), within the PREDICT_MAX_SETTINGS it allows
    assert verify(latency_bound, Limits(), current=2, predicted=curve(4)) == [4, 6, 9, 13]
    # where the loop no longer waits, the one below is measured first, then the climb goes on
    assert verify(latency_bound, Limits(), current=2, predicted=curve(4), wait=0.05) == [4, 3, 6, 9]


def test_no_climb_above_a_setting_whose_cores_were_saturated() -> None:
    # throughput still rises, but the cores were 90% busy at 4 workers: more workers only share them
    # with the step, and the sweep names that where returns end
    assert verify(latency_bound, Limits(), current=2, predicted=curve(4), wait=0.05, busy=0.9) == [4, 3]


def test_augmentation_on_two_saturated_cores_is_not_climbed_to_a_setting_of_whole_epochs() -> None:
    # zoo augmentation_heavy.py on 2 cores, as a bench run measured it: 2 workers 112 samples/s, 3
    # workers 147 (the CPUs 100% busy), the step takes 566 with free inputs; a climb aimed at that
    # rate asked for 13 workers, which a 62-batch epoch measures only over whole epochs after the
    # first (39 s of a 89 s diagnosis), and then 3 again after it, to come out at 3
    limits = Limits(epoch_batches=62, max_workers=32, confirm=False)
    aimed = dataclasses.replace(curve(3), consumer_per_s=566.0)
    points = [pt(2, 112.0, wait=0.57, busy=0.78), pt(3, 147.0, wait=0.03, busy=1.0)]
    found = guided.plan(points, limits, 2, aimed)
    assert found.whole_epochs and found.workers == 2  # what follows: the script's own and 3, epoch for epoch
    points[1] = dataclasses.replace(points[1], system_cpu_busy_fraction=0.6)  # cores with room: it climbs
    assert guided.plan(points, limits, 2, aimed).workers == 12


def test_a_climb_aims_at_the_rate_the_step_takes_with_free_inputs() -> None:
    # 16 cores, the step takes 1,640 samples/s: at 6 workers 921 (the loop waits 44%), so about
    # 6 x 1,640 / 921 = 11 workers would feed it; at 11, 1,076: 17 would
    def model(w: int) -> float:
        return {4: 715.0, 6: 921.0, 11: 1076.0}.get(w, 1640.0 if w >= 14 else 1452.0)

    aimed = dataclasses.replace(curve(6), consumer_per_s=1640.0)
    assert verify(model, Limits(), current=4, predicted=aimed)[:3] == [6, 11, 17]


def test_a_climb_ends_once_a_setting_trains_at_the_rate_the_step_takes_with_free_inputs() -> None:
    # zoo/gpu_paced.py's shape: the step takes 440 samples/s; 3 workers 407, 4 workers 438, beyond
    # the noise of 3 yet within 3% of the step's rate: no setting above 4 can be named over it, and
    # 6 workers would need whole epochs of its 40-batch epochs each
    def model(w: int) -> float:
        return {2: 315.0, 3: 407.0, 4: 438.0}.get(w, 445.0)

    aimed = dataclasses.replace(curve(3), consumer_per_s=440.0)
    assert verify(model, Limits(), current=2, predicted=aimed) == [3, 4]
    # the step's rate unknown, or still well above: the climb goes on while the measurements rise
    assert verify(model, Limits(), current=2, predicted=curve(3)) == [3, 4, 6]
    above = dataclasses.replace(curve(3), consumer_per_s=600.0)  # aimed at: 3 x 600 / 407 = 5, then 7
    assert verify(model, Limits(), current=2, predicted=above) == [3, 5, 7]


def test_a_climb_never_asks_for_more_workers_than_an_epoch_has_batches() -> None:
    # zoo/cold_reads.py's shape on 2 cores: 24-batch epochs, 3 workers read 282 samples/s while the
    # loop still waits beside idle cores, and the step takes 4,770 with free inputs. Aimed at that rate
    # the climb asked for 32 workers, 8 of which never get a batch of an epoch and all of which start
    # again every epoch; 24 gives each batch a worker of its own.
    def model(w: int) -> float:
        return {2: 221.0, 3: 282.0}.get(w, 106.0)

    aimed = dataclasses.replace(curve(3), consumer_per_s=4770.0)
    short = Limits(epoch_batches=24)
    assert verify(model, short, current=2, predicted=aimed, wait=0.57) == [3, 24]
    # a 128-core host run with --max-workers 64, 48-batch epochs: 3 workers starved, the step 27x as
    # fast with free inputs; the climb stops at 48, and says why it went no further while the loop
    # still waited there
    many = Limits(max_workers=64, epoch_batches=48)
    fed = dataclasses.replace(curve(3, 64), consumer_per_s=8000.0)
    assert verify(lambda w: 100.0 * w, many, current=2, predicted=fed, wait=0.5)[:2] == [3, 48]
    points = [pt(2, 200.0, wait=0.5), pt(3, 300.0, wait=0.5), pt(48, 4800.0, wait=0.5)]
    found = outcome.conclude(points, 2, many, 128, fed)
    assert found is not None and found.stopped is not None and "48 batches has a worker of its own" in found.stopped
    # epochs of unknown length, or long ones: max_workers alone bounds the climb, as before
    assert verify(model, Limits(), current=2, predicted=aimed, wait=0.57)[:2] == [3, 32]


def test_a_setting_within_the_noise_of_the_steps_rate_ends_the_climb() -> None:
    # zoo/gpu_paced.py in a bench run: its replays ran 450 samples/s (their spread 10%), 3 workers
    # 435, 3.3% short of them: the climb went on to 4 (446, then 455 measured again), measured 3
    # again and kept it. 3 and the step's rate cannot be told apart: nothing above 3 could be promised.
    def model(w: int) -> float:
        return {2: 324.0, 3: 435.0}.get(w, 450.0)

    noisy = dataclasses.replace(curve(3), consumer_per_s=450.0, consumer_noise=0.10)
    assert verify(model, Limits(), current=2, predicted=noisy) == [3]
    # replays that hardly vary leave 3 short of them beyond their noise: 4 is measured
    steady = dataclasses.replace(curve(3), consumer_per_s=470.0, consumer_noise=0.01)
    assert verify(model, Limits(), current=2, predicted=steady)[:2] == [3, 4]
    # a GPU host's shape: 8 workers at 1,500 samples/s where replays ran 1,800 (±4%), 17% short
    # of them: the climb goes on whatever the replays' noise
    far = dataclasses.replace(curve(8), consumer_per_s=1800.0, consumer_noise=0.04)
    assert verify(lambda w: min(187.5 * w, 1800.0), Limits(), current=4, predicted=far)[:2] == [8, 12]


def test_a_prediction_too_high_lands_on_a_plateau_and_stops() -> None:
    def model(w: int) -> float:
        return 100.0 * min(max(w, 1), 4)

    assert verify(model, Limits(), current=2, predicted=curve(16)) == [16, 12]


def test_never_below_the_floor_nor_past_max_workers() -> None:
    assert verify(latency_bound, Limits(min_workers=4, max_workers=8), current=4, predicted=curve(4)) == [6, 8]
    found = guided.plan([pt(2, 40.0)], Limits(max_workers=8), 2, curve(20))
    assert found.workers == 8 and found.stopped == "it reached --max-workers 8"


def test_a_failed_setting_ends_the_search() -> None:
    found = guided.plan([pt(2, 40.0), pt(8, None)], Limits(confirm=False), 2, curve(8))
    assert found.workers is None and found.stopped == "the run with 8 workers failed"


def test_a_setting_whose_second_run_failed_is_not_asked_for_again() -> None:
    # many_tensors.py: 6 workers measured 1.24x the script's own 4 once, 5 then failed (the
    # script runs out of file descriptors), which ends the search with the confirmation of 6;
    # its second run failed too. The search asked for 6 again after every failure, 22 runs of it
    # in one diagnose (36 s). A setting the script fails with is none to advise, nor to measure
    # again
    first = [pt(4, 306.0, spread=0.25), pt(6, 380.0, spread=0.10), pt(5, None)]
    found = guided.plan(first, Limits(), 4, curve(6))
    assert found.workers == 6 and found.stopped == "the run with 5 workers failed"  # its second run
    found = guided.plan([*first, pt(6, None)], Limits(), 4, curve(6))
    assert found.workers is None
    result = outcome.conclude([*first, pt(6, None)], 4, Limits(), cpu_count=2, curve=curve(6))
    assert result is not None and result.recommended_workers == 4 and not result.significant


def test_the_prediction_and_its_error_are_reported() -> None:
    points = [pt(2, 20.0), pt(8, 90.0), pt(6, 60.0)]
    result = outcome.conclude(points, 2, Limits(), cpu_count=2, curve=curve(8))
    assert result is not None and result.predicted_best == 8
    # predicted 80 at 8 (measured 90: off 11%) and 60 at 6 (measured 60: 0%): median 5.6%
    assert result.prediction_error == pytest.approx((10 / 90) / 2)


def test_epochs_that_restart_their_workers_are_named_where_returns_end() -> None:
    limits = Limits(epoch_batches=25)  # 8 workers x (2 x 2 prefetched + 3 rounds) > 25: no steady state
    points = [dataclasses.replace(pt(w, r), startup_s=0.6) for w, r in ((2, 200.0), (8, 600.0), (12, 600.0))]
    result = outcome.conclude(points, 2, limits, cpu_count=2, curve=curve(8))
    assert result is not None and result.diminishing_at == 8
    assert result.reason.startswith("epochs restart the workers: at 8 workers an epoch of 25 batches")
    kept = outcome.conclude(points, 2, dataclasses.replace(limits, persistent_workers=True), 2, curve(8))
    assert kept is not None and not kept.reason.startswith("epochs restart")


def test_a_setting_whose_epoch_has_no_steady_window_is_measured_over_whole_epochs() -> None:
    # 25-batch epochs: 2 workers leave a steady window (2 x (2 x 2 + 3) = 14 <= 25), 8 do not
    # (8 x 7 = 56): their window spans SWEEP_WHOLE_EPOCHS epochs, 75 batches, after one whole
    # epoch of warm-up (not the 16-batch burst: a window from batch 16 of an epoch would leave
    # its start-up out), and the run takes the next epoch's first batch: the last epoch's end
    # (its last step, its workers' shutdown) is then behind it
    short = dataclasses.replace(b.loader(num_workers=2), dataset_len=25 * 32)
    assert sizing.sized(ModeSpec(mode=Mode.WORKERS, workers=2), short, 5, 30) == (5, 30)
    assert sizing.sized(ModeSpec(mode=Mode.WORKERS, workers=8), short, 5, 30) == (25, 76)
    # the loader's own length counts the last, partial batch: 26 batches of 1,000 samples in 40s;
    # more batches asked for than three epochs hold are rounded up to whole epochs
    partial = dataclasses.replace(short, dataset_len=1000, batch_size=40, batches_per_epoch=26)
    assert sizing.sized(ModeSpec(mode=Mode.WORKERS, workers=14), partial, 5, 30) == (26, 79)
    assert sizing.sized(ModeSpec(mode=Mode.WORKERS, workers=14), partial, 30, 90) == (52, 105)
    # a long epoch keeps the rounds rule: three batches per worker at least
    assert sizing.sized(ModeSpec(mode=Mode.WORKERS, workers=16), b.loader(), 5, 30) == (32, 48)
    # after the first epoch: a warm-up of whole epochs whatever the setting, then its own window
    two = ModeSpec(mode=Mode.WORKERS, workers=2)
    assert sizing.sized(two, short, 5, 30, later=True) == (25, 30)
    assert sizing.sized(ModeSpec(mode=Mode.WORKERS, workers=8), short, 5, 30, later=True) == (25, 76)
    assert sizing.sized(two, b.loader(), 5, 30, later=True) == (312, 30)  # 10,000 samples in 32s


def test_a_sweep_measures_after_the_first_epoch_where_it_compares_with_whole_epochs() -> None:
    own = b.run("real", b.batches([10] * 60, 30), loaders=[b.loader(num_workers=2)])
    short = dataclasses.replace(own, loaders=(dataclasses.replace(own.loaders[0], dataset_len=25 * 32),))
    grid = Limits(grid=(1, 8))
    # 8 workers leave no steady window in 25 batches: every setting of this grid after the first epoch
    assert step.after_first_epoch(search.state([short], [summarize(short)], grid))
    assert not step.after_first_epoch(search.state([short], [summarize(short)], dataclasses.replace(grid, grid=(1, 3))))
    assert not step.after_first_epoch(search.state([own], [summarize(own)], grid))  # 312-batch epochs: a steady window
    # once one setting was measured after the first epoch, so is every later one
    later = dataclasses.replace(short, spec=ModeSpec(mode=Mode.WORKERS, workers=8), warmup_batches=25)
    runs = [short, later]
    assert step.after_first_epoch(
        search.state(runs, [summarize(r) for r in runs], dataclasses.replace(grid, grid=(1, 3)))
    )


def test_over_whole_epochs_the_search_measures_the_first_setting_of_each_step() -> None:
    # 25-batch epochs: 16 workers load an epoch in two rounds (ceil(25 / 16)), and so do 13; 12
    # take three, as do 9. Throughput steps up at 9, 13 and 25 and is flat (or falls, as more
    # workers take longer to start) between them.
    limits = Limits(epoch_batches=25)
    assert guided.fewest_for_rounds(16, limits) == 13
    assert guided.fewest_for_rounds(12, limits) == 9
    assert guided.fewest_for_rounds(25, limits) == 25  # one round: nothing fewer does it
    assert guided.fewest_for_rounds(2, limits) == 0  # a steady window: measured as usual
    assert guided.fewest_for_rounds(16, dataclasses.replace(limits, persistent_workers=True)) == 0
    assert guided.fewest_for_rounds(16, Limits()) == 0  # epoch length unknown

    def rounds(workers: int) -> float:  # samples/s: an epoch of 1,000 samples, 0.35 s a round, 40 ms a worker
        return 0.0 if workers == 0 else 1000 / (math.ceil(25 / workers) * 0.35 + 0.04 * workers)

    # predicted 12: its step starts at 9; the next, at 13, is faster; the one after, 25, is not
    assert verify(rounds, limits, current=2, predicted=curve(12)) == [9, 13, 25]
    assert verify(rounds, limits, current=2, predicted=curve(16)) == [13, 25]
    # never past max_workers: the step at 25 is left out under 24
    assert verify(rounds, dataclasses.replace(limits, max_workers=24), current=2, predicted=curve(12)) == [9, 13]
    # a longer epoch keeps the quarter below: 16 workers have a steady window in 200 batches
    assert verify(rounds, Limits(epoch_batches=200), current=2, predicted=curve(16))[:2] == [16, 12]


def test_where_the_workers_compete_with_the_step_the_search_measures_no_workers_too() -> None:
    # two workers that keep up take the step's cores: loading in the main process trains faster
    def model(w: int) -> float:
        return 117.0 if w == 0 else 100.0

    assert verify(model, Limits(), current=2, predicted=curve(2), busy=0.95) == [1]
    assert verify(model, Limits(), current=2, predicted=curve(2), down=True) == [1, 0]
    assert verify(model, Limits(min_workers=1), current=2, predicted=curve(2), down=True) == [1]  # the floor holds
    points = [pt(2, 100.0), pt(1, 100.0), pt(0, 117.0)]
    assert guided.pending(points[:1], Limits(), 2, curve(2), down=True) == [1, 0]
    found = outcome.conclude(points, 2, Limits(), cpu_count=2)
    assert found is not None
    assert found.recommended_workers == 0 and found.significant


def test_over_whole_epochs_workers_that_compete_with_the_step_are_weighed_against_none_before_more() -> None:
    # 6-batch epochs (192 samples, batches of 32), two workers on full cores: the first of the
    # predicted step (3), then no workers, and only then the step above (6). A time budget that
    # holds two settings has then measured the one the competition points to: the Hugging Face
    # image-classification script read 258-318 samples/s at 2 workers, 516-530 at none, and
    # advised 3 workers (1.18x) where the budget ended the sweep before none.
    def model(w: int) -> float:
        return 520.0 if w == 0 else 300.0 + 5 * w

    limits = Limits(epoch_batches=6)
    assert verify(model, limits, current=2, predicted=curve(3), busy=0.97, down=True) == [3, 0, 6]
    assert guided.pending([pt(2, 300.0, busy=0.97)], limits, 2, curve(3), down=True)[:2] == [3, 0]
    # a 16-core host, 40-batch epochs, 8 workers on full cores: 10 (four rounds), none, then 14
    assert verify(model, Limits(epoch_batches=40), current=8, predicted=curve(12), busy=0.97, down=True) == [10, 0, 14]
    # workers that do not compete climb the steps first, as before
    assert verify(model, limits, current=2, predicted=curve(3), busy=0.5)[:2] == [3, 6]


def test_workers_that_keep_up_on_full_cores_or_slow_the_step_compete_with_it() -> None:
    from fastload_cli.analyzer.search.state import loaders_compete

    runs = [b.run("real"), b.run("synthetic")]
    synthetic = b.summary("synthetic", compute_ms=10.0)

    def compete(**real: object) -> bool:
        return loaders_compete(runs, [dataclasses.replace(b.summary(), **real), synthetic])

    assert compete(loader_busy_fraction=0.2, system_cpu_busy_fraction=0.98)  # full cores
    assert compete(loader_busy_fraction=0.2, system_cpu_busy_fraction=0.5, compute_ms_p50=15.0)  # a slower step
    assert not compete(loader_busy_fraction=0.2, system_cpu_busy_fraction=0.5, compute_ms_p50=10.0)
    assert not compete(loader_busy_fraction=0.9, system_cpu_busy_fraction=0.98)  # busy workers: more may help
    assert not compete(loader_busy_fraction=0.2, system_cpu_busy_fraction=0.98, num_workers=0)  # none to drop
