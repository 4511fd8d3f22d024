"""The pathology detectors on hand-built runs: each fires on the run that shows it, with the number
it rests on, and stays silent on the run beside it that must not fire."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import pytest

from fastload_cli.analyzer import analyze, search
from fastload_cli.analyzer.facts.gather import gather_facts, steady_waits_ms, waits_in_lockstep
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.pathologies import memory
from fastload_cli.analyzer.same_batches import compare
from fastload_cli.records import (
    BatchLayout,
    ChildEnv,
    FixSpec,
    HostSample,
    LoaderInfo,
    PathologyKind,
    ProcRole,
    ProcSample,
    Recommendation,
    RunResult,
    ScriptError,
    SystemSample,
    TensorLeaf,
)
from tests.unit import builders as b

MB = 2**20
S = 1_000_000_000


def kinds(*runs: RunResult) -> list[PathologyKind]:
    return [p.kind for p in analyze(runs).pathologies]


def found(run: RunResult, kind: PathologyKind):
    return next(p for p in analyze([run]).pathologies if p.kind is kind)


def real(waits_ms: Sequence[float], *, workers: int = 4, compute_ms: float = 20.0, **changes) -> RunResult:
    run = b.run("real", b.batches(waits_ms, compute_ms), loaders=[b.loader(workers)])
    return dataclasses.replace(run, **changes)


# -- slow samples ---------------------------------------------------------------------------------


def test_stalls_with_ready_batches_behind_them_on_two_workers_are_slow_samples() -> None:
    waits = [400.0 if i in (10, 30, 50) else 1.0 for i in range(60)]
    assert PathologyKind.SLOW_SAMPLES in kinds(real(waits, workers=2))


def test_a_few_long_stalls_among_ready_batches_are_slow_samples() -> None:
    waits = [1.0] * 60
    for i in (10, 22, 35, 47, 55):
        waits[i] = 400.0
    p = found(real(waits), PathologyKind.SLOW_SAMPLES)
    assert p.values["stalls"] == 5
    assert "5 of" in p.finding and "400 ms on average" in p.finding
    assert p.fix == "in-order" and p.recommendation == "deliver-out-of-order"


def test_slow_samples_advice_is_a_recommendation_with_an_estimate_diagnose_verifies() -> None:
    waits = [1.0] * 60
    for i in (10, 22, 35, 47, 55):
        waits[i] = 400.0
    free = b.run("synthetic", b.batches([0.1] * 60, 20.0), loaders=[b.loader(4)])  # the ceiling: 2.95x
    rec = next(r for r in analyze([real(waits), free]).recommendations if r.id == "deliver-out-of-order")
    # the 52 steps after the 8-batch start-up burst: 52 x 20 ms + 47 x 1 ms + 5 x 400 ms = 3.087 s, of
    # which the stalls' excess over the 1 ms median is 5 x 399 ms: 3.087 / 1.092 = 2.83x, under the ceiling
    assert rec.expected_speedup == pytest.approx(3.087 / 1.092, rel=0.001)
    assert not rec.measured and "in_order=False" in rec.title


def test_a_measured_pathologys_recommendation_says_its_advice_and_its_run_once() -> None:
    # the same stalls, and a run with in-order applied at 2.5x the real run's pace: the
    # pathology's advice carries what that run measured, and the recommendation that applies it
    # says the advice and the verifying run's reading, each once; the finding is its evidence
    waits = [1.0] * 60
    for i in (10, 22, 35, 47, 55):
        waits[i] = 400.0
    free = b.run("synthetic", b.batches([0.1] * 60, 20.0), loaders=[b.loader(4)])
    fixed = b.run("fix:in-order", b.batches([1.0] * 60, 20.0), loaders=[b.loader(4)])
    found = analyze([real(waits), free, fixed])
    slow = next(p for p in found.pathologies if p.kind is PathologyKind.SLOW_SAMPLES)
    assert "Measured with --fix in-order: measured" in slow.advice
    rec = next(r for r in found.recommendations if r.id == "deliver-out-of-order")
    assert rec.measured and rec.detail.count("in_order=False") == 1
    assert "Measured with --fix" not in rec.detail and rec.detail.count("Verified by a run with in-order") == 1
    assert slow.finding not in rec.detail and rec.evidence == (slow.finding,)
    # 2.64x measured, the two runs' windows ±27% apart: that noise is said once, and what it leaves given
    assert rec.detail.count("±27%") == 1 and rec.expected_speedup == pytest.approx(2.64 / 1.27, abs=0.01)


@pytest.mark.parametrize(
    "waits, workers",
    [
        ([30.0] * 60, 4),  # every batch waits alike: the pipeline is slow throughout
        ([1.0] * 55 + [400.0] * 5, 1),  # one worker: nothing can overtake a slow batch
        ([1.0] * 59 + [400.0], 4),  # a single stall is a hiccup
        ([1.0] * 30 + [200.0] * 30, 4),  # half the batches stall: not a few slow samples
        # two workers, each stall followed by another: neither worker's batch was ready behind it
        ([400.0 if i in (10, 11, 30, 31, 50, 51) else 1.0 for i in range(60)], 2),
    ],
)
def test_what_is_not_slow_samples(waits: list[float], workers: int) -> None:
    assert PathologyKind.SLOW_SAMPLES not in kinds(real(waits, workers=workers))


def test_stalls_shorter_than_a_workers_round_are_not_slow_samples() -> None:
    # heavy augmentation on 2 workers beside 175-ms steps: batches take each worker about two steps
    # to make, and one in five comes 80-110 ms late while the other worker's is ready behind it.
    # Late by less than a round of steps is how a CPU-bound pipeline varies, not a slow sample
    # (in_order=False gains nothing there: docs/benchmarks.md)
    waits = [5.0] * 50
    for n, i in enumerate(range(3, 50, 5)):
        waits[i] = 80.0 + 3 * n
    assert PathologyKind.SLOW_SAMPLES not in kinds(real(waits, workers=2, compute_ms=175.0))
    # the same late batches, each late by more than a round: slow samples
    long = [400.0 if w > 5.0 else w for w in waits]
    assert PathologyKind.SLOW_SAMPLES in kinds(real(long, workers=2, compute_ms=175.0))


def test_short_stalls_beside_a_long_step_are_not_slow_samples() -> None:
    waits = [0.1] * 60
    for i in (10, 30, 50):
        waits[i] = 60.0  # 60 ms stalls, 3% of the time beside 1 s steps
    assert PathologyKind.SLOW_SAMPLES not in kinds(real(waits, compute_ms=1000.0))


# The loop's waits in ms on a 16-core H100 host (torchvision's classification reference, ResNet-50,
# batch 96, 4 CPU-bound workers, steps of 57 ms): the workers start together and finish together,
# the loop eats their 4 batches and waits for the next round. Every sample costs the same.
LOCKSTEP_WAITS_MS = [
    333.0, 0, 0, 0, 360, 0, 10, 0, 342, 0, 0, 0, 441, 0, 0, 0, 363, 1, 0, 0, 444,
    0, 0, 0, 328, 0, 709, 0, 594, 0, 0, 0, 298, 0, 0, 0, 329, 0, 0, 0, 334,
]  # fmt: skip
STARTUP_BURST_MS = [900.0] + [0.0] * 7  # the workers' start, then their first batches at once (left out)


def lockstep(workers: int, rounds: int = 8, step_ms: float = 57.0, seed: int = 0) -> list[float]:
    """A many-core host's lockstep: ``workers`` CPU-bound workers each make a batch in 2.4 rounds of
    steps (the recorded host's 558 ms against 4 x 57 ms), all at once, so the loop eats a round of
    batches and then waits for the next round's first; jitter on every wait."""
    rng = random.Random(seed)
    make_ms = 2.4 * workers * step_ms
    waits = []
    for _ in range(rounds):
        stall = (make_ms - workers * step_ms) * rng.uniform(0.85, 1.3)
        waits += [stall] + [rng.choice((0.0, 0.0, 0.0, 1.0, 10.0)) for _ in range(workers - 1)]
    return waits


def test_workers_in_lockstep_are_not_slow_samples() -> None:
    assert PathologyKind.SLOW_SAMPLES not in kinds(
        real(STARTUP_BURST_MS + LOCKSTEP_WAITS_MS, workers=4, compute_ms=57.0)
    )


@pytest.mark.parametrize("workers", [6, 8, 12, 16, 32])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_workers_in_lockstep_on_many_cores_are_not_slow_samples(workers: int, seed: int) -> None:
    # one stall a round is 1/workers of the batches: with 5 and more workers, few enough to pass for
    # a few slow samples, unless their rhythm is read
    waits = [900.0] + [0.0] * (2 * workers - 1) + lockstep(workers, seed=seed)
    assert PathologyKind.SLOW_SAMPLES not in kinds(real(waits, workers=workers, compute_ms=57.0))


@pytest.mark.parametrize("workers", [8, 16])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_slow_samples_among_many_workers_are_still_found(workers: int, seed: int) -> None:
    # the same host and step, workers that keep up, and one sample in twenty that takes 1.5 s more
    rng = random.Random(seed)
    waits = [900.0] + [0.0] * (2 * workers - 1) + [0.0] * 120
    for i in rng.sample(range(2 * workers + 1, len(waits) - workers), 6):
        waits[i] = 1500.0
    assert PathologyKind.SLOW_SAMPLES in kinds(real(waits, workers=workers, compute_ms=57.0))


def sleeping_pair(rounds: int = 16, seed: int = 0) -> list[float]:
    """A GPU host's shape (zoo/gpu_paced.py, as its real run recorded it): two workers that sleep 96 ms
    a batch on storage latency, started together, beside a 40 ms step: the loop eats both batches
    of a round and waits about 30 ms for the next round's first."""
    rng = random.Random(seed)
    return [w for _ in range(rounds) for w in (rng.uniform(14.0, 38.0), rng.uniform(0.3, 2.2))]


def lockstep_read(run: RunResult) -> bool:
    """What the facts read of ``run`` as the real run: its steady waits in lockstep."""
    return waits_in_lockstep(steady_waits_ms(run), run.loaders[0].num_workers)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spikes_once_a_round_of_workers_are_waits_in_lockstep(seed: int) -> None:
    assert lockstep_read(real(STARTUP_BURST_MS[:4] + sleeping_pair(seed=seed), workers=2, compute_ms=40.0))
    for workers in (4, 8, 16):
        waits = [900.0] + [0.0] * (2 * workers - 1) + lockstep(workers, seed=seed)
        assert lockstep_read(real(waits, workers=workers, compute_ms=57.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spikes_where_they_fall_are_not_waits_in_lockstep(seed: int) -> None:
    # workers that keep up on average, and a batch now and then that takes a round of steps more
    rng = random.Random(seed)
    for workers in (2, 4, 8):
        waits = [900.0] + [0.0] * (2 * workers - 1) + [rng.choice((0.2, 0.5, 1.0)) for _ in range(120)]
        for i in rng.sample(range(2 * workers + 1, len(waits)), 12):
            waits[i] = 30.0
        assert not lockstep_read(real(waits, workers=workers, compute_ms=40.0))


# -- workers that idle or repeat each other -------------------------------------------------------


def iterable(workers: int = 2) -> LoaderInfo:
    return dataclasses.replace(b.loader(workers), iterable_dataset=True, dataset_len=None)


def streamed(keys: Sequence[str | None], delivered_by: Sequence[int], workers: int = 2) -> RunResult:
    made = b.batches([5.0] * len(keys), 20.0)
    made = [dataclasses.replace(x, samples_key=k, worker=w) for x, k, w in zip(made, keys, delivered_by, strict=True)]
    return b.run("real", made, loaders=[iterable(workers)])


def test_workers_yielding_the_same_samples_are_said_first() -> None:
    keys = [f"k{i // 2}" for i in range(40)]  # each batch twice: two workers, one stream
    run = streamed(keys, [i % 2 for i in range(40)])
    found_kinds = kinds(run)
    assert found_kinds[0] is PathologyKind.DUPLICATE_SAMPLES
    p = found(run, PathologyKind.DUPLICATE_SAMPLES)
    assert p.values["repeated"] == 20 and p.values["copies"] == pytest.approx(2.0)
    assert "get_worker_info" in p.advice


def test_distinct_samples_and_map_style_datasets_are_not_duplicates() -> None:
    distinct = streamed([f"k{i}" for i in range(40)], [i % 2 for i in range(40)])
    assert PathologyKind.DUPLICATE_SAMPLES not in kinds(distinct)
    repeated = [f"k{i // 2}" for i in range(40)]
    mapped = dataclasses.replace(streamed(repeated, [i % 2 for i in range(40)]), loaders=(b.loader(2),))
    assert PathologyKind.DUPLICATE_SAMPLES not in kinds(mapped)


def test_one_worker_delivering_nearly_every_batch_idles_the_others() -> None:
    run = streamed([f"k{i}" for i in range(40)], [0] * 38 + [1, 2], workers=4)
    p = found(run, PathologyKind.IDLE_WORKERS)
    assert p.values["worker"] == 0 and "3 of them idle" in p.finding


def test_workers_taking_turns_are_not_idle() -> None:
    run = streamed([f"k{i}" for i in range(40)], [i % 4 for i in range(40)], workers=4)
    assert PathologyKind.IDLE_WORKERS not in kinds(run)


# -- the worker processes ----------------------------------------------------------------------


def processes(
    end_ns: int,
    *,
    threads: Sequence[float] = (0.9, 0.02),
    workers: int = 2,
    unique: callable = lambda t, pid: 30 * MB,
    faulted: callable | None = None,
    rss: int = 2**30,
    main_fds: int = 20,
    every_ns: int = 250_000_000,
) -> tuple[HostSample, ...]:
    """Samples of a main process and ``workers`` workers: each worker's threads computing the
    given shares of a core, its unique memory ``unique(seconds, pid)``, the bytes of pages it
    faulted in ``faulted(seconds, pid)`` (by default its unique memory: every page kept)."""
    faulted = faulted or unique
    out = []
    for t in range(0, end_ns + every_ns, every_ns):
        s = t / S
        procs = [
            ProcSample(pid=100, role=ProcRole.MAIN, cpu_s=s, runq_s=0.0, rss_bytes=10**8, read_bytes=0, fds=main_fds)
        ]
        for w in range(workers):
            per_thread = tuple((1000 * w + i, share * s) for i, share in enumerate(threads))
            procs.append(
                ProcSample(
                    pid=200 + w,
                    role=ProcRole.WORKER,
                    cpu_s=sum(threads) * s,
                    runq_s=0.0,
                    rss_bytes=rss,
                    read_bytes=0,
                    threads=len(threads),
                    unique_bytes=int(unique(s, 200 + w)),
                    minor_faults=int(faulted(s, 200 + w)) // 4096,
                    thread_cpu_s=per_thread,
                )
            )
        system = SystemSample(busy_s=2 * s, idle_s=0.0, iowait_s=0.0, disk_read_bytes=0)
        out.append(HostSample(t_ns=t, procs=tuple(procs), system=system))
    return tuple(out)


def sampled(**options) -> RunResult:
    run = real([20.0] * 200, workers=options.pop("workers", 2), compute_ms=30.0)
    return dataclasses.replace(run, host_samples=processes(run.ended_ns, **options))


def test_workers_computing_on_two_threads_each_oversubscribe_two_cores() -> None:
    p = found(sampled(threads=(0.6, 0.5, 0.01)), PathologyKind.THREAD_OVERSUBSCRIPTION)
    assert p.values["threads_per_worker"] == 2 and p.values["computing"] == 5
    assert p.fix == "worker-threads=1" and "worker_init_fn" in p.advice


def test_one_computing_thread_per_worker_is_not_oversubscription() -> None:
    # the queue's feeder thread pickling batches takes a few percent: it does not compute
    assert PathologyKind.THREAD_OVERSUBSCRIPTION not in kinds(sampled(threads=(0.9, 0.05)))


def test_threads_read_over_too_short_a_window_are_not_counted() -> None:
    # a GPU-fast loop's window of 14 steps, 0.35 s: thread times move in 10 ms clock ticks, so a
    # feeder thread's few percent can read as 10% of a core there; nothing is said on such a reading
    short = real([5.0] * 16, workers=2, compute_ms=20.0)
    quick = dataclasses.replace(short, host_samples=processes(short.ended_ns, threads=(0.6, 0.5), every_ns=50_000_000))
    assert PathologyKind.THREAD_OVERSUBSCRIPTION not in kinds(quick)
    longer = real([5.0] * 40, workers=2, compute_ms=20.0)  # 38 steps, 0.95 s: read
    read = dataclasses.replace(longer, host_samples=processes(longer.ended_ns, threads=(0.6, 0.5), every_ns=50_000_000))
    assert PathologyKind.THREAD_OVERSUBSCRIPTION in kinds(read)


def test_stalls_beside_workers_that_oversubscribe_the_cores_are_not_slow_samples() -> None:
    # two workers on 2 threads each fight over 2 cores: the loop stalls 2 s now and then with the
    # other worker's batch ready behind, as slow samples would stall it. Those stalls are the
    # contention's: oversubscription is raised alone, and its fix verified first
    waits = [400.0 if i in (10, 30, 50) else 1.0 for i in range(60)]
    stalled = real(waits, workers=2, compute_ms=30.0)
    assert kinds(stalled) == [PathologyKind.SLOW_SAMPLES]
    both = dataclasses.replace(stalled, host_samples=processes(stalled.ended_ns, threads=(0.6, 0.5, 0.01)))
    assert kinds(both) == [PathologyKind.THREAD_OVERSUBSCRIPTION]


def test_steady_growth_of_the_workers_own_memory_is_projected_over_an_epoch() -> None:
    run = sampled(unique=lambda s, pid: 30 * MB + 8 * MB * s)
    run = dataclasses.replace(run, memory_available_bytes=2 * 2**30)
    p = found(run, PathologyKind.MEMORY_GROWTH)
    assert p.values["workers_growing"] == 2
    # the readings after the 2-batch warm-up (0.09 s) and before the run's end (9.97 s), every 0.25 s:
    # 0.25 s to 9.75 s, 8 MiB/s x 9.5 s each, over the 198 batches after warm-up; 312 batches an epoch
    assert p.values["batches"] == 198
    assert p.values["bytes_per_worker"] == 8 * MB * 9.5
    assert p.values["projected_epoch_bytes"] == pytest.approx(2 * 8 * MB * 9.5 / 198 * 312)
    assert "numpy arrays" in p.advice


def test_growth_is_projected_no_further_than_the_memory_a_worker_shares_with_its_parent() -> None:
    # 1 GiB resident, of which 30.5 MiB its own at the first reading after warm-up: at most the
    # other 993.5 MiB can be copied, for each of the 2 workers
    run = sampled(unique=lambda s, pid: 30 * MB + 2 * MB * s, rss=2**30)
    run = dataclasses.replace(run, loaders=(dataclasses.replace(b.loader(2), dataset_len=10**7),))
    run = dataclasses.replace(run, memory_available_bytes=2**34)
    p = found(run, PathologyKind.MEMORY_GROWTH)
    assert p.values["projected_epoch_bytes"] == 2 * (2**30 - (30 * MB + 2 * MB * 0.25))
    assert "grow by up to 1.9 GiB" in p.finding


def test_memory_that_only_wobbles_does_not_grow() -> None:
    wobble = sampled(unique=lambda s, pid: 30 * MB + (3 * MB if int(s * 4) % 2 else 0))
    assert PathologyKind.MEMORY_GROWTH not in kinds(wobble)


def test_buffers_faulted_in_and_freed_every_batch_are_not_growth() -> None:
    # 8 MB/s of pages faulted in, of which the unique memory keeps a tenth
    churn = sampled(unique=lambda s, pid: 30 * MB + 0.8 * MB * s, faulted=lambda s, pid: 30 * MB + 8 * MB * s)
    churn = dataclasses.replace(churn, memory_available_bytes=2**30)
    assert PathologyKind.MEMORY_GROWTH not in kinds(churn)


def test_growth_too_small_for_the_memory_available_is_not_said() -> None:
    run = sampled(unique=lambda s, pid: 30 * MB + 8 * MB * s)
    run = dataclasses.replace(run, memory_available_bytes=2**40)  # 250 MB an epoch against 1 TB
    assert PathologyKind.MEMORY_GROWTH not in kinds(run)


def test_descriptors_near_their_limit() -> None:
    run = dataclasses.replace(sampled(main_fds=900), env=ChildEnv(fd_limit=1024, sharing_strategy="file_descriptor"))
    p = found(run, PathologyKind.FILE_DESCRIPTORS)
    assert p.values == {"peak": 900, "limit": 1024} and "file_system" in p.advice
    calm = dataclasses.replace(sampled(main_fds=100), env=ChildEnv(fd_limit=1024))
    assert PathologyKind.FILE_DESCRIPTORS not in kinds(calm)


def test_a_run_that_ran_out_of_descriptors_says_so() -> None:
    run = dataclasses.replace(
        sampled(main_fds=300),
        env=ChildEnv(fd_limit=1024),
        error=ScriptError(type_name="RuntimeError", message="received 0 items of ancdata", traceback=""),
    )
    assert "the run failed: received 0 items of ancdata" in found(run, PathologyKind.FILE_DESCRIPTORS).finding


# -- shared memory and the memory advice costs ----------------------------------------------------


def with_batch(run: RunResult, nbytes: int, shm: int, **env) -> RunResult:
    leaf = TensorLeaf(path="[0]", dtype="float32", shape=(64, 3, 224, 224), nbytes=nbytes, pinned=False, device="cpu")
    layout = BatchLayout(loader_id=1, python_type="list", leaves=(leaf,))
    return dataclasses.replace(run, layouts=(layout,), env=ChildEnv(shm_total_bytes=shm, shm_free_bytes=shm, **env))


def test_batches_in_flight_past_half_of_dev_shm() -> None:
    run = with_batch(real([5.0] * 40, workers=4), 38 * MB, 64 * MB)
    p = found(run, PathologyKind.SHARED_MEMORY)
    assert p.values["in_flight_bytes"] == 38 * MB * 2 * 4
    assert p.values["workers_that_fit"] == 0  # not even one worker's two batches fit in half of 64 MB
    assert "--shm-size" in p.advice


def test_room_in_dev_shm_is_no_finding_and_a_bus_error_is() -> None:
    roomy = with_batch(real([5.0] * 40, workers=4), 38 * MB, 8 * 2**30)
    assert PathologyKind.SHARED_MEMORY not in kinds(roomy)
    died = dataclasses.replace(
        roomy, output_tail="RuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error."
    )
    assert "A worker ran out of it: bus error." in found(died, PathologyKind.SHARED_MEMORY).finding


def test_advice_that_costs_more_memory_than_is_free_says_so_in_its_title() -> None:
    run = dataclasses.replace(real([5.0] * 40), memory_available_bytes=2**30)
    facts = gather_facts([run], [summarize(run)], search.Limits())
    facts = dataclasses.replace(facts, sweep=b.sweep_result(recommended_workers=8, memory_cost_bytes=2**31))
    rec = Recommendation(
        id="increase-num-workers", title="Use num_workers=8 (now 4)", detail="", expected_speedup=2.0, measured=True
    )
    priced = memory.priced(rec, facts, per_worker=None)
    assert priced.title.endswith("(needs more memory than is free)")
    cheap = dataclasses.replace(facts, sweep=b.sweep_result(recommended_workers=8, memory_cost_bytes=2**20))
    assert memory.priced(rec, cheap, per_worker=None).title == rec.title


def test_workers_an_estimate_adds_are_priced_at_a_worker_s_own_memory() -> None:
    run = dataclasses.replace(real([5.0] * 40), memory_available_bytes=2**30)  # 4 workers now
    facts = gather_facts([run], [summarize(run)], search.Limits())
    rec = Recommendation(
        id="increase-num-workers", title="Use num_workers=8 (now 4)", detail="", expected_speedup=2.0, measured=False,
        num_workers=8,
    )  # fmt: skip
    light = memory.priced(rec, facts, per_worker=64 * MB)
    assert light.title == rec.title and "Memory: about 256 MiB more, of the 1.0 GiB available." in light.detail
    heavy = memory.priced(rec, facts, per_worker=256 * MB)  # 4 more workers of 256 MiB: all of 1 GiB
    assert heavy.title.endswith("(needs more memory than is free)")


# -- the fixes ---------------------------------------------------------------------------------


def test_the_pathologies_fixes_parse_and_refuse_without_workers() -> None:
    from fastload_cli.analyzer import trials
    from fastload_cli.records import Fix

    assert FixSpec.parse("in-order") == FixSpec(Fix.IN_ORDER)
    assert FixSpec.parse("worker-threads=1") == FixSpec(Fix.WORKER_THREADS, 1)
    with pytest.raises(ValueError, match="N >= 1"):
        FixSpec.parse("worker-threads=0")
    for fix in (FixSpec(Fix.IN_ORDER), FixSpec(Fix.WORKER_THREADS, 1)):
        assert "num_workers=0" in (trials.refusal((fix,), fix, b.loader(0), cuda=False) or "")
        assert trials.refusal((fix,), fix, b.loader(2), cuda=False) is None
    assert "in_order=False" in trials.code((FixSpec(Fix.IN_ORDER),), b.loader(2))
    assert "WorkerThreads(1)" in trials.code((FixSpec(Fix.WORKER_THREADS, 1),), b.loader(2))


def test_batches_delivered_out_of_order_are_compared_by_make_up_only() -> None:
    made = [
        dataclasses.replace(x, layout_key="[0] float32 [32]", values_key=f"v{i}")
        for i, x in enumerate(b.batches([5.0] * 4, 20.0))
    ]
    swapped = [dataclasses.replace(x, values_key=f"v{3 - i}") for i, x in enumerate(made)]
    unchanged = b.run("real", made)
    assert compare(unchanged, b.run("fix:pin-memory", swapped)).same is False
    check = compare(unchanged, b.run("fix:in-order", swapped))
    assert check.same is True and "another order" in check.said


# -- a run that a pathology stopped before its first batch -----------------------------------------


@pytest.mark.parametrize(
    "message, env, kind, said",
    [
        (
            "RuntimeError: unable to allocate shared memory(shm) for file </torch_1_2_0>: No space left on device",
            ChildEnv(shm_total_bytes=64 * MB, shm_free_bytes=0),
            "shared-memory",
            "/dev/shm holds 64 MiB",
        ),
        ("received 0 items of ancdata", ChildEnv(fd_limit=1024), "file-descriptors", "more than its 1024 allowed"),
    ],
)
def test_a_failure_before_the_first_batch_is_explained_by_its_pathology(message, env, kind, said) -> None:
    from fastload_cli.errors import ScriptFailedError
    from fastload_cli.plan import check_measurable

    run = dataclasses.replace(
        b.run("real", [], loaders=[b.loader(4)]),
        env=env,
        error=ScriptError(type_name="RuntimeError", message=message, traceback=""),
    )
    with pytest.raises(ScriptFailedError) as raised:
        check_measurable(run)
    assert f"[{kind}]" in (raised.value.hint or "") and said in (raised.value.hint or "")


def test_a_failure_no_pathology_explains_keeps_its_own_hint() -> None:
    from fastload_cli.errors import ScriptFailedError
    from fastload_cli.plan import check_measurable

    run = dataclasses.replace(
        b.run("real", [], loaders=[b.loader(4)]),
        env=ChildEnv(shm_total_bytes=8 * 2**30, fd_limit=1024),
        error=ScriptError(type_name="ValueError", message="bad label", traceback=""),
    )
    with pytest.raises(ScriptFailedError) as raised:
        check_measurable(run)
    assert "[" not in (raised.value.hint or "")
