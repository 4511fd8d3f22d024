"""Each recommendation rule fires on its measured condition and stays silent otherwise."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import advice as rec
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.verdict import Facts, decide
from fastload_cli.records import Bottleneck
from tests.unit import builders as b


def facts(real, synthetic=None, no_aug=None, workers=2, cores=8, cuda=False) -> Facts:
    return Facts(
        real=real,
        synthetic=synthetic,
        no_aug=no_aug,
        loader=b.loader(num_workers=workers),
        cpu_count=cores,
        cuda_in_use=cuda,
        substituted=("ColorJitter(brightness=0.4)", "RandomRotation(degrees=15)"),
    )


def ids(f: Facts) -> list[str]:
    return [r.id for r in b.recommended(f, decide(f))]


CPU_IDLE_CORES = facts(b.summary(wait=0.5, busy=0.9, system=0.4), b.summary("synthetic", throughput=300.0))
CPU_SATURATED = facts(b.summary(wait=0.5, busy=0.9, system=0.97), b.summary("synthetic", throughput=300.0))
AUG = facts(
    b.summary(wait=0.6, system=0.97), b.summary("synthetic", throughput=400.0), b.summary("no-aug", throughput=250.0)
)
IO = facts(b.summary(wait=0.8, busy=0.1, system=0.2), b.summary("synthetic", throughput=900.0))
COMPUTE = facts(b.summary(wait=0.01), b.summary("synthetic", throughput=102.0))


def test_more_workers_when_cpu_bound_with_idle_cores() -> None:
    found = rec.more_workers(CPU_IDLE_CORES, decide(CPU_IDLE_CORES))
    assert found is not None
    assert "num_workers=8" in found.title
    assert found.measured is False
    assert found.expected_speedup == pytest.approx(3.0)  # 8/2 = 4x, capped by the 3.0x ceiling


def test_no_more_workers_when_all_cores_are_busy() -> None:
    assert rec.more_workers(CPU_SATURATED, decide(CPU_SATURATED)) is None
    assert "cores-saturated" in ids(CPU_SATURATED)


def test_no_more_workers_when_already_at_the_core_count() -> None:
    f = facts(b.summary(wait=0.5, busy=0.9, system=0.4), b.summary("synthetic", throughput=300.0), workers=8)
    assert rec.more_workers(f, decide(f)) is None


def test_more_workers_for_io_even_past_the_cores() -> None:
    f = facts(b.summary(wait=0.8, busy=0.1, system=0.2), b.summary("synthetic", throughput=900.0), workers=4, cores=2)
    found = rec.more_workers(f, decide(f))
    assert found is not None and "num_workers=8" in found.title
    assert found.expected_speedup == pytest.approx(2.0)  # 8/4


def test_augmentation_rule_is_measured_and_names_the_transforms() -> None:
    found = rec.cheaper_augmentation(AUG, decide(AUG))
    assert found is not None
    assert found.measured is True
    # runs without a spread: at least what runs differ by from run to run
    assert found.expected_speedup == pytest.approx(2.5 / (1 + th.PROMISE_RUN_NOISE))
    assert "ColorJitter" in found.detail and "RandomRotation" in found.detail


def test_a_measured_steady_state_gain_is_promised_at_the_low_edge_of_its_runs_noise() -> None:
    """2.5x between a real run whose throughput moved ±12% and a no-aug run that moved ±8%: what a
    user can count on is 2.5x over 1.2."""
    real, no_aug = (dataclasses.replace(s, throughput_spread=x) for s, x in ((AUG.real, 0.12), (AUG.no_aug, 0.08)))
    noisy = dataclasses.replace(AUG, real=real, no_aug=no_aug)
    found = rec.cheaper_augmentation(noisy, decide(noisy))
    assert found is not None and found.expected_speedup == pytest.approx(2.5 / 1.2)
    assert "told apart to ±20%" in found.detail


def test_augmentation_rule_silent_when_no_aug_was_not_faster() -> None:
    f = facts(b.summary(wait=0.6), b.summary("synthetic", throughput=400.0), b.summary("no-aug", throughput=104.0))
    assert rec.cheaper_augmentation(f, decide(f)) is None


def test_storage_rule_only_for_io() -> None:
    assert "faster-storage" in ids(IO)
    assert "faster-storage" not in ids(CPU_IDLE_CORES)


def test_compute_bound_says_input_will_not_help() -> None:
    assert ids(COMPUTE) == ["step-is-the-limit"]
    found = rec.step_is_the_limit(COMPUTE, decide(COMPUTE))
    assert found is not None and found.measured is True
    assert found.expected_speedup == pytest.approx(1.0)


def test_input_rules_silent_when_compute_bound() -> None:
    v = decide(COMPUTE)
    assert v.bottleneck is Bottleneck.COMPUTE
    for rule in (rec.more_workers, rec.cheaper_augmentation, rec.cheaper_samples, rec.hide_storage_latency):
        assert rule(COMPUTE, v) is None


@pytest.mark.parametrize("case", [CPU_IDLE_CORES, CPU_SATURATED, AUG, IO, COMPUTE])
def test_expected_gains_never_exceed_the_ceiling(case: Facts) -> None:
    v = decide(case)
    assert v.speedup_ceiling is not None
    for r in b.recommended(case, v):
        assert r.expected_speedup is None or 1.0 <= r.expected_speedup <= v.speedup_ceiling


def test_without_a_ceiling_gains_are_unknown() -> None:
    f = facts(b.summary(wait=0.5, busy=0.9, system=0.4))
    for r in b.recommended(f, decide(f)):
        assert r.expected_speedup is None


def test_measured_recommendations_come_first() -> None:
    found = b.recommended(AUG, decide(AUG))
    assert found[0].measured is True


def test_moving_main_process_loading_to_workers_is_estimated_from_the_wait() -> None:
    # 100 batches/s with 40% waiting: a 10 ms step = 6 ms compute + 4 ms loading in the main thread.
    # With one worker loading beside the step, a step takes max(6, 4) = 6 ms: 10/6 = 1.66x.
    real = b.summary(wait=0.4, busy=0.95, system=0.3, workers=0, throughput=3200.0)
    f = facts(real, b.summary("synthetic", throughput=6400.0), workers=0, cores=2)
    found = rec.more_workers(f, decide(f))
    assert found is not None and "num_workers=1" in found.title
    assert found.expected_speedup == pytest.approx(10 / 6)


def test_no_workers_for_loading_cheaper_than_handing_batches_over() -> None:
    # 2,000 batches/s with 30% waiting: 0.15 ms of loading per batch, less than a worker handoff
    real = b.summary(wait=0.3, busy=0.95, system=0.3, workers=0, throughput=64000.0)
    f = facts(real, b.summary("synthetic", throughput=90000.0), workers=0, cores=2)
    assert rec.more_workers(f, decide(f)) is None


def swept(f: Facts, *, recommended: int, speedup: float, significant: bool, cost: int | None = None) -> Facts:
    result = b.sweep_result(
        best_workers=recommended,
        recommended_workers=recommended if significant else 2,
        speedup=speedup,
        significant=significant,
        memory_cost_bytes=cost,
        diminishing_at=recommended,
        reason="IO latency hidden: ...",
    )
    return dataclasses.replace(f, sweep=result)


def test_a_sweep_that_measured_a_faster_setting_is_the_first_recommendation() -> None:
    f = swept(IO, recommended=16, speedup=5.0, significant=True, cost=2**30)
    found = b.recommended(f, decide(f))
    first = found[0]
    assert first.id == "increase-num-workers"
    assert first.measured
    assert "num_workers=16, persistent_workers=True" in first.detail
    assert "1.0 GiB more memory" in first.detail
    assert first.expected_speedup == pytest.approx(5.0 / 1.06)  # at the low edge of the sweep's ±6%
    assert "increase-num-workers" not in [r.id for r in found[1:]]  # the estimate stays silent


def test_a_small_gain_for_much_more_memory_is_said_as_a_trade_and_not_put_first() -> None:
    # sweep-workers measured 8 workers 1.09x the script's own, for 3.9 GiB more memory
    # beside a cached run (every sample in memory) that measured 1.5x
    cached = dataclasses.replace(IO, cached=b.summary("cached", throughput=150.0))
    f = swept(cached, recommended=8, speedup=1.09, significant=True, cost=int(3.9 * 2**30))
    found = b.recommended(f, decide(f))
    assert [r.id for r in found][:2] == ["faster-storage", "increase-num-workers"], [r.id for r in found]
    assert found[1].title == "Use num_workers=8 (now 2), for 3.9 GiB more memory"
    big = swept(cached, recommended=8, speedup=2.5, significant=True, cost=int(3.9 * 2**30))
    assert b.recommended(big, decide(big))[0].id == "increase-num-workers"  # a large gain still leads


def test_storage_a_cached_run_gains_nothing_beyond_its_noise_from_is_evidence_not_advice() -> None:
    # every sample in memory measured 1.15x: inside the two runs' ±20%, so no faster storage to advise
    flat = dataclasses.replace(IO, cached=b.summary("cached", throughput=115.0))
    advised, said = rec.advise(flat, decide(flat))
    assert "faster-storage" not in {r.id for r in advised}
    assert len(said) == 1 and said[0].sentence.startswith("Measured, not advised: read from faster storage")
    assert "(0.96x, no gain beyond the noise" in said[0].sentence
    real = dataclasses.replace(IO, cached=b.summary("cached", throughput=150.0))  # 1.5x: beyond it
    advised, said = rec.advise(real, decide(real))
    assert next(r for r in advised if r.id == "faster-storage").expected_speedup == pytest.approx(1.5 / 1.2)
    assert said == ()


def test_a_measured_worker_gain_is_promised_at_the_low_edge_of_the_sweeps_noise() -> None:
    # 28 workers measured 5.59x the script's own, with the settings' runs told apart to ±64%:
    # what training can count on is what that noise leaves of it
    f = swept(IO, recommended=28, speedup=5.59, significant=True)
    f = dataclasses.replace(f, sweep=dataclasses.replace(f.sweep, noise=0.64))
    found = rec.measured_workers(f, decide(f))
    assert found is not None and found.expected_speedup == pytest.approx(5.59 / 1.64)
    # one figure, the headline's, in the detail too
    assert "Use num_workers=28: 3.41x the script's own setting as measured, less its runs' noise (±64%)" in found.detail
    assert "5.59" not in found.detail


def test_a_measured_worker_gain_is_capped_by_the_ceiling() -> None:
    f = swept(CPU_IDLE_CORES, recommended=4, speedup=4.0, significant=True)
    found = rec.measured_workers(f, decide(f))
    assert found is not None and found.expected_speedup == pytest.approx(3.0)
    # the detail gives the figure the headline gives, and why it is lower than the sweep's
    assert "3.77x the script's own setting as measured, less its runs' noise (±6%)." in found.detail
    assert "Held to the speedup ceiling, the gain given is 3.00x: free inputs (synthetic) trained" in found.detail
    below = swept(CPU_IDLE_CORES, recommended=4, speedup=2.0, significant=True)
    kept = rec.measured_workers(below, decide(below))
    assert kept is not None and kept.expected_speedup == pytest.approx(2.0 / 1.06)
    assert "Held to the speedup ceiling" not in kept.detail


def test_fewer_workers_measured_faster_is_a_reduce_recommendation() -> None:
    f = swept(CPU_SATURATED, recommended=0, speedup=1.3, significant=True, cost=-(2**29))
    found = rec.measured_workers(f, decide(f))
    assert found is not None
    assert found.id == "reduce-num-workers"
    assert "num_workers=0)" in found.detail and "persistent_workers" not in found.detail
    assert "512 MiB less memory" in found.detail


def test_a_sweep_within_noise_recommends_no_worker_change() -> None:
    f = swept(CPU_IDLE_CORES, recommended=4, speedup=1.03, significant=False)
    found = ids(f)
    assert "increase-num-workers" not in found and "reduce-num-workers" not in found


def test_saturated_cores_without_reads_get_no_advice_that_contradicts_the_notes() -> None:
    # sleeping loaders on full cores, nothing read, the step slowed beside them: neither more
    # workers nor faster storage, which the "more workers cannot help" note would contradict
    saturated = facts(
        b.summary(wait=0.12, busy=0.15, system=0.97, compute_ms=17.0),
        b.summary("synthetic", throughput=180.0, compute_ms=10.0),
        cores=2,
    )
    found = ids(saturated)
    assert "increase-num-workers" not in found
    assert "faster-storage" not in found
    assert "cores-saturated" in found


def test_what_a_whole_epoch_costs_besides_its_steps_stays_when_the_real_run_crossed_one() -> None:
    """An epoch of the real run took 17 s: 10.24 s of steps at the steady rate and 6.76 s besides
    (a 5 s start-up, then the drain and whatever the script does between epochs). Free augmentation
    leaves all 6.76 s; persistent workers save the start-up alone."""
    loader = dataclasses.replace(AUG.loader, dataset_len=1024)
    crossed = dataclasses.replace(AUG, loader=loader, epoch_startup_s=(5.0,), epoch_walls=((17.0, 32),))
    assert crossed.epoch_overhead_s == pytest.approx(6.76)
    found = rec.cheaper_augmentation(crossed, decide(crossed))
    whole = (6.76 + 10.24) / (6.76 + 10.24 / 2.5)
    assert found is not None and found.expected_speedup == pytest.approx(whole / (1 + th.PROMISE_RUN_NOISE))
    assert "each epoch took 6.76 s besides its 10.24 s of steps" in found.detail
    kept = rec.persistent_workers(crossed, decide(crossed))
    assert kept is not None and kept.expected_speedup == pytest.approx(17.0 / (10.24 + 1.76))


def test_workers_kept_between_epochs_are_said_once_in_the_sweeps_setting_where_one_is_advised() -> None:
    """A 5 s start-up every epoch would advise persistent_workers=True at the script's 2 workers; a
    sweep that measured 16 faster writes its change with persistent_workers=True: one change of the
    loader, not two that contradict each other on num_workers."""
    loader = dataclasses.replace(AUG.loader, dataset_len=1024)
    crossed = dataclasses.replace(AUG, loader=loader, epoch_startup_s=(5.0,), epoch_walls=((17.0, 32),))
    assert rec.persistent_workers(crossed, decide(crossed)) is not None
    more = swept(crossed, recommended=16, speedup=2.0, significant=True)
    found = [r.id for r in b.recommended(more, decide(more))]
    assert "increase-num-workers" in found and "persistent-workers" not in found
    kept = swept(crossed, recommended=2, speedup=1.0, significant=False)  # nothing beat the own setting
    assert "persistent-workers" in [r.id for r in b.recommended(kept, decide(kept))]
    none = swept(crossed, recommended=0, speedup=1.5, significant=True)  # no workers: nothing to keep
    assert "persistent-workers" not in [r.id for r in b.recommended(none, decide(none))]


def test_a_deeper_prefetch_is_not_advised_beside_a_sweeps_setting() -> None:
    """Spiky waits with idle workers advise prefetch_factor=4 at the script's 2 workers; a sweep that
    measured another setting faster changes num_workers itself, and prefetching at 2 workers would
    contradict it: the Hugging Face image-classification script was advised num_workers=0 (measured,
    1.47x) and, beside it, "num_workers=2, prefetch_factor=4"."""
    spiky = dataclasses.replace(
        AUG, real=dataclasses.replace(AUG.real, loader_busy_fraction=0.2), wait_ms_p50=1.3, wait_ms_p90=41.6
    )
    assert rec.larger_prefetch(spiky, decide(spiky)) is not None
    for workers in (0, 16):
        moved = swept(spiky, recommended=workers, speedup=1.5, significant=True)
        found = [r.id for r in b.recommended(moved, decide(moved))]
        assert "larger-prefetch-factor" not in found and found[0] in {"reduce-num-workers", "increase-num-workers"}
    kept = swept(spiky, recommended=2, speedup=1.0, significant=False)  # nothing beat the own setting
    assert "larger-prefetch-factor" in [r.id for r in b.recommended(kept, decide(kept))]


def test_an_epoch_has_as_many_steps_as_the_loader_says_when_a_batch_sampler_batches() -> None:
    """A loader prepared by accelerate batches through its batch sampler: DataLoader.batch_size is
    None, and len(loader) gives the epoch's 32 batches."""
    loader = dataclasses.replace(AUG.loader, batch_size=None, batches_per_epoch=32)
    sampled = dataclasses.replace(AUG, loader=loader, epoch_startup_s=(5.0,))
    assert sampled.epoch_s == pytest.approx(10.24)
    found = rec.cheaper_augmentation(sampled, decide(sampled))
    whole = (5 + 10.24) / (5 + 10.24 / 2.5)
    assert found is not None and found.expected_speedup == pytest.approx(whole / (1 + th.PROMISE_RUN_NOISE))


def test_no_more_workers_for_io_when_every_core_is_busy() -> None:
    io_saturated = facts(b.summary(wait=0.8, busy=0.1, system=0.97), b.summary("synthetic", throughput=900.0))
    assert decide(io_saturated).bottleneck is Bottleneck.IO  # the loop waits while the loaders sleep
    assert "increase-num-workers" not in ids(io_saturated)


def test_a_steady_state_gain_is_promised_over_whole_epochs_when_workers_start_every_epoch() -> None:
    """Augmentation made free speeds the epoch's steps 2.5x, but the workers' start-up at every epoch
    (5 s against 10.24 s of steps) stays: training gains what the whole epoch does."""
    short = dataclasses.replace(AUG, loader=dataclasses.replace(AUG.loader, dataset_len=1024), epoch_startup_s=(5.0,))
    found = rec.cheaper_augmentation(short, decide(short))
    whole = (5 + 10.24) / (5 + 10.24 / 2.5)
    assert found is not None and found.expected_speedup == pytest.approx(whole / (1 + th.PROMISE_RUN_NOISE))
    assert "start again every epoch (5.00 s against 10.24 s of steps)" in found.detail
    steady = rec.cheaper_augmentation(AUG, decide(AUG))  # no start-up measured: the steady gain
    assert steady is not None and steady.expected_speedup == pytest.approx(2.5 / (1 + th.PROMISE_RUN_NOISE))
