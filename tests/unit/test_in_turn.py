"""A real+synthetic run cut into the real run and the synthetic run it measured in turn: neither
run's figures hold anything of the other's part, and a run that never replayed is the real run."""

from __future__ import annotations

import dataclasses

from fastload_cli.analyzer.in_turn import modes_of, part_settled
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.settle import settled
from fastload_cli.records import Mode, RunStatus, StopReason, Streamed
from tests.unit import builders as b


def pair(real_wait_ms: float = 20.0, error: bool = False):
    """A real run whose loop waits ``real_wait_ms`` a step, then a synthetic one that waits nothing,
    each measured on its own and in turn in one run."""
    real_batches = b.batches([real_wait_ms] * 20, 5.0)
    real = b.run("real", real_batches, warmup=3, requested=30,
                 samples=b.host_samples(real_batches[-1].wait_end_ns, worker_cores=(0.9, 0.9)))  # fmt: skip
    synthetic_batches = b.batches([0.05] * 25, 5.0)
    synthetic = b.run("synthetic", synthetic_batches, warmup=3,
                      samples=b.host_samples(synthetic_batches[-1].wait_end_ns, worker_cores=(0.0, 0.0)))  # fmt: skip
    if error:
        synthetic = dataclasses.replace(synthetic, status=RunStatus.FAILED, stop_reason=StopReason.SCRIPT_RAISED)
    return real, synthetic, b.in_turn(real, synthetic)


def test_the_real_run_ends_at_its_last_loaded_batch_and_holds_no_replay() -> None:
    real, _, both = pair(error=True)
    cut_real, cut_synthetic = modes_of(both)
    assert cut_real.spec.mode is Mode.REAL and cut_synthetic.spec.mode is Mode.SYNTHETIC
    assert not any(x.synthetic for x in cut_real.batches) and len(cut_real.batches) == len(real.batches)
    assert real.batches[-1].wait_end_ns < cut_real.ended_ns < both.batches[len(real.batches)].wait_end_ns
    assert sum(s.t_ns > cut_real.ended_ns for s in cut_real.host_samples) == 1  # the one its counters read
    # the script's error came in the replays: the real run finished well, settled before its batches
    assert cut_real.status is RunStatus.OK and cut_real.stop_reason is StopReason.SETTLED
    assert cut_synthetic.status is RunStatus.FAILED
    # its figures are the real run's own
    alone, cut = summarize(real), summarize(cut_real)
    assert cut.throughput_samples_per_s == alone.throughput_samples_per_s
    assert cut.data_wait_fraction == alone.data_wait_fraction
    assert cut.workers_cpu_percent == alone.workers_cpu_percent


def test_the_synthetic_run_measures_the_replays_after_the_first() -> None:
    _, synthetic, both = pair()
    cut = summarize(modes_of(both)[1])
    alone = summarize(synthetic)
    # the replays alone: no real batch's wait, and the first replay's step (the workers' shutdown) left out
    assert cut.data_wait_fraction is not None and cut.data_wait_fraction < 0.02
    assert cut.throughput_samples_per_s is not None and alone.throughput_samples_per_s is not None
    assert abs(cut.throughput_samples_per_s / alone.throughput_samples_per_s - 1) < 0.02
    assert cut.workers_cpu_percent is not None and cut.workers_cpu_percent < 1.0


def test_a_run_that_never_replayed_is_the_real_run() -> None:
    real, _, _ = pair()
    both = dataclasses.replace(real, spec=b.ModeSpec(mode=Mode.REAL_SYNTHETIC), status=RunStatus.FAILED)
    (only,) = modes_of(both)
    assert only.spec.mode is Mode.REAL and only.status is RunStatus.FAILED and only.batches == real.batches


def test_in_flight_the_settle_rule_reads_the_part_in_force() -> None:
    # a real part that never settles (its rounds of two steps alternate 10 and 120 ms), then steady replays
    real_batches = b.batches([0.0, 0.0, 55.0, 55.0] * 5, 5.0)
    real = b.run("real", real_batches, warmup=3, requested=60)
    _, synthetic, _ = pair()

    def streamed(run):
        return Streamed(batches=run.batches, loaders=run.loaders, iterators=run.iterators,
                        warmup_batches=3, requested_batches=60)  # fmt: skip

    assert not part_settled(streamed(real))
    assert part_settled(streamed(b.in_turn(real, synthetic)))


def test_a_real_part_whose_loop_mostly_waits_hands_over_once_its_verdict_is_decided() -> None:
    # a loop loading in its own process whose steps alternate 200 and 400 ms, of which 40 ms
    # compute: never settled to 4% in its 52 batches, but waiting 87% of its time its verdict is
    # decided after 20 steady steps
    loaders = [b.loader(num_workers=0)]
    real = b.run("real", b.batches([160.0, 360.0] * 26, 40.0), loaders=loaders, warmup=2, requested=52)

    def upto(count: int) -> Streamed:
        return Streamed(batches=real.batches[:count], loaders=real.loaders, iterators=real.iterators,
                        warmup_batches=2, requested_batches=52)  # fmt: skip

    assert not part_settled(upto(2 + 19))
    assert part_settled(upto(2 + 20))
    assert not settled(upto(52))


def test_replays_are_not_held_for_an_epoch_start_the_real_part_asked_for() -> None:
    # 40-batch epochs whose workers take 2 s to start: a real run waits for its second epoch before
    # it settles, and a synthetic run of its own would not; nor do the replays after the real part
    real_batches = b.batches([5.0] * 20, 5.0, start_ns=2_000 * b.MS)
    loader = dataclasses.replace(b.loader(num_workers=2), batches_per_epoch=40)
    real = b.run("real", real_batches, loaders=[loader], warmup=3, requested=60)
    synthetic_batches = b.batches([0.05] * 30, 5.0)
    synthetic = b.run("synthetic", synthetic_batches, loaders=[loader], warmup=3)
    both = b.in_turn(real, synthetic)
    view = Streamed(batches=both.batches, loaders=both.loaders, iterators=both.iterators,
                    warmup_batches=3, requested_batches=60)  # fmt: skip
    assert part_settled(view)
