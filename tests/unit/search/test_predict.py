"""The num_workers prediction on hand-built rates; every expectation is worked out in the comments."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search.predict import Epochs, Rates, error, from_runs, predict, rates
from tests.unit import builders as b


def own(throughput: float, wait: float, workers: int, main_cpu: float, workers_cpu: float, busy: float = 0.9):
    return dataclasses.replace(
        b.summary(throughput=throughput, wait=wait, workers=workers, busy=busy),
        main_cpu_percent=main_cpu,
        workers_cpu_percent=workers_cpu,
    )


def test_latency_bound_loading_scales_past_the_cores() -> None:
    # 2 workers deliver 200 samples/s while the loop waits 90% of the time: 100 per worker. They
    # use a tenth of a core between them (they sleep on reads), the main process a fifth:
    # 0.3 / 200 = 1.5 ms of CPU per sample, so two cores allow 1,333 samples/s.
    r = rates(own(200, 0.9, 2, main_cpu=20, workers_cpu=10), 3000.0, cores=2)
    assert r is not None and r.bound and r.worker_per_s == pytest.approx(100.0)
    curve = predict(r, max_workers=32)
    assert curve.at(2) == pytest.approx(200.0)  # the measured point
    assert curve.at(8) == pytest.approx(800.0)
    assert curve.at(20) == pytest.approx(2 / 0.0015)
    assert curve.best == 13  # the fewest workers within 3% of 1,333: 13 x 100 = 1,300
    assert curve.best > 2 and curve.limit == "the cores"


def test_cpu_bound_loading_flattens_at_the_cores() -> None:
    # 2 workers at 200 samples/s use 1.8 cores, the main process 0.2: 10 ms of CPU per sample
    # on 2 cores is 200 samples/s, whatever the number of workers
    curve = predict(rates(own(200, 0.5, 2, main_cpu=20, workers_cpu=180), 3000.0, cores=2), max_workers=32)
    assert curve.at(1) == pytest.approx(100.0)
    assert curve.at(2) == pytest.approx(200.0)
    assert curve.at(16) == pytest.approx(200.0)
    assert curve.best == 2 and curve.limit == "the cores"


def test_the_step_ends_the_curve_when_inputs_get_cheap_enough() -> None:
    # 100 samples/s per worker, a step that takes 500 samples/s with free inputs, cores to spare
    curve = predict(rates(own(200, 0.9, 2, main_cpu=10, workers_cpu=10), 500.0, cores=16), max_workers=32)
    assert curve.best == 5 and curve.at(5) == pytest.approx(500.0) and curve.limit == "the step"


def test_loading_in_the_main_process_predicts_workers_from_its_wait() -> None:
    # No workers: 100 samples/s, the loop waits 60% of the time (6 ms per sample), on a CPU all of
    # it; the main process uses one core: 6 ms loading + 4 ms the rest of the step per sample.
    # A worker makes 1 / 6 ms = 167 samples/s; 10 ms of CPU per sample on 2 cores allows 200.
    r = rates(own(100, 0.6, 0, main_cpu=100, workers_cpu=0, busy=1.0), 250.0, cores=2)
    assert r is not None and r.serial_s == pytest.approx(0.006)
    curve = predict(r, max_workers=8)
    assert curve.at(0) == pytest.approx(1 / (1 / 250 + 0.006))  # = 100: the measured point
    assert curve.at(1) == pytest.approx(1 / 0.006)
    assert curve.at(2) == pytest.approx(200.0)
    assert curve.best == 2


def test_workers_the_loop_does_not_wait_on_are_enough() -> None:
    # 4 workers, a 1% wait: the step is the limit at 400 samples/s; fewer workers are a lower bound
    curve = predict(rates(own(400, 0.01, 4, main_cpu=100, workers_cpu=40), 2000.0, cores=8), max_workers=16)
    assert curve.at(4) == pytest.approx(400.0) and curve.at(16) == pytest.approx(400.0)
    assert curve.at(2) == pytest.approx(200.0)
    assert curve.best == 4


def test_without_a_synthetic_run_the_consumer_is_the_step_outside_the_wait() -> None:
    # 32 samples per batch, 10 ms of step outside the wait: 3,200 samples/s
    r = rates(own(200, 0.9, 2, main_cpu=1, workers_cpu=1), None, cores=None)
    assert r is not None and r.consumer_per_s == pytest.approx(3200.0)
    assert predict(r, max_workers=64).best == 32


def test_the_error_is_the_median_at_the_settings_measured_to_verify() -> None:
    r = Rates(consumer_per_s=None, worker_per_s=100.0, bound=True, loader_cpu_s=0.0, main_cpu_s=0.0,
              cores=None, serial_s=0.01, measured_at=1)  # fmt: skip
    curve = predict(r, max_workers=8)  # 100 per worker, nothing else limits it
    assert curve.limit == "--max-workers" and curve.best == 8
    # measured 4: 360 (predicted 400, off 11%), 8: 800 (0%), 6: 500 (off 20%): median 11%
    assert error(curve, [(4, 360.0), (8, 800.0), (6, 500.0)]) == pytest.approx(40 / 360)
    assert error(curve, []) is None


def test_nothing_measured_nothing_predicted() -> None:
    failed = dataclasses.replace(own(100, 0.5, 2, main_cpu=1, workers_cpu=1), throughput_samples_per_s=None)
    assert rates(failed, None, cores=2) is None
    assert from_runs(None, None, 2, 8) is None


def test_short_epochs_pay_each_start_up_at_the_settings_measured_over_whole_epochs() -> None:
    # 2 workers at 234 samples/s, 40-sample batches: one worker's first batch takes 40 / 117 =
    # 0.342 s, and a 0.373 s start-up leaves 0.031 s for starting 2 workers: 15.5 ms each.
    # An epoch of 1,000 samples at 16 workers: 0.342 + 16 x 0.0155 s of start-up, 1,000 samples
    # at the steady 1,872 samples/s (16 x 117), then 16 workers shut down at WORKER_STOP_S each.
    run = dataclasses.replace(own(234, 0.96, 2, main_cpu=10, workers_cpu=9), samples=400, batches=10, startup_s=0.373)
    r = rates(run, 5000.0, cores=2)
    assert r is not None
    assert r.first_batch_s == pytest.approx(40 / 117, rel=1e-3) and r.fork_s == pytest.approx(0.0155, rel=0.01)
    steady = predict(r, max_workers=32)
    short = predict(r, max_workers=32, epochs=Epochs(samples=1000, whole_from=3))
    assert short.at(2) == steady.at(2)  # measured in a steady window: no start-up in it
    epoch_s = r.first_batch_s + 16 * r.fork_s + 1000 / (16 * 117) + 16 * th.WORKER_STOP_S
    assert short.at(16) == pytest.approx(1000 / epoch_s, rel=1e-3)
    assert short.at(16) < 0.6 * steady.at(16)  # the start-up costs as much as the epoch's loading
    assert short.best > 8 and short.at(32) < short.at(short.best) * 1.03  # more workers start slower
    # a run whose start-up was not measured: the main process is taken to start a worker in 20 ms
    unknown = rates(dataclasses.replace(run, startup_s=None), 5000.0, cores=2)
    assert unknown is not None and unknown.fork_s == th.WORKER_START_S and unknown.first_batch_s == 0.0
