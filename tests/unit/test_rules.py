"""The rules that rest on the breakdown, the batch, the epochs and the waits: each fires when its
measured condition holds, stays silent when it does not, and never suggests a setting that is
meaningless for the loader as configured."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import advice as rec
from fastload_cli.analyzer import trials
from fastload_cli.analyzer.verdict import Facts, decide
from fastload_cli.records import (
    BatchInfo,
    Bottleneck,
    Breakdown,
    BreakdownStep,
    FindingKind,
    FixResult,
    FixSpec,
    Recommendation,
    TensorLeaf,
)
from tests.unit import builders as b

GIB = 2**30


def step(name: str, share: float, kind: str = "transform", image: tuple[int, int] | None = None) -> BreakdownStep:
    return BreakdownStep(
        name=name,
        location="dataset.transform[0]",
        kind=kind,
        ms_per_sample=10 * share,
        share=share,
        input_kind="image" if image else None,
        input_shape=image or (),
    )


def breakdown(*steps: BreakdownStep) -> Breakdown:
    return Breakdown(loader_id=1, items=64, threads=1, ms_per_sample=10.0, steps=steps)


def images(dtype: str = "torch.float32", side: int = 224) -> BatchInfo:
    leaf = TensorLeaf(
        path="[0]", dtype=dtype, shape=(32, 3, side, side), nbytes=32 * 3 * side * side * 4, pinned=False, device="cpu"
    )
    return BatchInfo(
        python_type="list",
        samples=32,
        bytes_per_batch=leaf.nbytes,
        bytes_per_sample=leaf.nbytes / 32,
        pinned=False,
        leaves=(leaf,),
    )


def facts(
    *,
    workers: int = 2,
    wait: float = 0.5,
    busy: float = 0.9,
    system: float = 0.5,
    cuda: bool = False,
    **extra: object,
) -> Facts:
    loader = dataclasses.replace(b.loader(num_workers=workers), **extra.pop("loader", {}))  # type: ignore[arg-type]
    base = Facts(
        real=b.summary(wait=wait, busy=busy, system=system, workers=workers),
        synthetic=b.summary("synthetic", throughput=300.0),
        loader=loader,
        cpu_count=8,
        cuda_in_use=cuda,
    )
    return dataclasses.replace(base, **extra)


def fire(rule, f: Facts):
    return rule(f, decide(f))


# -- workers-are-overhead -----------------------------------------------------------------------


def test_workers_on_an_in_memory_tensor_dataset_are_overhead() -> None:
    found = fire(rec.in_memory_without_workers, facts(loader={"dataset_type": "TensorDataset"}))
    assert found is not None and found.id == "workers-are-overhead"
    assert "num_workers=0" in found.detail and found.evidence


def test_a_batch_cheaper_than_its_handoff_is_overhead_too() -> None:
    cheap = breakdown(step("read and decode (rest of __getitem__)", 1.0, "getitem"))
    cheap = dataclasses.replace(cheap, ms_per_sample=0.01)  # 0.32 ms per 32-sample batch
    assert fire(rec.in_memory_without_workers, facts(breakdown=cheap)) is not None


def test_no_worker_advice_without_workers_or_for_costly_datasets() -> None:
    assert fire(rec.in_memory_without_workers, facts(workers=0, loader={"dataset_type": "TensorDataset"})) is None
    assert fire(rec.in_memory_without_workers, facts()) is None  # an ordinary dataset, nothing timed


# -- index-whole-batches ------------------------------------------------------------------------


def test_a_tensor_dataset_is_indexed_a_batch_at_a_time() -> None:
    found = fire(rec.whole_batches, facts(loader={"dataset_type": "TensorDataset"}))
    assert found is not None and found.id == "index-whole-batches"
    assert "batch_size=None" in found.detail and "BatchSampler(RandomSampler(dataset), batch_size=32" in found.detail
    assert not found.measured and found.expected_speedup == pytest.approx(3.0)  # the ceiling: 300 / 100


def test_whole_batches_are_advised_after_a_sweep_that_found_no_better_setting() -> None:
    no_gain = b.sweep_result(speedup=1.05, noise=0.1, diminishing_at=None)  # workers=0 within the noise
    f = facts(busy=0.1, loader={"dataset_type": "TensorDataset"}, sweep=no_gain)
    v = decide(f)
    assert v.bottleneck is Bottleneck.CPU
    assert "index-whole-batches" in [r.id for r in b.recommended(f, v)]  # an input-bound verdict says what to do


def test_no_whole_batch_advice_for_other_datasets_the_step_or_a_framework_loader() -> None:
    assert fire(rec.whole_batches, facts()) is None
    tensors = {"dataset_type": "TensorDataset"}
    compute = facts(wait=0.01, loader=tensors, synthetic=b.summary("synthetic", throughput=101.0))
    assert decide(compute).bottleneck is not Bottleneck.CPU and fire(rec.whole_batches, compute) is None
    built = facts(loader={**tensors, "framework": "transformers"})
    assert fire(rec.whole_batches, built) is None


# -- persistent-workers -------------------------------------------------------------------------


def test_workers_restarted_every_epoch_at_a_cost() -> None:
    # 10,000 samples / 32 = 312 batches at 100/32 batches/s: about 100 s per epoch; 8 s start-up
    found = fire(rec.persistent_workers, facts(epoch_startup_s=(8.0, 8.5, 7.5)))
    assert found is not None and "persistent_workers=True" in found.detail
    assert found.expected_speedup is not None and found.expected_speedup > 1.0


def test_persistent_workers_silent_when_cheap_already_set_or_without_workers() -> None:
    assert fire(rec.persistent_workers, facts(epoch_startup_s=(0.2,))) is None
    assert fire(rec.persistent_workers, facts(epoch_startup_s=(8.0,), loader={"persistent_workers": True})) is None
    assert fire(rec.persistent_workers, facts(workers=0, epoch_startup_s=(8.0,))) is None


def test_start_up_gain_is_not_capped_by_the_steady_state_ceiling() -> None:
    # the ceiling (1.05x) compares steady states, which leave each epoch's start-up out
    f = facts(epoch_startup_s=(40.0, 42.0), synthetic=b.summary("synthetic", throughput=105.0))
    found = fire(rec.persistent_workers, f)
    # 312 whole batches at 100/32 batches/s: 99.84 s of steps
    assert found is not None and found.expected_speedup == pytest.approx((99.84 + 42) / 99.84)


def test_when_restarts_dominate_the_steady_state_advice_is_silent() -> None:
    f = facts(busy=0.1, epoch_startup_s=(40.0, 42.0), startup_busy=0.05)
    assert f.restarts_dominate
    ids = [r.id for r in b.recommended(f, decide(f))]
    assert ids[0] == "persistent-workers"
    assert "increase-num-workers" not in ids and "faster-storage" not in ids


def test_the_start_up_is_said_once_where_it_is_the_verdicts_cause() -> None:
    # the verdict's finding gives the start-up against an epoch's steps: the advice does not say it
    # again in other words (worker_startup.py's said "82% of the training time" there, then "451% of
    # an epoch's 0.3 s of steps" here, the same 0.35 s rounded otherwise)
    dominated = facts(busy=0.1, epoch_startup_s=(40.0, 42.0), startup_busy=0.05)
    v = decide(dominated)
    (restarts,) = [e for e in v.of(FindingKind.WORKER_RESTARTS) if "s from iter()" in e.sentence]
    assert "42.00 s from iter()" in restarts.sentence
    advice = next(r for r in b.recommended(dominated, v) if r.id == "persistent-workers")
    assert "42.00" not in advice.detail and "every epoch pays its workers' start-up again" in advice.detail
    # where it is not the cause, the advice is where the start-up is said: to two decimals
    minor = fire(rec.persistent_workers, facts(epoch_startup_s=(8.0, 8.5, 7.5)))
    assert minor is not None and not facts(epoch_startup_s=(8.0, 8.5, 7.5)).restarts_dominate
    assert "Starting the 2 workers took 8.00 s per epoch (measured), 8% of an epoch's 99.84 s of steps" in minor.detail


def test_cheap_batches_silence_the_advice_for_costly_ones() -> None:
    f = facts(busy=0.1, system=0.97, loader={"dataset_type": "TensorDataset"})
    ids = [r.id for r in b.recommended(f, decide(f))]
    assert "workers-are-overhead" in ids
    assert not {"cores-saturated", "increase-num-workers", "faster-storage"} & set(ids)


# -- pin-memory ---------------------------------------------------------------------------------


# The batch already on the GPU (synthetic-device) against copied there (synthetic): a step of 10 ms
# copied, 4 ms on the device; and one the copies do not measurably cost.
COPIES_COST = b.summary("synthetic-device", throughput=750.0, compute_ms=4.0)
COPIES_FREE = b.summary("synthetic-device", throughput=300.0, compute_ms=9.8)


def test_pin_memory_only_when_training_on_cuda_without_it_and_the_copies_cost_the_step() -> None:
    found = fire(rec.pin_memory, facts(cuda=True, batch=images(), device_replay=COPIES_COST))
    assert found is not None and "pin_memory=True" in found.detail and "non_blocking=True" in found.detail
    assert fire(rec.pin_memory, facts(cuda=False)) is None
    assert fire(rec.pin_memory, facts(cuda=True, loader={"pin_memory": True}, device_replay=COPIES_COST)) is None
    # a GPU-bound step that copies cost nothing measurable, or not measured: no advice about copies
    assert fire(rec.pin_memory, facts(cuda=True, batch=images(), device_replay=COPIES_FREE)) is None
    assert fire(rec.pin_memory, facts(cuda=True, batch=images())) is None


# -- larger-prefetch-factor ---------------------------------------------------------------------


def test_spiky_waits_with_idle_workers_ask_for_a_deeper_queue() -> None:
    found = fire(rec.larger_prefetch, facts(busy=0.2, wait_ms_p50=0.5, wait_ms_p90=40.0))
    assert found is not None and "prefetch_factor=4" in found.detail


def test_no_prefetch_advice_where_the_spikes_recur_once_a_round_of_workers() -> None:
    # zoo/gpu_paced.py's real run: two workers asleep on latency 95% of the time, waits of 1.8 ms at the
    # median and 32 ms at p90, every other batch: they fall short every round, and prefetch_factor=4
    # trained at 300 samples/s as 2 did in plain runs (3 workers: 378)
    spiky = facts(busy=0.05, wait=0.2, wait_ms_p50=1.8, wait_ms_p90=32.0)
    assert fire(rec.larger_prefetch, spiky) is not None
    assert fire(rec.larger_prefetch, dataclasses.replace(spiky, waits_in_lockstep=True)) is None


def test_no_prefetch_advice_for_busy_workers_steady_waits_or_no_workers() -> None:
    assert fire(rec.larger_prefetch, facts(busy=0.9, wait_ms_p50=0.5, wait_ms_p90=40.0)) is None
    assert fire(rec.larger_prefetch, facts(busy=0.2, wait_ms_p50=20.0, wait_ms_p90=30.0)) is None
    assert fire(rec.larger_prefetch, facts(workers=0, busy=0.2, wait_ms_p50=0.5, wait_ms_p90=40.0)) is None


# -- cache-decoded-samples ----------------------------------------------------------------------


def test_cache_in_ram_when_decoding_dominates_and_it_fits() -> None:
    found = fire(
        rec.cache_in_ram,
        facts(
            breakdown=breakdown(
                step("read and decode (rest of __getitem__)", 0.7, "getitem"),
                step("Resize", 0.3, image=(500, 400)),
            ),
            memory_available_bytes=16 * GIB,
        ),
    )
    assert found is not None
    assert "5.6 GiB" in found.title  # 10,000 samples x 500 x 400 x 3 bytes


def test_no_cache_when_it_does_not_fit_or_decoding_is_cheap() -> None:
    heavy = breakdown(
        step("read and decode (rest of __getitem__)", 0.7, "getitem"), step("Resize", 0.3, image=(500, 400))
    )
    assert fire(rec.cache_in_ram, facts(breakdown=heavy, memory_available_bytes=4 * GIB)) is None
    light = breakdown(step("read and decode (rest of __getitem__)", 0.2, "getitem"), step("ColorJitter", 0.8))
    assert fire(rec.cache_in_ram, facts(breakdown=light, memory_available_bytes=64 * GIB)) is None


def test_no_cache_for_a_dataset_already_in_memory() -> None:
    """A TensorDataset's __getitem__ is the whole of its loading (it slices tensors, collate is
    cheap), yet there is nothing to read or decode: no cache can help it."""
    sliced = breakdown(
        step("read and decode (rest of __getitem__)", 0.7, "getitem"), step("Resize", 0.3, image=(500, 400))
    )
    in_memory = facts(breakdown=sliced, memory_available_bytes=64 * GIB, loader={"dataset_type": "TensorDataset"})
    assert fire(rec.cache_in_ram, in_memory) is None
    assert fire(rec.cache_in_ram, dataclasses.replace(in_memory, loader=b.loader())) is not None


# -- resize-offline -----------------------------------------------------------------------------


def test_resizing_large_images_first_in_the_breakdown_is_done_offline() -> None:
    top = step("RandomResizedCrop(size=(224, 224))", 0.6, image=(1920, 1080))
    found = fire(rec.resize_offline, facts(breakdown=breakdown(top, step("Normalize", 0.4)), batch=images()))
    assert found is not None and found.id == "resize-offline"


def test_no_offline_resize_for_small_inputs_or_when_resize_is_not_the_top_step() -> None:
    small = step("Resize(size=256)", 0.6, image=(256, 256))
    assert fire(rec.resize_offline, facts(breakdown=breakdown(small, step("Normalize", 0.4)), batch=images())) is None
    second = step("Resize(size=256)", 0.3, image=(1920, 1080))
    other = breakdown(step("GaussianBlur", 0.7), second)
    assert fire(rec.resize_offline, facts(breakdown=other, batch=images())) is None


# -- augmentation-on-gpu ------------------------------------------------------------------------


def test_augmentation_to_the_gpu_when_it_dominates_the_saturated_cpu_of_a_cuda_machine() -> None:
    aug = breakdown(
        step("ColorJitter(brightness=0.4)", 0.7), step("read and decode (rest of __getitem__)", 0.3, "getitem")
    )
    found = fire(
        rec.augmentation_to_gpu,
        facts(cuda=True, system=0.97, breakdown=aug, augmentations=("ColorJitter(brightness=0.4)",)),
    )
    assert found is not None and "torchvision.transforms import v2" in found.detail


def test_no_gpu_augmentation_without_cuda_or_with_idle_cores() -> None:
    aug = breakdown(step("ColorJitter(brightness=0.4)", 0.7))
    names = ("ColorJitter(brightness=0.4)",)
    assert fire(rec.augmentation_to_gpu, facts(cuda=False, system=0.97, breakdown=aug, augmentations=names)) is None
    assert fire(rec.augmentation_to_gpu, facts(cuda=True, system=0.5, breakdown=aug, augmentations=names)) is None


# -- uint8-transfer -----------------------------------------------------------------------------


def test_float32_images_sent_to_the_gpu_should_be_uint8() -> None:
    found = fire(rec.uint8_transfer, facts(cuda=True, batch=images(), device_replay=COPIES_COST))
    assert found is not None
    assert "14 MiB less to copy per step" in found.title  # 3/4 of 32 x 3 x 224 x 224 x 4 bytes


def test_no_uint8_advice_for_uint8_batches_without_cuda_or_where_copies_cost_nothing() -> None:
    assert fire(rec.uint8_transfer, facts(cuda=True, batch=images("torch.uint8"), device_replay=COPIES_COST)) is None
    assert fire(rec.uint8_transfer, facts(cuda=False, batch=images())) is None
    assert fire(rec.uint8_transfer, facts(cuda=True, batch=images(), device_replay=COPIES_FREE)) is None


# -- decode-on-gpu ------------------------------------------------------------------------------


def test_loading_the_cores_cannot_feed_at_the_free_input_rate_goes_to_the_gpu() -> None:
    # 16 cores; 4 workers at 100% each make 700 samples/s: 5.7 ms of CPU a sample. The step takes
    # 8,000 samples/s with free inputs: 45.7 cores of loading, where 16 are there
    real = dataclasses.replace(
        b.summary(wait=0.9, busy=1.0, system=0.3, workers=4, throughput=700.0), workers_cpu_percent=400.0
    )
    gpu_host = dict(cuda=True, real=real, synthetic=b.summary("synthetic", throughput=8000.0), cpu_count=16)
    found = fire(rec.decode_on_gpu, facts(**gpu_host))
    assert found is not None and found.id == "decode-on-gpu"
    assert "takes 45.7 cores of loading (5.7 ms of CPU per sample" in found.detail and "may use 16" in found.detail
    assert "decode_jpeg" in found.detail and "DALI" in found.detail
    capacity = decide(facts(**gpu_host)).of(FindingKind.CAPACITY)
    assert capacity and capacity[0].values["cores_needed"] == pytest.approx(45.7, abs=0.05)
    assert "no num_workers setting can get there" in capacity[0].sentence
    # the step at 1,640 samples/s: 9.4 cores feed it, and 16 are there: more workers can
    slower = dict(gpu_host, synthetic=b.summary("synthetic", throughput=1640.0))
    assert fire(rec.decode_on_gpu, facts(**slower)) is None
    assert "more workers can get there" in decide(facts(**slower)).of(FindingKind.CAPACITY)[0].sentence
    assert fire(rec.decode_on_gpu, facts(**dict(gpu_host, cuda=False))) is None


# -- every rule ---------------------------------------------------------------------------------


EVERYTHING = [
    facts(loader={"dataset_type": "TensorDataset"}),
    facts(epoch_startup_s=(8.0,)),
    facts(
        cuda=True,
        batch=images(),
        system=0.97,
        augmentations=("ColorJitter()",),
        breakdown=breakdown(step("ColorJitter()", 1.0)),
    ),
    facts(busy=0.2, wait_ms_p50=0.5, wait_ms_p90=40.0),
    facts(
        breakdown=breakdown(
            step("RandomResizedCrop(224)", 0.6, image=(1920, 1080)),
            step("read and decode (rest of __getitem__)", 0.4, "getitem"),
        ),
        batch=images(),
        memory_available_bytes=512 * GIB,
    ),
]


@pytest.mark.parametrize("case", EVERYTHING)
def test_every_recommendation_has_evidence_and_a_gain_within_the_ceiling(case: Facts) -> None:
    v = decide(case)
    found = b.recommended(case, v)
    assert found
    for r in found:
        assert r.evidence, r.id
        if r.id == "persistent-workers":
            continue  # start-up is outside the steady states the ceiling compares (tested above)
        assert r.expected_speedup is None or v.speedup_ceiling is None or r.expected_speedup <= v.speedup_ceiling + 1e-9


COMPUTE_BOUND = facts(wait=0.01, synthetic=b.summary("synthetic", throughput=102.0))


def test_reworded_evidence_stays_attached_to_the_recommendations() -> None:
    """Rules select their evidence by the findings' kinds: rewording every sentence changes what
    they quote, never whether they quote it."""
    case = COMPUTE_BOUND  # step-is-the-limit rests on the wait and the ceiling
    v = decide(case)
    assert v.bottleneck is Bottleneck.COMPUTE
    reworded = tuple(dataclasses.replace(x, sentence=f"Reworded {i}.") for i, x in enumerate(v.findings))
    v = dataclasses.replace(v, evidence=tuple(x.sentence for x in reworded), findings=reworded)
    found = b.recommended(case, v)
    assert found and all(r.evidence for r in found)
    assert all(line.startswith("Reworded") for r in found for line in r.evidence)


def test_a_rule_without_its_findings_has_no_evidence_to_fill_in() -> None:
    case = COMPUTE_BOUND
    v = dataclasses.replace(decide(case), findings=())
    step = rec.step_is_the_limit(case, v)
    assert step is not None and step.evidence == ()


def test_no_rule_reads_the_verdicts_sentences() -> None:
    """A structural guarantee: no rule touches a sentence (evidence, label, caveats, a finding's
    sentence); only ``cited`` turns the findings of chosen kinds into the lines a rule quotes."""
    import ast
    import inspect
    import textwrap

    from fastload_cli.analyzer.advice import shared

    def tree(function: object) -> ast.AST:
        return ast.parse(textwrap.dedent(inspect.getsource(function)))  # type: ignore[arg-type]

    texts = {"evidence", "label", "caveats", "sentence"}
    assert len(rec.RULES) >= 14
    for rule in rec.RULES:
        touched = {n.attr for n in ast.walk(tree(rule)) if isinstance(n, ast.Attribute)} & texts
        assert not touched, f"{rule.__name__} reads {touched}"
    cited = {n.attr for n in ast.walk(tree(shared.cited)) if isinstance(n, ast.Attribute)}
    assert cited <= {"sentence", "of"}, cited


def test_spikes_of_a_few_ms_beside_a_step_of_seconds_are_not_advice() -> None:
    # timm-like on CPU: 1.5 s steps (32 samples), waits of 1.5 ms median and 8 ms at p90
    slow_step = facts(
        wait=0.002,
        busy=0.1,
        wait_ms_p50=1.5,
        wait_ms_p90=8.0,
        synthetic=b.summary("synthetic", throughput=21.5),
    )
    slow_step = dataclasses.replace(
        slow_step,
        real=dataclasses.replace(slow_step.real, throughput_samples_per_s=21.3, throughput_batches_per_s=21.3 / 32),
    )
    assert decide(slow_step).bottleneck is Bottleneck.COMPUTE
    assert fire(rec.larger_prefetch, slow_step) is None
    assert [r.id for r in b.recommended(slow_step, decide(slow_step))] == ["step-is-the-limit"]


def test_an_estimated_gain_inside_the_runs_noise_is_not_listed() -> None:
    # workers restarted every epoch (312 batches, 99.84 s of steps): 8 s is an estimated 1.08x, inside a run whose
    # throughput moved ±12%; 20 s (1.2x) is outside it
    def restarting(startup_s: float) -> Facts:
        f = facts(epoch_startup_s=(startup_s, startup_s))
        assert f.real is not None and f.epoch_s == pytest.approx(99.84)
        return dataclasses.replace(f, real=dataclasses.replace(f.real, throughput_spread=0.12))

    small, large = restarting(8.0), restarting(20.0)
    assert fire(rec.persistent_workers, small) is not None  # the rule fires; the gain is noise
    assert "persistent-workers" not in [r.id for r in b.recommended(small, decide(small))]
    assert "persistent-workers" in [r.id for r in b.recommended(large, decide(large))]


@pytest.mark.parametrize(
    ("framework", "expected"),
    [
        (None, "DataLoader(dataset, ..., num_workers=8, persistent_workers=True)"),
        ("transformers", "TrainingArguments(..., dataloader_num_workers=8, dataloader_persistent_workers=True)"),
        ("timm", "create_loader(..., num_workers=8, persistent_workers=True)  # timm's train.py: --workers 8"),
        ("lightning", "num_workers=8, persistent_workers=True)  # in your LightningDataModule"),
        ("accelerate", "# the loader you pass to accelerator.prepare()"),
    ],
)
def test_advice_names_the_setting_where_the_framework_takes_it(framework: str | None, expected: str) -> None:
    io_bound = facts(wait=0.8, busy=0.1, system=0.2, loader={"framework": framework})
    found = fire(rec.more_workers, io_bound)
    assert found is not None and expected in found.detail
    if framework == "transformers":
        assert "DataLoader(" not in found.detail


def tried(name: str, speedup: float) -> FixResult:
    return FixResult(
        name=name, speedup=speedup, spread=0.05, memory_bytes=None, measured=True, applies=True, reason="r", code=""
    )


def test_a_run_with_the_fix_applied_verifies_the_recommendation_and_one_without_gain_is_evidence() -> None:
    f = facts(busy=0.1, epoch_startup_s=(40.0, 42.0), startup_busy=0.05)
    estimated = next(r for r in b.recommended(f, decide(f)) if r.id == "persistent-workers")
    assert not estimated.measured
    assert estimated.expected_speedup == pytest.approx((99.84 + 42) / 99.84)  # the later start-up, per epoch
    verified = dataclasses.replace(f, tried=(tried("persistent-workers", 1.31),))
    found = next(r for r in b.recommended(verified, decide(verified)) if r.id == "persistent-workers")
    # promised at the low edge of the two runs' noise: their ±5% spread, at least the run-to-run ±20%
    assert found.measured and found.expected_speedup == pytest.approx(1.31 / 1.2, abs=0.005)
    assert "Verified by a run with persistent-workers applied" in found.detail and "±20%" in found.detail
    # a window shorter than an epoch, one start-up in it: more than an epoch's start-up can save
    windowed = dataclasses.replace(f, tried=(tried("persistent-workers", 2.31),))
    found = next(r for r in b.recommended(windowed, decide(windowed)) if r.id == "persistent-workers")
    assert found.measured and found.expected_speedup == pytest.approx(estimated.expected_speedup, abs=0.005)
    # measured inside its noise (1.15x against ±20%), or slower: not advice, but said as evidence
    for gain in (1.15, 1.01, 0.89):
        flat = dataclasses.replace(f, tried=(tried("persistent-workers", gain),))
        ranked, said = rec.advise(flat, decide(flat))
        assert "persistent-workers" not in {r.id for r in ranked}
        assert [s.kind for s in said] == [FindingKind.NO_GAIN]
        assert said[0].sentence.startswith("Measured, not advised: keep the workers between epochs")
        left = gain / 1.2 if gain > 1 else gain  # a gain, at the low edge of the runs' ±20%; a slowdown as measured
        assert f"({left:.2f}x, no gain beyond the noise" in said[0].sentence
    planned = trials.to_verify(decide(f), ["persistent-workers"], f.loader, False, ())
    assert planned == (FixSpec.parse("persistent-workers"),)
    compute = decide(facts(wait=0.01, synthetic=b.summary("synthetic", throughput=101.0)))
    assert compute.bottleneck is Bottleneck.COMPUTE
    assert trials.to_verify(compute, ["persistent-workers"], f.loader, False, ()) == ()


def test_a_pathologys_fix_its_run_read_faster_stays_advice_however_wide_the_runs_noise() -> None:
    # slow samples stall in-order delivery, so the real run's blocks swing: a run with in_order=False
    # read training 1.99x as fast, but the two runs' windows spread ±139% between them
    f = facts(busy=0.3)
    fix = Recommendation(
        id="deliver-out-of-order",
        title="Let ready batches overtake slow ones",
        detail="d",
        expected_speedup=None,
        measured=False,
    )
    wide = dataclasses.replace(tried("in-order", 1.99), spread=1.39)
    ranked, said = rec.advise(dataclasses.replace(f, tried=(wide,)), decide(f), (fix,))
    found = next(r for r in ranked if r.id == "deliver-out-of-order")
    assert found.measured and found.expected_speedup == 1.0 and not said  # nothing left to promise, yet advice
    assert "advised on that evidence" in found.detail
    # read slower than the real run: evidence, not advice
    ranked, said = rec.advise(dataclasses.replace(f, tried=(tried("in-order", 0.9),)), decide(f), (fix,))
    assert "deliver-out-of-order" not in {r.id for r in ranked}
    assert [s.kind for s in said] == [FindingKind.NO_GAIN]
    # a rule's own advice whose run read it faster inside that noise is still evidence
    swinging = dataclasses.replace(tried("persistent-workers", 1.99), spread=1.39)
    flat = dataclasses.replace(f, epoch_startup_s=(40.0, 42.0), startup_busy=0.05, tried=(swinging,))
    ranked, said = rec.advise(flat, decide(flat))
    assert "persistent-workers" not in {r.id for r in ranked} and [s.kind for s in said] == [FindingKind.NO_GAIN]


def test_whole_batch_advice_stays_when_the_ceiling_cannot_resolve_the_handoff() -> None:
    # free inputs measured slower than the real run (noise around a small handoff cost): the gain
    # is unknown, not none, and an input-bound verdict still says what to do
    tensors = {"dataset_type": "TensorDataset"}
    f = facts(wait=0.15, busy=0.1, system=0.97, loader=tensors, synthetic=b.summary("synthetic", throughput=87.0))
    v = decide(f)
    assert v.bottleneck is Bottleneck.CPU and v.speedup_ceiling is not None and v.speedup_ceiling < 1
    found = fire(rec.whole_batches, f)
    assert found is not None and found.expected_speedup is None
    assert "index-whole-batches" in [r.id for r in b.recommended(f, v)]


def test_a_fix_whose_run_fed_training_other_batches_is_never_advised_however_fast() -> None:
    f = facts(busy=0.1, epoch_startup_s=(40.0, 42.0), startup_busy=0.05)
    changed = dataclasses.replace(
        tried("persistent-workers", 1.6),
        same_batches=False,
        batches="changes the batches: batch 0 holds list[2], the unchanged script's list[3]",
    )
    unsafe = dataclasses.replace(f, tried=(changed,))
    ranked, said = rec.advise(unsafe, decide(unsafe))
    assert "persistent-workers" not in {r.id for r in ranked}
    assert [s.kind for s in said] == [FindingKind.CHANGES_THE_DATA]
    assert said[0].sentence.startswith("Measured 1.60x, not advised: keep the workers between epochs")
    assert "the run with persistent-workers applied changes the batches: batch 0 holds list[2]" in said[0].sentence
    # the same batches, or nothing compared: advice as before
    for same in (True, None):
        kept = dataclasses.replace(f, tried=(dataclasses.replace(changed, same_batches=same),))
        assert "persistent-workers" in {r.id for r in b.recommended(kept, decide(kept))}
