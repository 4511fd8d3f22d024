"""The verdict rules on hand-built facts: one test per rule, each able to fail."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from fastload_cli.analyzer import analyze
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.noise import between_runs
from fastload_cli.analyzer.pooled import pooled
from fastload_cli.analyzer.verdict import Facts, broken_comparison, decide
from fastload_cli.records import BatchInfo, Bottleneck, Breakdown, FindingKind, IteratorInfo, SweepResult
from tests.unit import builders as b


def facts(real, synthetic=None, no_aug=None, workers=2, pin=False, cuda=False) -> Facts:
    return Facts(
        real=real,
        synthetic=synthetic,
        no_aug=no_aug,
        loader=b.loader(num_workers=workers, pin=pin),
        cpu_count=2,
        cuda_in_use=cuda,
    )


def test_augmentation_that_costs_a_lot_is_the_cause() -> None:
    v = decide(
        facts(b.summary(wait=0.6), b.summary("synthetic", throughput=400.0), b.summary("no-aug", throughput=250.0))
    )
    assert v.bottleneck is Bottleneck.CPU
    assert "augmentation" in v.label
    assert v.confidence == pytest.approx(th.CONFIDENCE_STRONG)
    assert v.speedup_ceiling == pytest.approx(4.0)
    assert v.augmentation_speedup == pytest.approx(2.5)


def test_busy_loaders_mean_cpu_bound() -> None:
    v = decide(facts(b.summary(wait=0.5, busy=0.9), b.summary("synthetic", throughput=300.0)))
    assert v.bottleneck is Bottleneck.CPU
    assert "decode/collate" in v.label


def test_sleeping_loaders_mean_io_bound() -> None:
    v = decide(facts(b.summary(wait=0.8, busy=0.1, system=0.2), b.summary("synthetic", throughput=900.0)))
    assert v.bottleneck is Bottleneck.IO
    assert v.confidence == pytest.approx(th.CONFIDENCE_STRONG)


def test_busy_main_process_without_workers_is_cpu_in_the_main_process() -> None:
    v = decide(facts(b.summary(wait=0.5, busy=0.97, workers=0), b.summary("synthetic", throughput=200.0), workers=0))
    assert v.bottleneck is Bottleneck.CPU
    assert "main process" in v.label


def test_augmentation_that_costs_little_is_not_the_cause() -> None:
    v = decide(
        facts(
            b.summary(wait=0.7, busy=0.1, system=0.2),
            b.summary("synthetic", throughput=500.0),
            b.summary("no-aug", throughput=105.0),
        )
    )
    assert v.bottleneck is Bottleneck.IO
    assert any("not the main cost" in line for line in v.evidence)


def test_small_wait_and_no_ceiling_is_compute_bound() -> None:
    v = decide(facts(b.summary(wait=0.01), b.summary("synthetic", throughput=103.0)))
    assert v.bottleneck is Bottleneck.COMPUTE
    assert v.confidence == pytest.approx(th.CONFIDENCE_STRONG)


def test_an_unexplained_ceiling_without_concurrent_loading_is_noise() -> None:
    # num_workers=0: nothing loads while the step runs, so a 1.25x ceiling with no wait is noise
    real = b.summary(wait=0.004, compute_ms=12.5, workers=0)
    synthetic = b.summary("synthetic", throughput=125.0, wait=0.004, compute_ms=10.0, workers=0)
    v = decide(facts(real, synthetic, workers=0))
    assert v.bottleneck is Bottleneck.COMPUTE
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)
    assert any("noise" in line for line in v.evidence)


def test_contention_explains_a_ceiling_with_little_wait() -> None:
    # CPU-only training: workers slow the step itself (79 ms vs 21 ms) though the loop rarely waits
    real = b.summary(wait=0.05, compute_ms=79.0, busy=0.95, system=1.0)
    synthetic = b.summary("synthetic", throughput=380.0, compute_ms=21.0)
    v = decide(facts(real, synthetic))
    assert v.bottleneck is Bottleneck.CPU
    assert v.confidence == pytest.approx(th.CONFIDENCE_STRONG)
    assert any("79 ms" in line and "21 ms" in line for line in v.evidence)


def contended(ceiling: float) -> Facts:
    """Hugging Face's image-classification example's shape: the loop waits 3% of the time, and the
    step runs 1.4x slower beside two workers than with free inputs (68 ms against 48 ms)."""
    real = b.summary(wait=0.03, compute_ms=68.0, busy=0.3, system=0.98)
    return facts(real, b.summary("synthetic", throughput=100.0 * ceiling, compute_ms=48.0))


def test_a_measured_contention_under_the_line_is_partly_input_bound_with_its_cause_known() -> None:
    v = decide(contended(1.37))
    assert v.bottleneck is Bottleneck.CPU and v.label.startswith("Partly input-bound")
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)  # how loading costs the step is measured
    assert any("68 ms" in line and "48 ms" in line for line in v.evidence)
    assert not any("neither signal is clear-cut" in line for line in v.evidence)


def test_confidence_does_not_drop_as_a_contended_ceiling_crosses_the_line() -> None:
    below, above = decide(contended(1.45)), decide(contended(1.53))
    assert not above.label.startswith("Partly") and above.confidence >= below.confidence
    assert decide(contended(3.0)).confidence == pytest.approx(th.CONFIDENCE_STRONG)


def slowed(compute_ms: float, spread: float) -> Facts:
    """The loop waits 6% of the time and the step takes ``compute_ms`` beside two workers against
    50 ms with free inputs; each run's throughput spread ``spread``."""
    real = dataclasses.replace(b.summary(wait=0.06, compute_ms=compute_ms, busy=0.3), throughput_spread=spread)
    ceiling = compute_ms / 0.94 / 50.0
    synthetic = b.summary("synthetic", throughput=100.0 * ceiling, compute_ms=50.0, wait=0.0)
    return facts(real, dataclasses.replace(synthetic, throughput_spread=spread))


def test_a_step_slowed_beside_the_loaders_beyond_the_noise_is_not_called_noise() -> None:
    # 1.27x slower with the runs within ±5% each: under 1.3x, but no run-to-run noise
    v = decide(slowed(63.5, 0.05))
    assert v.bottleneck is Bottleneck.CPU and v.label.startswith("Partly input-bound")
    assert not any("run-to-run noise" in line for line in v.evidence)
    assert any("63.5 ms" in line or "64 ms" in line for line in v.evidence)
    # the same slowdown from runs that spread ±15% each is inside their noise
    noisy = decide(slowed(63.5, 0.15))
    assert noisy.bottleneck is Bottleneck.COMPUTE and any("run-to-run noise" in line for line in noisy.evidence)


def starved(main: float, synthetic_main: float, system: float = 0.997, step_ms: float = 58.5) -> Facts:
    """Hugging Face's image-classification example on a noisier hour: the step ran 1.17x slower
    (``step_ms`` against 50 ms) beside two workers than with free inputs, inside runs that spread
    ±15% each; the training process had ``main`` percent of a CPU beside them, ``synthetic_main``
    with free inputs."""
    facts = slowed(step_ms, 0.15)
    assert facts.real is not None and facts.synthetic is not None
    real = dataclasses.replace(facts.real, main_cpu_percent=main, system_cpu_busy_fraction=system)
    synthetic = dataclasses.replace(facts.synthetic, main_cpu_percent=synthetic_main, system_cpu_busy_fraction=1.0)
    return dataclasses.replace(facts, real=real, synthetic=synthetic)


def test_a_step_that_gets_its_cpu_back_with_free_inputs_on_full_cores_is_contended_inside_its_noise() -> None:
    v = decide(starved(162.0, 196.0))
    assert v.bottleneck is Bottleneck.CPU and v.label.startswith("Partly input-bound")
    (line,) = v.of(FindingKind.CONTENTION)
    assert "162%" in line.sentence and "196%" in line.sentence and "1.21x" in line.sentence
    assert not any("run-to-run noise" in text for text in v.evidence)
    # a step slowed beyond its noise says it alone: the CPU shares add nothing to the line
    slowed_too = contended(1.37)
    assert slowed_too.real is not None and slowed_too.synthetic is not None
    both = dataclasses.replace(
        slowed_too,
        real=dataclasses.replace(slowed_too.real, main_cpu_percent=88.0),
        synthetic=dataclasses.replace(slowed_too.synthetic, main_cpu_percent=197.0),
    )
    assert both.step_starved and both.step_slowed
    (alone,) = decide(both).of(FindingKind.CONTENTION)
    assert "68 ms" in alone.sentence and "88%" not in alone.sentence
    # the CPU it got back is inside the line, or the cores had room: the step's noise decides
    for facts in (starved(185.0, 196.0), starved(162.0, 196.0, system=0.6)):
        rest = decide(facts)
        assert rest.bottleneck is Bottleneck.COMPUTE and not rest.of(FindingKind.CONTENTION)


def test_a_low_ceiling_the_cpu_shares_contradict_is_compute_bound_with_less_confidence() -> None:
    v = decide(starved(162.0, 196.0, step_ms=53.0))  # 1.13x: under the line, the step 1.06x slower
    assert v.bottleneck is Bottleneck.COMPUTE and not v.of(FindingKind.CONTENTION)
    assert v.confidence < th.CONFIDENCE_STRONG


def measured_twice(rates: list[tuple[float, float, float, float, int, int]]) -> Facts:
    """Hugging Face's image-classification shape with real and synthetic measured again: for each
    pair, the two runs' rates, steps (ms) and batches; the training process had 164% of a CPU beside
    two workers and 196% with free inputs, every core busy, as in each of its runs."""
    pairs = []
    for real_rate, synthetic_rate, real_ms, synthetic_ms, real_batches, synthetic_batches in rates:
        real = b.summary(
            throughput=real_rate, wait=0.02, compute_ms=real_ms, busy=0.25, system=0.99, batches=real_batches
        )
        synthetic = b.summary(
            "synthetic",
            throughput=synthetic_rate,
            wait=0.0,
            compute_ms=synthetic_ms,
            system=1.0,
            batches=synthetic_batches,
        )
        pairs.append(
            (
                dataclasses.replace(real, main_cpu_percent=164.0, throughput_spread=0.09),
                dataclasses.replace(synthetic, main_cpu_percent=196.0, throughput_spread=0.08),
            )
        )
    found = facts(pooled([r for r, _ in pairs]), pooled([s for _, s in pairs]))
    return dataclasses.replace(found, pairs=tuple(pairs))


def test_a_pair_measured_again_on_a_faster_stretch_of_the_machine_is_read_pair_by_pair() -> None:
    # the first pair on a slow stretch of the machine (1.10x), the second on a fast one (1.32x)
    both = measured_twice([(216.0, 238.0, 145.0, 135.0, 23, 11), (333.0, 439.0, 87.0, 72.0, 28, 10)])
    assert both.ceiling == pytest.approx((238 / 216 * 439 / 333) ** 0.5)  # 1.21x, not the pooled 1.14x
    assert both.pair_ceilings == pytest.approx((238 / 216, 439 / 333))
    assert both.contention == pytest.approx((145 / 135 * 87 / 72) ** 0.5)
    # the pairs' own noise (±17% each, over two pairs), not the drift between them (±20% and ±30%)
    assert both.ceiling_noise == pytest.approx((0.17 + 0.17) / 2 / 2**0.5)
    assert both.ceiling_noise < between_runs(both.real, both.synthetic)
    v = decide(both)
    assert v.bottleneck is Bottleneck.CPU and v.label.startswith("Partly input-bound")
    (line,) = v.of(FindingKind.CEILING)
    assert "2 pairs of runs side by side, 1.10x, 1.32x" in line.sentence and "pooled" in line.sentence
    assert "pair by pair" in v.of(FindingKind.CONTENTION)[0].sentence
    # read as one pooled pair, the slow stretch's longer windows pull the ceiling under the line
    pooled_alone = dataclasses.replace(both, pairs=())
    assert pooled_alone.ceiling is not None and pooled_alone.ceiling < th.CEILING_COMPUTE_BOUND
    assert decide(pooled_alone).bottleneck is Bottleneck.COMPUTE


def test_a_ceiling_contradicted_by_the_wait_is_hedged() -> None:
    real = b.summary(wait=0.05, compute_ms=20.0, busy=0.95, workers=0)
    synthetic = b.summary("synthetic", throughput=200.0, compute_ms=20.0, workers=0)
    v = decide(facts(real, synthetic, workers=0))
    assert v.confidence == pytest.approx(th.CONFIDENCE_HEDGED)


def test_in_between_is_partly_input_bound_with_low_confidence() -> None:
    v = decide(facts(b.summary(wait=0.15, busy=0.9), b.summary("synthetic", throughput=130.0)))
    assert v.label.startswith("Partly input-bound")
    assert v.confidence <= th.CONFIDENCE_HEDGED


def test_all_cores_busy_is_said_with_its_number() -> None:
    v = decide(facts(b.summary(wait=0.5, busy=0.9, system=0.97), b.summary("synthetic", throughput=300.0)))
    assert any("more workers cannot help" in line and "97%" in line for line in v.evidence)


def test_without_synthetic_a_high_wait_still_decides_with_less_confidence() -> None:
    v = decide(facts(b.summary(wait=0.5, busy=0.9)))
    assert v.bottleneck is Bottleneck.CPU
    assert v.speedup_ceiling is None
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)


def test_unknown_loader_cpu_leaves_the_cause_inconclusive() -> None:
    v = decide(facts(b.summary(wait=0.5, busy=None), b.summary("synthetic", throughput=300.0)))
    assert v.bottleneck is Bottleneck.INCONCLUSIVE
    assert v.confidence < th.CONFIDENCE_STRONG


def test_no_measurements_is_inconclusive_never_none() -> None:
    v = decide(facts(b.summary(wait=None, throughput=None)), caveats=("the real run failed",))
    assert v.bottleneck is Bottleneck.INCONCLUSIVE
    assert v.caveats == ("the real run failed",)


def test_gpu_idle_with_free_inputs_is_host_bound() -> None:
    real = b.summary(wait=0.02, gpu=30.0)
    synthetic = b.summary("synthetic", throughput=102.0, gpu=35.0)
    assert decide(facts(real, synthetic, cuda=True)).bottleneck is Bottleneck.HOST


def test_gpu_busy_with_free_inputs_is_compute_bound() -> None:
    real = b.summary(wait=0.02, gpu=95.0)
    synthetic = b.summary("synthetic", throughput=102.0, gpu=97.0)
    v = decide(facts(real, synthetic, cuda=True))
    assert v.bottleneck is Bottleneck.COMPUTE
    assert "GPU" in v.label


@pytest.mark.parametrize(
    "case",
    [
        facts(b.summary(wait=0.6), b.summary("synthetic", throughput=400.0), b.summary("no-aug", throughput=250.0)),
        facts(b.summary(wait=0.8, busy=0.1, system=0.2), b.summary("synthetic", throughput=900.0)),
        facts(b.summary(wait=0.01), b.summary("synthetic", throughput=103.0)),
        facts(
            b.summary(wait=0.05, compute_ms=79.0, system=1.0), b.summary("synthetic", throughput=380.0, compute_ms=21.0)
        ),
    ],
)
def test_every_evidence_line_quotes_a_number(case: Facts) -> None:
    for line in decide(case).evidence:
        assert re.search(r"\d", line), line


def test_io_evidence_quotes_storage_reads_only_when_there_were_some() -> None:
    def io_verdict(read_rate: float):
        real = dataclasses.replace(b.summary(wait=0.8, busy=0.1, system=0.2), read_bytes_per_s=read_rate)
        return decide(facts(real, b.summary("synthetic", throughput=900.0)))

    assert sum("25.0 MB/s" in line for line in io_verdict(25e6).evidence) == 1  # quoted once, never repeated
    assert not any("MB/s" in line for line in io_verdict(200.0).evidence)


def test_a_disturbed_comparison_lowers_the_confidence() -> None:
    quiet = facts(b.summary(wait=0.01), b.summary("synthetic", throughput=103.0))
    noisy = dataclasses.replace(quiet, disturbed=True)
    assert decide(noisy).bottleneck is decide(quiet).bottleneck
    assert decide(noisy).confidence == round(th.CONFIDENCE_STRONG * th.CONFIDENCE_DISTURBED, 2)


def test_iowait_decides_io_when_the_loaders_cpu_is_unknown() -> None:
    real = dataclasses.replace(b.summary(wait=0.6, busy=None), iowait_fraction=0.12)
    v = decide(facts(real, b.summary("synthetic", throughput=500.0)))
    assert v.bottleneck is Bottleneck.IO
    assert any("12%" in line and "iowait" in line for line in v.evidence)
    below = dataclasses.replace(real, iowait_fraction=th.IOWAIT_NOTABLE / 2)
    assert decide(facts(below, b.summary("synthetic", throughput=500.0))).bottleneck is Bottleneck.INCONCLUSIVE


def test_the_ceiling_is_read_in_a_paragraph() -> None:
    from fastload_cli.analyzer.reading import read_ceiling

    bound = Facts(
        real=b.summary(throughput=100.0, wait=0.6),
        synthetic=b.summary("synthetic", throughput=420.0),
        no_aug=b.summary("no-aug", throughput=260.0),
        loader=b.loader(),
        cpu_count=2,
    )
    text = read_ceiling(bound, decide(bound))
    assert text.startswith("A free input pipeline would make training 4.2x faster")
    assert "the input pipeline is the bottleneck" in text
    assert "augmentation accounts for about 50% of that gap" in text  # (2.6 - 1) / (4.2 - 1)

    flat = Facts(real=b.summary(wait=0.01), synthetic=b.summary("synthetic", throughput=103.0), loader=b.loader())
    assert read_ceiling(flat, decide(flat)).startswith("Within noise")
    assert "faster loading will not help" in read_ceiling(flat, decide(flat))

    unknown = Facts(real=b.summary(), loader=b.loader())
    assert "could not be measured" in read_ceiling(unknown, decide(unknown))


def restarting(startups: tuple[float, ...], busy: float | None, *, persistent: bool = False) -> Facts:
    """Workers started again every epoch: an epoch of steps takes 100 s (10,000 samples at 100/s)."""
    return dataclasses.replace(
        facts(b.summary(wait=0.05, busy=0.9), b.summary("synthetic", throughput=105.0)),
        loader=dataclasses.replace(b.loader(), persistent_workers=persistent),
        epoch_startup_s=startups,
        startup_busy=busy,
    )


def test_workers_started_again_every_epoch_decide_the_verdict_before_the_steady_state() -> None:
    v = decide(restarting((40.0, 42.0), busy=0.02))
    assert v.bottleneck is Bottleneck.IO
    assert "start again every epoch" in v.label
    assert v.confidence == pytest.approx(th.CONFIDENCE_STRONG)
    assert any("42.00 s" in line and "30%" in line for line in v.evidence)  # 42 / (42 + 100)


def test_workers_started_again_every_epoch_decide_beside_a_broken_comparison() -> None:
    # the synthetic run 0.72x the real one on a quiet machine (the step's own pace moved between
    # the runs): the ceiling means nothing, and the start-up verdict never rested on it
    found = restarting((1.5, 1.6), busy=0.0)
    assert found.real is not None
    real = dataclasses.replace(found.real, throughput_samples_per_s=1193.0, throughput_spread=0.15)
    synthetic = dataclasses.replace(b.summary("synthetic", throughput=855.0), throughput_spread=0.16)
    found = dataclasses.replace(found, real=real, synthetic=synthetic, epoch_startup_s=(40.0, 42.0))
    assert broken_comparison(found) is not None
    v = decide(found)
    assert v.bottleneck is Bottleneck.IO and "start again every epoch" in v.label
    assert v.speedup_ceiling is None and any("0.72x" in c and "broken" in c for c in v.caveats)
    # without start-ups that decide, the broken comparison leaves nothing to read
    steady = dataclasses.replace(found, epoch_startup_s=(1.5, 1.6))
    assert decide(steady).bottleneck is Bottleneck.INCONCLUSIVE


def gpu_paced(*, persistent: bool = False, steady: float = 1.41) -> Facts:
    """A GPU host's shape: 20-batch epochs (2 s of steps) whose two workers start again every epoch
    (0.16 s before the first batch) and fetch with a fixed latency, the loop waiting 27% of the time."""
    loader = dataclasses.replace(b.loader(), dataset_len=20 * 32, persistent_workers=persistent)
    return dataclasses.replace(
        facts(
            b.summary(throughput=320.0, wait=0.27, busy=0.05, system=0.2),
            b.summary("synthetic", throughput=320 * steady),
        ),
        loader=loader,
        epoch_startup_s=(0.16,),
    )


def test_workers_started_again_every_epoch_count_in_the_ceiling_over_whole_epochs() -> None:
    # Plain runs of such a script: 2.13 s an epoch as written, 1.30 s with one batch replayed and
    # no loader (1.64x), 2.00 s of it steps at the steady rate: free inputs also save the start-up.
    v = decide(gpu_paced())
    assert v.speedup_ceiling == pytest.approx(1.41 * (0.16 + 2.0) / 2.0)
    assert v.bottleneck is Bottleneck.IO and not v.label.startswith("Partly")
    line = next(x for x in v.evidence if x.startswith("Replaying one cached batch"))
    assert "1.41x over the steps; 1.52x over whole epochs" in line and "0.16 s" in line and "2.00 s of steps" in line
    # persistent workers start once: the steady ratio is the ceiling, in between the lines
    kept = decide(gpu_paced(persistent=True))
    assert kept.speedup_ceiling == pytest.approx(1.41) and kept.label.startswith("Partly")
    assert not any("whole epochs" in x for x in kept.evidence)
    # a free-input run slower than the real one stays a broken comparison, whatever the start-up adds
    assert broken_comparison(gpu_paced(steady=0.6)) is not None


def test_busy_workers_during_start_up_make_it_cpu_work() -> None:
    v = decide(restarting((40.0, 42.0), busy=0.9))
    assert v.bottleneck is Bottleneck.CPU
    assert any("90%" in line for line in v.evidence)


def test_start_up_cpu_unknown_leaves_its_kind_open() -> None:
    v = decide(restarting((40.0, 42.0), busy=None))
    assert v.bottleneck is Bottleneck.INCONCLUSIVE
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)


@pytest.mark.parametrize(
    "case",
    [
        restarting((40.0,), busy=0.02),  # one epoch does not show that it recurs
        restarting((40.0, 42.0), busy=0.02, persistent=True),  # kept alive: paid once
        restarting((10.0, 12.0), busy=0.02),  # 11% of the time
    ],
)
def test_start_up_that_is_paid_once_or_small_leaves_the_steady_state_verdict(case: Facts) -> None:
    v = decide(case)
    assert "start again" not in v.label
    assert v.bottleneck is Bottleneck.COMPUTE


def test_a_high_wait_with_an_in_between_ceiling_is_hedged() -> None:
    # Loading (24 ms a batch) and the step (20 ms) cost about the same: the loop waits 21%,
    # and a free input pipeline gains only 1.2x.
    v = decide(facts(b.summary(wait=0.21, busy=0.1, system=0.5), b.summary("synthetic", throughput=120.0)))
    assert v.label.startswith("Partly input-bound")
    assert v.confidence == pytest.approx(th.CONFIDENCE_HEDGED)
    assert any("1.20x" in line for line in v.evidence)


def on_tensor_dataset(real, synthetic) -> Facts:
    """A TensorDataset loaded by 4 workers: its batches cost less to build than to hand over."""
    return dataclasses.replace(
        facts(real, synthetic), loader=dataclasses.replace(b.loader(num_workers=4), dataset_type="TensorDataset")
    )


def test_idle_workers_handing_over_in_memory_batches_are_overhead_not_io() -> None:
    f = on_tensor_dataset(
        b.summary(wait=0.13, busy=0.09, system=1.0, compute_ms=20.0),
        b.summary("synthetic", throughput=157.0, compute_ms=14.0),
    )
    v = decide(f)
    assert v.bottleneck is Bottleneck.CPU
    assert "handing batches over" in v.label
    assert any("TensorDataset" in line and "9%" in line for line in v.evidence)


def test_a_batch_the_breakdown_timed_under_the_handoff_cost_is_cheap() -> None:
    def timed(ms_per_sample: float) -> Facts:
        breakdown = Breakdown(loader_id=1, items=64, threads=1, ms_per_sample=ms_per_sample, steps=())
        return dataclasses.replace(facts(b.summary(wait=0.3, busy=0.1)), breakdown=breakdown)

    cheap = timed(0.01).cheap_batches  # 32 samples a batch: 0.32 ms
    assert cheap is not None and "0.32 ms" in cheap
    assert timed(1.0).cheap_batches is None
    assert decide(timed(0.01)).bottleneck is Bottleneck.CPU
    assert decide(timed(1.0)).bottleneck is Bottleneck.IO


def test_saturated_cores_are_not_called_only_busy() -> None:
    v = decide(facts(b.summary(wait=0.6, busy=0.1, system=0.97), b.summary("synthetic", throughput=300.0)))
    assert v.bottleneck is Bottleneck.IO
    assert not any("only 97%" in line for line in v.evidence)


def test_a_long_wait_outweighs_an_in_between_ceiling() -> None:
    # a 49% wait implies a ceiling near 2x; a synthetic run that came out at 1.3x does not hedge it
    v = decide(facts(b.summary(wait=0.49, busy=0.97, workers=0), b.summary("synthetic", throughput=130.0), workers=0))
    assert not v.label.startswith("Partly")
    assert v.bottleneck is Bottleneck.CPU
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)


def swept(speedup: float) -> SweepResult:
    return b.sweep_result(
        current_workers=4, recommended_workers=0, speedup=speedup, noise=0.1, significant=True, reason="cores saturated"
    )


def test_workers_handing_over_cheap_batches_cost_the_step_and_a_sweep_confirms_it() -> None:
    # in-memory tensors on 4 workers: the loop waits 9%, the ceiling is 1.31x, the step slowed 1.2x
    cheap = on_tensor_dataset(
        b.summary(wait=0.09, busy=0.08, system=1.0, compute_ms=12.0),
        b.summary("synthetic", throughput=131.0, compute_ms=10.0),
    )
    v = decide(cheap)
    assert (
        v.bottleneck is Bottleneck.CPU
        and v.label == "Partly input-bound: input pipeline overhead: handing batches over from workers"
    )
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)  # the cause is structural, not inferred
    confirmed = decide(dataclasses.replace(cheap, sweep=swept(1.41)))
    assert confirmed.bottleneck is Bottleneck.CPU and not confirmed.label.startswith("Partly")
    assert confirmed.confidence == pytest.approx(th.CONFIDENCE_STRONG)
    assert decide(dataclasses.replace(cheap, sweep=swept(1.17))).label.startswith("Partly")


def test_a_sweep_that_measured_a_faster_loader_hedges_a_wait_and_a_ceiling_that_both_say_compute() -> None:
    compute = facts(b.summary(wait=0.02), b.summary("synthetic", throughput=104.0))
    assert decide(compute).bottleneck is Bottleneck.COMPUTE
    v = decide(dataclasses.replace(compute, sweep=swept(1.5)))
    assert v.bottleneck is not Bottleneck.COMPUTE and v.label.startswith("Partly input-bound")
    assert v.confidence <= th.CONFIDENCE_HEDGED  # the measurements disagree and nothing says why
    line = next(x for x in v.findings if x.values.get("sweep_speedup") is not None)
    assert "num_workers=0 ran 1.50x as fast" in line.sentence and "resolved 1.04x" in line.sentence
    # a gain under the line between compute and partly input-bound leaves the verdict as it was
    assert decide(dataclasses.replace(compute, sweep=swept(1.12))).bottleneck is Bottleneck.COMPUTE
    not_significant = dataclasses.replace(swept(1.5), significant=False)
    assert decide(dataclasses.replace(compute, sweep=not_significant)).bottleneck is Bottleneck.COMPUTE


def test_workers_handing_over_cheap_batches_that_a_sweep_measured_costly_are_partly_input_bound() -> None:
    # the in-memory case on a noisy run: 7% wait, a 1.04x ceiling, and num_workers=0 measured 1.25x
    cheap = on_tensor_dataset(b.summary(wait=0.07, busy=0.05, system=1.0), b.summary("synthetic", throughput=104.0))
    assert decide(cheap).bottleneck is Bottleneck.COMPUTE
    v = decide(dataclasses.replace(cheap, sweep=swept(1.25)))
    assert v.bottleneck is Bottleneck.CPU
    assert v.label == "Partly input-bound: input pipeline overhead: handing batches over from workers"
    assert v.confidence == pytest.approx(th.CONFIDENCE_ONE_SIGNAL)  # the loader's structure names the cause


def test_busy_workers_whose_cpu_goes_to_the_kernel_while_reading_are_io_bound() -> None:
    def reading(kernel: float, read_rate: float) -> Facts:
        real = dataclasses.replace(
            b.summary(wait=0.6, busy=0.7, system=0.9), loader_kernel_fraction=kernel, read_bytes_per_s=read_rate
        )
        return facts(real, b.summary("synthetic", throughput=700.0))

    v = decide(reading(0.89, 7.8e8))
    assert v.bottleneck is Bottleneck.IO and "storage reads" in v.label
    assert any("89%" in line and "780 MB/s" in line for line in v.evidence)
    assert sum("MB/s" in line for line in v.evidence) == 1  # the rate is quoted once
    assert decide(reading(0.2, 7.8e8)).bottleneck is Bottleneck.CPU  # decoding in user space
    assert decide(reading(0.89, 0.0)).bottleneck is Bottleneck.CPU  # kernel work, but no reads


# A plain pipeline on two workers (FakeData, random crop and flip) beside a small CNN on 2 cores:
# the workers keep up and sleep on a full queue, the cores are full, nothing is read, and the step
# runs 1.7x slower beside the loaders than with free inputs.
SATURATED_NO_IO = facts(
    b.summary(wait=0.12, busy=0.15, system=0.97, compute_ms=17.0),
    b.summary("synthetic", throughput=180.0, compute_ms=10.0),
)


def test_sleeping_loaders_on_saturated_cores_without_reads_are_cpu_not_io() -> None:
    v = decide(SATURATED_NO_IO)
    assert v.bottleneck is Bottleneck.CPU
    assert "IO" not in v.label
    assert any("queue is full" in line for line in v.evidence)


def test_trivial_reads_on_saturated_cores_are_cpu_not_storage() -> None:
    # Hugging Face's image-classification example on 2 cores: the workers sleep on a full queue, the
    # cores are 98% busy, the run reads 1.4 MB/s (page faults, files opened now and then), yet the
    # workers were never found blocked on storage and there was no iowait
    trivial = dataclasses.replace(
        b.summary(wait=0.12, busy=0.2, system=0.98, compute_ms=15.0),
        read_bytes_per_s=1.4e6,
        loader_blocked_fraction=0.0,
        iowait_fraction=0.0,
    )
    v = decide(facts(trivial, b.summary("synthetic", throughput=154.0, compute_ms=10.0)))
    assert v.bottleneck is Bottleneck.CPU and "IO" not in v.label, v.label
    assert any("1.4 MB/s" in line and "queue is full" in line for line in v.evidence), v.evidence
    # the same reads with the workers blocked on them are storage
    for real in (
        dataclasses.replace(trivial, loader_blocked_fraction=0.4),
        dataclasses.replace(trivial, iowait_fraction=0.2),
        dataclasses.replace(trivial, loader_blocked_fraction=None),  # not measured: reads taken as they are
    ):
        assert decide(facts(real, b.summary("synthetic", throughput=154.0))).bottleneck is Bottleneck.IO, real


def test_reads_the_workers_spend_their_cpu_on_are_storage_even_on_saturated_cores() -> None:
    # cold reads from storage fast enough never to block (a VM's disk served from the host's cache):
    # 290 MB/s read, no worker found blocked, 3% iowait, the cores 89% busy; but 89% of what the
    # workers did on a CPU was the kernel's, copying the pages they read: reading is their work
    copying = dataclasses.replace(
        b.summary(wait=0.38, busy=0.4, system=0.89),
        read_bytes_per_s=2.9e8,
        loader_blocked_fraction=0.0,
        iowait_fraction=0.033,
        loader_kernel_fraction=0.89,
    )
    v = decide(facts(copying, b.summary("synthetic", throughput=400.0)))
    assert v.bottleneck is Bottleneck.IO and "storage reads" in v.label, v.label
    assert any("89% of that CPU time was in the kernel" in line for line in v.evidence), v.evidence
    # the same reads with the workers' CPU time their own (decoding) are no evidence: the cores are full
    decoding = dataclasses.replace(copying, loader_kernel_fraction=0.1)
    assert decide(facts(decoding, b.summary("synthetic", throughput=400.0))).bottleneck is Bottleneck.CPU


def test_loaders_blocked_on_storage_are_io_evidence_whatever_the_read_rate() -> None:
    blocked = dataclasses.replace(b.summary(wait=0.5, busy=0.2, system=0.4), loader_blocked_fraction=0.45)
    v = decide(facts(blocked, b.summary("synthetic", throughput=400.0)))
    assert v.bottleneck is Bottleneck.IO and any("blocked on storage in 45% of samples" in line for line in v.evidence)


def test_an_io_cause_needs_storage_evidence() -> None:
    # idle loaders, little wait, nothing read, nothing contended: the cause is not called storage
    quiet = facts(b.summary(wait=0.15, busy=0.1, system=0.5), b.summary("synthetic", throughput=160.0))
    assert decide(quiet).bottleneck is not Bottleneck.IO
    # the same loaders with reads from storage are IO
    read = dataclasses.replace(quiet.real, read_bytes_per_s=50e6)
    assert decide(dataclasses.replace(quiet, real=read)).bottleneck is Bottleneck.IO


def _at_ceiling(ceiling: float, spread: float = 0.04) -> Facts:
    real = dataclasses.replace(b.summary(wait=0.25, busy=0.9, system=0.6), throughput_spread=spread)
    synthetic = dataclasses.replace(b.summary("synthetic", throughput=100.0 * ceiling), throughput_spread=spread)
    return facts(real, synthetic)


def test_confidence_moves_smoothly_across_the_input_bound_line() -> None:
    # the same script measured 1.44x, then 1.55x: inside the runs' noise (±8%) of the 1.5x line
    low, high = decide(_at_ceiling(1.44)), decide(_at_ceiling(1.55))
    assert abs(high.confidence - low.confidence) <= 0.2
    ceilings = [1.30 + 0.01 * i for i in range(60)]
    confidences = [decide(_at_ceiling(c)).confidence for c in ceilings]
    steps = [later - earlier for earlier, later in itertools.pairwise(confidences)]
    assert max(abs(x) for x in steps) <= 0.06  # no hard edge anywhere on the way
    assert confidences[-1] == pytest.approx(th.CONFIDENCE_STRONG)  # far above the line: full confidence
    assert any("within the runs' noise" in line and "1.50x" in line for line in high.evidence)


def test_a_ceiling_far_from_every_line_says_nothing_about_noise() -> None:
    v = decide(_at_ceiling(3.0))
    assert not any("within the runs' noise" in line for line in v.evidence)
    assert v.confidence == pytest.approx(th.CONFIDENCE_STRONG)


def test_a_disturbed_comparison_with_a_ceiling_below_one_is_inconclusive() -> None:
    # other processes took the CPU during the synthetic run: it came out at 0.37x the real one
    broken = dataclasses.replace(facts(b.summary(wait=0.05), b.summary("synthetic", throughput=37.0)), disturbed=True)
    v = decide(broken)
    assert v.bottleneck is Bottleneck.INCONCLUSIVE
    assert v.speedup_ceiling is None  # never presented as measured
    assert any("broken" in line and "0.37x" in line for line in v.caveats)

    assert not any(r.expected_speedup is not None and r.expected_speedup < 1 for r in b.recommended(broken, v))


def test_a_ceiling_just_under_one_on_a_quiet_machine_stays_compute_bound() -> None:
    v = decide(facts(b.summary(wait=0.02), b.summary("synthetic", throughput=93.0)))
    assert v.bottleneck is Bottleneck.COMPUTE


def test_a_short_wait_alone_does_not_call_the_step_the_limit_when_workers_run_beside_it() -> None:
    # sweep-workers runs no synthetic: a 5% wait on 2 workers cannot tell CPU contention from compute
    v = decide(facts(b.summary(wait=0.05, busy=0.9)))
    assert v.bottleneck is Bottleneck.INCONCLUSIVE
    assert not v.label.startswith("Compute")
    assert any("synthetic" in line for line in v.caveats)
    # without workers nothing loads beside the step: the short wait does say the step is the limit
    alone = decide(facts(b.summary(wait=0.05, busy=0.9, workers=0), workers=0))
    assert alone.bottleneck is Bottleneck.COMPUTE
    # and a sweep that measured a much faster setting confirms the input pipeline without one
    swept_fast = dataclasses.replace(facts(b.summary(wait=0.05, busy=0.9)), sweep=swept(2.0))
    assert decide(swept_fast).bottleneck is Bottleneck.CPU


def test_a_loop_that_waits_while_the_loaders_sleep_is_io_even_when_the_step_slowed() -> None:
    # storage latency on a noisy 2-core machine: a 60% wait, sleeping workers, and a step that
    # happened to run 1.4x slower than with free inputs; nothing here is the CPU's doing
    latency = facts(
        b.summary(wait=0.6, busy=0.1, system=0.4, compute_ms=14.0),
        b.summary("synthetic", throughput=300.0, compute_ms=10.0),
    )
    assert latency.contended
    assert decide(latency).bottleneck is Bottleneck.IO


def test_a_loop_that_waits_while_the_loaders_sleep_is_not_latency_where_fewer_workers_trained_faster() -> None:
    # An FFT per sample on two workers, 2 cores, on a slower machine: the workers keep up and sleep
    # 70% of the time, yet the loop waits 25% and the step runs 5.5x slower than with free inputs.
    # Loading in the main process trained 1.8x faster: loaders waiting on latency would need company
    # to hide it, so the wait is handing batches over on contended cores, not storage.
    real = dataclasses.replace(
        b.summary(wait=0.25, busy=0.3, system=0.81, compute_ms=13.0), loader_blocked_fraction=0.0, iowait_fraction=0.0
    )
    free = b.summary("synthetic", throughput=900.0, compute_ms=2.0)
    fewer = b.sweep_result(current_workers=2, recommended_workers=0, speedup=1.8, noise=0.07, significant=True)
    v = decide(dataclasses.replace(facts(real, free), sweep=fewer))
    assert v.bottleneck is Bottleneck.CPU, v.label
    assert v.of(FindingKind.LOADERS_COMPETE), v.evidence
    assert not any("while the loaders slept" in line for line in v.evidence), v.evidence
    # the same runs where the sweep found nothing beyond its noise read as latency, as before
    unswept = dataclasses.replace(fewer, significant=False)
    assert decide(dataclasses.replace(facts(real, free), sweep=unswept)).bottleneck is Bottleneck.IO
    # and where more workers trained faster, the sleeping loaders' wait is latency
    more = dataclasses.replace(fewer, recommended_workers=6)
    assert decide(dataclasses.replace(facts(real, free), sweep=more)).bottleneck is Bottleneck.IO


def test_a_loop_that_waits_on_half_busy_loaders_is_cpu_not_latency() -> None:
    # An FFT per sample on two workers, 2 cores: the loop waits on the worker that owes the next
    # batch while it computes, and the other sleeps on its full queue, so the workers read about
    # half busy. The cores read 80% busy (just under saturated), nothing is read, no worker was
    # blocked on storage: the wait is CPU work, not storage or latency.
    half_busy = dataclasses.replace(
        b.summary(wait=0.36, busy=0.45, system=0.8), loader_blocked_fraction=0.0, iowait_fraction=0.0
    )
    v = decide(facts(half_busy, b.summary("synthetic", throughput=780.0)))
    assert v.bottleneck is Bottleneck.CPU, v.label
    assert not any("while the loaders slept" in line for line in v.evidence), v.evidence
    # the same wait with the loaders asleep is latency
    asleep = dataclasses.replace(half_busy, loader_busy_fraction=0.1)
    assert decide(facts(asleep, b.summary("synthetic", throughput=780.0))).bottleneck is Bottleneck.IO


# -- Copies to the GPU: the device-resident replay against the host-resident one -------------------


def on_gpu(real, synthetic, device, pinned=False, nbytes=201_326_592) -> Facts:
    """A CUDA run with both replays: the batch replayed from host memory and already on the GPU."""
    batch = BatchInfo(
        python_type="list", samples=64, bytes_per_batch=nbytes, bytes_per_sample=nbytes / 64, pinned=pinned, leaves=()
    )
    return dataclasses.replace(facts(real, synthetic, cuda=True, pin=pinned), device_replay=device, batch=batch)


def test_a_step_much_faster_with_its_batch_on_the_gpu_is_transfer_bound() -> None:
    real = b.summary(wait=0.03, compute_ms=40.0, gpu=20.0)
    host = b.summary("synthetic", throughput=104.0, wait=0.01, compute_ms=40.0, gpu=20.0)
    device = b.summary("synthetic-device", throughput=1000.0, wait=0.01, compute_ms=4.0, gpu=90.0)
    v = decide(on_gpu(real, host, device))
    assert v.bottleneck is Bottleneck.TRANSFER
    assert v.label.startswith("Input-bound: copying")
    assert v.speedup_ceiling == pytest.approx(10.0)  # what free inputs already on the GPU give
    (line,) = v.of(FindingKind.TRANSFER)
    assert "36.0 ms a step (10.00x)" in line.sentence and "pageable" in line.sentence
    assert line.values["copy_ms"] == pytest.approx(36.0)
    assert "5.6 GB/s" in line.sentence  # 201 MB in 36 ms
    assert "4.0 ms" in line.sentence  # 201 MB at 50 GB/s


def test_copies_that_cost_little_leave_the_verdict_to_the_other_signals() -> None:
    real = b.summary(wait=0.02, compute_ms=20.0, gpu=95.0)
    host = b.summary("synthetic", throughput=102.0, wait=0.01, compute_ms=20.0, gpu=96.0)
    device = b.summary("synthetic-device", throughput=110.0, wait=0.01, compute_ms=18.5, gpu=97.0)
    v = decide(on_gpu(real, host, device, pinned=True))
    assert v.bottleneck is Bottleneck.COMPUTE
    assert not v.of(FindingKind.TRANSFER)


def test_copies_that_cost_less_than_loading_leave_the_cause_to_loading() -> None:
    """Augmentation on two workers feeds a small network: the copies cost the step 1.6x, loading 8x."""
    real = b.summary(wait=0.85, compute_ms=5.0, busy=0.95, system=0.5, gpu=10.0)
    host = b.summary("synthetic", throughput=800.0, wait=0.01, compute_ms=5.0, gpu=60.0)
    device = b.summary("synthetic-device", throughput=1300.0, wait=0.01, compute_ms=3.1, gpu=90.0)
    v = decide(on_gpu(real, host, device, pinned=True))
    assert v.bottleneck is Bottleneck.CPU


def test_a_transfer_gain_inside_the_replays_noise_is_not_a_cause() -> None:
    real = b.summary(wait=0.02, compute_ms=20.0, gpu=95.0)
    host = dataclasses.replace(b.summary("synthetic", throughput=102.0, compute_ms=26.0), throughput_spread=0.25)
    device = dataclasses.replace(b.summary("synthetic-device", compute_ms=20.0), throughput_spread=0.2)
    v = decide(on_gpu(real, host, device))  # 1.3x, within the replays' ±45%
    assert v.bottleneck is not Bottleneck.TRANSFER


def test_host_bound_reads_the_gpu_with_its_batch_already_there() -> None:
    """With free inputs from host memory the copies keep the GPU waiting too; the host verdict is
    the device-resident replay's reading."""
    real = b.summary(wait=0.02, compute_ms=10.0, gpu=30.0)
    host = b.summary("synthetic", throughput=102.0, compute_ms=10.0, gpu=30.0)
    device = b.summary("synthetic-device", throughput=104.0, compute_ms=9.8, gpu=35.0)
    v = decide(on_gpu(real, host, device, nbytes=4096))
    assert v.bottleneck is Bottleneck.HOST
    (line,) = v.of(FindingKind.GPU_IDLE)
    assert "35%" in line.sentence and "synthetic-device" in line.sentence
    busy = dataclasses.replace(device, gpu_util_percent=92.0)
    assert decide(on_gpu(real, host, busy, nbytes=4096)).bottleneck is Bottleneck.COMPUTE


def test_a_slower_step_beside_workers_that_barely_ran_is_not_theirs() -> None:
    """slow-step: a one-second step on 2 cores, two workers that flip a tensor, on a CPU 0.6% of the
    time. A real run whose step ran 1.2x slower than the synthetic one's read that as loading
    competing with the step; workers that nearly never ran cannot add a sixth to the step."""
    real = dataclasses.replace(
        b.summary(wait=0.001, compute_ms=1200.0, busy=0.006, system=0.99), workers_cpu_percent=1.2
    )
    synthetic = b.summary("synthetic", throughput=120.0, wait=0.001, compute_ms=1000.0, system=0.99)
    v = decide(facts(real, synthetic))
    assert v.bottleneck is Bottleneck.COMPUTE
    assert not v.of(FindingKind.CONTENTION)
    busy = dataclasses.replace(real, loader_busy_fraction=0.27)  # as Hugging Face's example: the slowdown is theirs
    assert decide(facts(busy, synthetic)).of(FindingKind.CONTENTION)


def test_an_epoch_boundary_in_the_real_window_alone_is_its_own_part_not_noise() -> None:
    # a GPU-bound step (183 ms), 12 workers, epochs of 42 batches: too short for a steady window, so
    # the real run counts its epochs whole, the second one's start (its workers started again) in
    # it; between the epochs the script evaluates for 1.9 s. The free-input run never reaches an
    # epoch's end. Its steps run as fast as the real run's: the difference is the boundary.
    ms, epoch = 1_000_000, 42
    loader = dataclasses.replace(b.loader(12), dataset_len=epoch * 32)

    def batches(iterator: int, start_ns: int) -> list:
        return b.batches([900.0] + [0.5] * (epoch - 1), 183.0, iterator_id=iterator, start_ns=start_ns)

    first = batches(1, 0)
    ended = first[-1].wait_end_ns + 243 * ms  # its last step, then its workers' shutdown
    second_at = ended + 1900 * ms  # evaluation, checkpoints
    iterators = (
        IteratorInfo(
            loader_id=1, iterator_id=1, started_ns=0, ready_ns=0, worker_pids=(), reused=False, ended_ns=ended
        ),
        IteratorInfo(
            loader_id=1, iterator_id=2, started_ns=second_at, ready_ns=second_at, worker_pids=(), reused=False
        ),
    )
    crossing = [*first, *batches(2, second_at + 100 * ms)[:20]]
    real = dataclasses.replace(b.run("real", crossing, loaders=[loader], warmup=5), iterators=iterators)
    free = b.run("synthetic", batches(1, 0)[:35], loaders=[loader], warmup=5)
    analysis = analyze([real, free])
    v = analysis.verdict
    # the window with the boundary reads 1.10x slower; its steps alone, as fast as free inputs. Over
    # whole epochs free inputs also save the workers' start-up (the second epoch's: 1.0 s against
    # 42 steps of 183.5 ms), still under the line to "partly input-bound"
    assert analysis.summaries[0].throughput_samples_per_s < 0.92 * analysis.summaries[1].throughput_samples_per_s
    steps = 42 * 0.1835
    assert v.bottleneck is Bottleneck.COMPUTE and v.speedup_ceiling == pytest.approx((1.0 + steps) / steps, abs=0.01)
    assert any("1.00x over the steps" in x for x in v.evidence)
    boundary = next(x for x in v.findings if x.kind is FindingKind.EPOCH_BOUNDARY)
    assert boundary.values["boundary_s"] == pytest.approx(1.06, abs=0.02)
    assert boundary.values["between_epochs_s"] == pytest.approx(1.9)
    assert "crossed 1 epoch boundary" in boundary.sentence and "12 workers started again" in boundary.sentence
    assert not any(x.kind is FindingKind.CEILING_UNEXPLAINED for x in v.findings)
    # the difference is never called noise; the ceiling's own noise near the 1.15x line is said
    assert not any("run-to-run noise" in e for e in v.evidence)
    assert any(x.kind is FindingKind.NEAR_THRESHOLD for x in v.findings)
    # a window that crossed no boundary reads no such part
    steady = analyze([b.run("real", batches(1, 0)[:35], loaders=[loader], warmup=5), free]).verdict
    assert not any(x.kind is FindingKind.EPOCH_BOUNDARY for x in steady.findings)
