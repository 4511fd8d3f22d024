"""Recommendations: each rule fires only on what was measured, and its expected speedup never
exceeds the speedup ceiling (no input-pipeline change can beat a free input pipeline).

A rule is a function ``(Facts, Verdict) -> Recommendation | None``; ``RULES`` lists them in the
order they are shown when their expected gains tie.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fastload_cli.analyzer import search
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice import (
    LOADER_ACTIVITY,
    WHERE,
    bounded,
    capped,
    cited,
    input_bound,
    loader_change,
    pipeline_bound,
    variant_settings,
)
from fastload_cli.analyzer.device_rules import (
    augmentation_to_gpu,
    cache_in_ram,
    decode_on_gpu,
    pin_memory,
    resize_offline,
    uint8_transfer,
)
from fastload_cli.analyzer.facts import speedup
from fastload_cli.analyzer.promises import (
    held,
    inside_noise,
    no_gain,
    promise,
    read_faster,
    tried_without_gain,
    verified,
)
from fastload_cli.analyzer.verdict import Facts
from fastload_cli.formatting import capitalised, pct, size
from fastload_cli.records import Bottleneck, Finding, FindingKind, Recommendation, RunSummary, Verdict

Rule = Callable[[Facts, Verdict], "Recommendation | None"]


def measured_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """The num_workers setting a sweep measured to be faster than the script's own."""
    s = f.sweep
    if s is None or not s.significant or s.recommended_workers is None or s.current_workers is None:
        return None
    if s.speedup is None:
        return None
    n, now = s.recommended_workers, s.current_workers
    extra = f", {s.recommended_variant.replace(',', ', ')}" if s.recommended_variant else ""
    cost = s.memory_cost_bytes
    weighed = f", for {size(cost)} more memory" if cost is not None and cost >= th.SWEEP_WEIGHED_MEMORY else ""
    persistent = [("persistent_workers", True)] if n > 0 else []
    snippet = loader_change(f.loader, [("num_workers", n), *persistent, *variant_settings(s.recommended_variant)])
    return Recommendation(
        id="increase-num-workers" if n > now else "reduce-num-workers",
        title=f"Use num_workers={n}{extra} (now {now}){weighed}",
        detail=(
            f"{search.conclusion(s)} A sweep under the real training step measured it (memory as process-tree "
            f"RSS). {search.returns(s)} Change it to:\n    {snippet}"
        ),
        expected_speedup=capped(max(1.0, search.promised(s)), v.speedup_ceiling),
        measured=True,
        evidence=cited(v, FindingKind.SWEEP),
        num_workers=n,
    )


def more_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """More DataLoader workers, when loading is the limit and there is room for them (an
    estimate: when a sweep ran, ``measured_workers`` speaks instead)."""
    workers, cores, real = f.num_workers, f.cores_per_rank, f.real
    if f.sweep is not None:
        return None
    if not pipeline_bound(f, v) or workers is None or real is None or f.cores_saturated:
        return None  # with every core busy, more workers only share them (the notes say so too)
    if v.bottleneck is Bottleneck.IO:
        target = max(th.IO_WORKERS_SUGGESTED, 2 * workers)
        why = "loading waits on latency, so more loads in flight hide it; this holds past the core count"
    else:
        if cores is None or workers >= cores:
            return None
        target = min(cores, th.CPU_WORKERS_CAP) if workers else max(1, min(cores - 1, th.CPU_WORKERS_CAP))
        if target <= workers:
            return None
        why = f"loading is CPU work and the {cores} cores are not all busy"
        if f.ranks_per_node > 1:
            why = (
                f"loading is CPU work and the node's cores are not all busy; its {f.cpu_count} cores are shared by "
                f"{f.ranks_per_node} ranks, so each rank's loaders have {cores}"
            )
    gain = target / workers if workers else _gain_from_moving_loading(real, target)
    if gain is None:
        return None
    snippet = loader_change(f.loader, [("num_workers", target), ("persistent_workers", True)])
    return Recommendation(
        id="increase-num-workers",
        title=f"Use num_workers={target} (now {workers})",
        detail=f"{capitalised(why)}. Change it to:\n    {snippet}\n"
        "The gain is an estimate (up to the speedup ceiling); `fastload sweep-workers` measures it.",
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=cited(v, *LOADER_ACTIVITY, FindingKind.CORES_FREE, FindingKind.MACHINE_CPU),
        num_workers=target,
    )


def _gain_from_moving_loading(real: RunSummary, workers: int) -> float | None:
    """num_workers=0 -> N: the main thread loads during the wait; workers would load beside the
    step, so a step takes max(compute, load / N) instead of compute + load."""
    if real.throughput_batches_per_s is None or real.data_wait_fraction is None:
        return None
    step_s = 1.0 / real.throughput_batches_per_s
    load_s = real.data_wait_fraction * step_s
    if load_s * 1000 < th.WORKER_HANDOFF_MS:
        return None  # handing batches over between processes would cost more than loading them
    return step_s / max(step_s - load_s, load_s / workers)


def cheaper_augmentation(f: Facts, v: Verdict) -> Recommendation | None:
    """Make augmentation cheaper, when turning it off was measured to be much faster."""
    aug = f.aug_speedup
    if aug is None or aug < th.AUG_SPEEDUP_SIGNIFICANT or not input_bound(v):
        return None
    names = ", ".join(dict.fromkeys(s.split("(")[0] for s in f.substituted)) or "the random transforms"
    gain, how = promise(f, bounded(aug, v.speedup_ceiling), f.no_aug)
    return Recommendation(
        id="reduce-augmentation-cost",
        title=f"Make augmentation cheaper: it costs up to {aug:.1f}x throughput",
        detail=(
            f"Measured: with {names} replaced by deterministic stand-ins, throughput rose {aug:.1f}x. "
            "Apply the expensive transforms to uint8 tensors rather than PIL images or float tensors "
            "(torchvision.transforms.v2), crop before colour and blur operations, or run augmentation "
            "on the GPU (torchvision.transforms.v2 on CUDA tensors, Kornia, NVIDIA DALI)." + how
        ),
        expected_speedup=gain,
        measured=True,
        evidence=cited(v, FindingKind.AUGMENTATION),
    )


def cheaper_samples(f: Facts, v: Verdict) -> Recommendation | None:
    """When all cores are busy loading, only cheaper samples help."""
    real = f.real
    if v.bottleneck is not Bottleneck.CPU or not pipeline_bound(f, v) or real is None or not f.cores_saturated:
        return None
    return Recommendation(
        id="cores-saturated",
        title="All cores are busy: make each sample cheaper to load",
        detail=(
            f"The CPUs were {pct(real.system_cpu_busy_fraction or 0.0)} busy, so more workers will not help. "
            "Decode at the size you train at (pre-resize images offline), cache decoded samples in RAM "
            "when they fit"
            + (", and move augmentation to the GPU." if f.cuda_in_use else ", and make augmentation cheaper.")
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
        evidence=cited(v, FindingKind.CORES_SATURATED, FindingKind.LOADERS_BUSY, FindingKind.LOADERS_COMPETE),
    )


def hide_storage_latency(f: Facts, v: Verdict) -> Recommendation | None:
    """IO-bound: move the data closer, or read it in fewer, larger pieces."""
    if v.bottleneck is not Bottleneck.IO or not pipeline_bound(f, v):
        return None
    cached = capped(speedup(f.cached, f.real), v.speedup_ceiling)  # steady states, as the ceiling
    gain, how = promise(f, cached, f.cached) if cached is not None else (None, "")
    return Recommendation(
        id="faster-storage",
        title="Read from faster storage, or in fewer, larger reads",
        detail=(
            "Loading waits on storage or network latency. Copy the dataset to local disk or a RAM "
            "disk (/dev/shm) before training, cache samples in RAM when the dataset fits, or pack "
            "small files into record files (WebDataset shards, LMDB) read sequentially."
            + (
                f" With every sample read and decoded into memory first (cached), training ran "
                f"{speedup(f.cached, f.real):.2f}x as fast (measured): storage that costs nothing gives that much."
                + how
                if cached is not None
                else ""
            )
        ),
        expected_speedup=gain if cached is not None else bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=cached is not None,
        evidence=cited(
            v,
            FindingKind.LOADERS_IDLE,
            FindingKind.LOADERS_MIXED,
            FindingKind.KERNEL_READS,
            FindingKind.IOWAIT,
            FindingKind.READ_RATE,
        ),
    )


def step_is_the_limit(f: Facts, v: Verdict) -> Recommendation | None:
    """Compute- or host-bound, as the synthetic run measured it: say plainly that input work will
    not help. Without that run the wait alone cannot say it (on a CPU-only machine loading also
    slows the step it runs beside)."""
    if v.bottleneck not in (Bottleneck.COMPUTE, Bottleneck.HOST) or v.speedup_ceiling is None:
        return None
    if f.cuda_in_use:
        hints = (
            "mixed precision (torch.autocast with bfloat16), channels_last for convolutions, a larger "
            "batch, torch.compile, and CUDA graphs when kernels are small"
        )
    else:
        hints = "a smaller or cheaper model, a larger batch, torch.compile, or training on a GPU"
    return Recommendation(
        id="step-is-the-limit",
        title="The training step is the limit: faster data loading will not help",
        detail=(
            "Measured: a free input pipeline changes throughput by at most the ceiling. "
            f"What usually helps (not measured here): {hints}."
        ),
        # input work gains nothing; a ceiling under 1 is noise, never a loss to quote as measured
        expected_speedup=1.0 if v.speedup_ceiling >= 1.0 else None,
        measured=True,
        evidence=cited(v, FindingKind.DATA_WAIT, FindingKind.CEILING, FindingKind.CEILING_UNEXPLAINED),
    )


def straggler_input(f: Facts, v: Verdict) -> Recommendation | None:
    """A data-parallel job whose straggler's own input pipeline holds it back, with what freeing
    it alone gave the job measured."""
    freed = next(iter(v.of(FindingKind.STRAGGLER_FREED)), None)
    gain = freed.values.get("job_gain") if freed is not None else None
    rank = v.slowest_rank
    if gain is None or rank is None or gain <= 1 + f.noise:
        return None
    return Recommendation(
        id="straggler-input",
        title=f"Make rank {rank}'s input pipeline keep up with the other ranks'",
        detail=(
            f"Every rank waits for rank {rank} at each step's all-reduce, and rank {rank} waits for its data. "
            "Look for what differs on its side: its shard (larger or slower samples), its node's storage, "
            "or fewer cores for its workers; more workers or prefetch on that rank alone also help. "
            f"Measured: with its input pipeline free the job ran {gain:.2f}x as fast."
        ),
        expected_speedup=capped(round(gain, 2), f.ceiling),
        measured=True,
        evidence=cited(v, FindingKind.STRAGGLER, FindingKind.STRAGGLER_FREED),
    )


def straggler_step(f: Facts, v: Verdict) -> Recommendation | None:
    """A data-parallel job whose straggler's step is slower than the others': the gain of bringing
    it to theirs, estimated from the others' busy time."""
    lagging = next(iter(v.of(FindingKind.STRAGGLER)), None)
    if lagging is None or "rank_step_busy_ms" not in lagging.values or v.slowest_rank is None:
        return None
    step, top, middle = (lagging.values.get(k) for k in ("rank_step_ms", "rank_step_busy_ms", "others_step_busy_ms"))
    if step is None or top is None or middle is None or step <= 0:
        return None
    gain = step / max(step - (top - middle), middle)
    rank = v.slowest_rank
    return Recommendation(
        id="straggler-step",
        title=f"Find why rank {rank}'s step is slower than the other ranks'",
        detail=(
            f"Every rank waits for rank {rank} at each step's all-reduce. Its step does more work or runs "
            "on slower hardware: a slower or throttled GPU (check its clocks and temperature), an uneven "
            "shard (longer sequences, larger images), or other work on its device or cores. "
            f"Estimated: with its step as quick as the others', the job would run {gain:.2f}x as fast."
        ),
        expected_speedup=round(gain, 2),
        measured=False,
        evidence=cited(v, FindingKind.STRAGGLER),
    )


def in_memory_without_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """Workers for batches cheaper to build than to hand over: every batch crosses processes for
    nothing."""
    loader, why = f.loader, f.cheap_batches
    if loader is None or why is None or f.sweep is not None:
        return None
    return Recommendation(
        id="workers-are-overhead",
        title=f"Load in the main process: num_workers=0 (now {loader.num_workers})",
        detail=(
            f"{capitalised(why)}. Each worker batch is pickled, passed through shared memory and "
            "unpickled, which costs more than building it. Change it to:\n"
            f"    {loader_change(loader, [('num_workers', 0)])}\n"
            "`fastload sweep-workers` measures both settings under your training step."
        ),
        expected_speedup=None,
        measured=False,
        evidence=(f"Dataset type: {loader.dataset_type}; num_workers={loader.num_workers}.",),
    )


def whole_batches(f: Facts, v: Verdict) -> Recommendation | None:
    """A TensorDataset indexed a sample at a time: each batch is built by one lookup per sample and
    a stack, where one indexing with the batch's indices gives the same batch. Whatever num_workers
    the sweep chose, the per-sample work stays; this removes it."""
    loader = f.loader
    if loader is None or loader.dataset_type != "TensorDataset" or not input_bound(v) or not loader.batch_size:
        return None
    if loader.framework in ("transformers", "timm"):
        return None  # the framework builds the loader; its own options decide how batches are drawn
    sampler = f"BatchSampler(RandomSampler(dataset), batch_size={loader.batch_size}, drop_last=False)"
    return Recommendation(
        id="index-whole-batches",
        title="Index whole batches of the in-memory tensors, not one sample at a time",
        detail=(
            f"The dataset is a TensorDataset: each batch of {loader.batch_size} is built by "
            f"{loader.batch_size} separate lookups and a torch.stack, where indexing the tensors with the "
            "batch's indices gives the same batch in one operation, in the main process. Change it to:\n"
            f"    DataLoader(dataset, batch_size=None, sampler={sampler}, num_workers=0)"
            f"{WHERE.get(loader.framework or '', '')}\n"
            "(SequentialSampler in place of RandomSampler when the loader does not shuffle). The gain is "
            "an estimate, up to the speedup ceiling."
        ),
        # A ceiling inside the noise says nothing of this cost (the verdict rests on the handoff, which
        # the comparison with free inputs barely resolves): the gain is then unknown, not none.
        expected_speedup=v.speedup_ceiling if resolved(v.speedup_ceiling, f.noise) else None,
        measured=False,
        evidence=(f"Dataset type: TensorDataset; batch_size={loader.batch_size}.", *cited(v, FindingKind.CEILING)),
    )


def resolved(ceiling: float | None, noise: float) -> bool:
    """The speedup ceiling is beyond the noise: free inputs measurably sped training up."""
    return ceiling is not None and ceiling >= 1 + noise


def persistent_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """Workers restarted every epoch, at a measurable cost."""
    startup, epoch_s, overhead = f.startup_s, f.epoch_s, f.epoch_overhead_s
    if f.loader is None or startup is None or epoch_s is None or startup < th.STARTUP_NOTABLE_SHARE * epoch_s:
        return None
    assert overhead is not None  # the start-up at least
    return Recommendation(
        id="persistent-workers",
        title="Keep the workers between epochs: persistent_workers=True",
        detail=(
            f"Starting the {f.loader.num_workers} workers took {startup:.2f} s per epoch (measured), "
            f"{100 * startup / epoch_s:.0f}% of an epoch's {epoch_s:.1f} s of steps; without persistent workers "
            "every epoch pays it again. Change it to:\n"
            f"    {loader_change(f.loader, [('num_workers', f.loader.num_workers), ('persistent_workers', True)])}"
        ),
        # Not capped by the speedup ceiling: the steady-state runs it comes from leave start-up out.
        # What an epoch costs besides its start-up and steps (its drain, the script's work between
        # epochs) stays.
        expected_speedup=(epoch_s + overhead) / (epoch_s + max(0.0, overhead - startup)),
        measured=False,
        evidence=(f"Worker start-up per epoch: {startup:.2f} s over {len(f.epoch_startup_s)} epoch(s).",),
    )


def larger_prefetch(f: Facts, v: Verdict) -> Recommendation | None:
    """Spiky waits while the workers idle: a deeper queue smooths them."""
    loader, real, p50, p90 = f.loader, f.real, f.wait_ms_p50, f.wait_ms_p90
    if loader is None or loader.num_workers == 0 or real is None or p50 is None or p90 is None:
        return None
    busy = real.loader_busy_fraction
    if busy is None or busy > th.LOADER_IDLE or p90 < th.WAIT_SPIKE_MIN_MS or p90 < th.WAIT_SPIKY_RATIO * max(p50, 0.1):
        return None
    if not real.throughput_batches_per_s or real.data_wait_fraction is None:
        return None
    step_ms = 1000 / real.throughput_batches_per_s
    if p90 - p50 < th.WAIT_SPIKE_STEP_SHARE * step_ms:
        return None  # spikes of a few ms beside a step of a second are noise, however spiky they look
    factor = 2 * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR)
    spikes_ms = max(0.0, real.data_wait_fraction * step_ms - p50)
    gain = step_ms / (step_ms - spikes_ms) if spikes_ms < step_ms else None
    return Recommendation(
        id="larger-prefetch-factor",
        title=f"Prefetch deeper: prefetch_factor={factor}",
        detail=(
            f"Waits are spiky (median {p50:.1f} ms, 90th percentile {p90:.1f} ms) while the workers are busy only "
            f"{pct(busy)} of the time: they can keep more batches ready. Change it to:\n"
            f"    {loader_change(loader, [('num_workers', loader.num_workers), ('prefetch_factor', factor)])}\n"
            "`fastload sweep-workers --prefetch-factor 2,4,8` measures it."
        ),
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=(f"Wait per step: median {p50:.1f} ms, p90 {p90:.1f} ms; workers busy {pct(busy)}.",),
    )


RULES: tuple[Rule, ...] = (
    measured_workers,
    cheaper_augmentation,
    more_workers,
    in_memory_without_workers,
    whole_batches,
    cheaper_samples,
    decode_on_gpu,
    augmentation_to_gpu,
    cache_in_ram,
    resize_offline,
    persistent_workers,
    larger_prefetch,
    pin_memory,
    uint8_transfer,
    hide_storage_latency,
    step_is_the_limit,
    straggler_input,
    straggler_step,
)


def advise(
    f: Facts, v: Verdict, more: Sequence[Recommendation] = ()
) -> tuple[tuple[Recommendation, ...], tuple[Finding, ...]]:
    """Every rule that fires, and ``more`` (a pathology's fix): a num_workers setting a sweep
    measured first (a one-line change with a measured gain), then measured ones, then by expected
    gain; and, as evidence, those whose runs measured no gain beyond their noise (``no_gain``),
    except a pathology's fix that its run read faster: the pathology advises it (``held``)."""
    fired = [rec for rule in RULES if (rec := rule(f, v)) is not None]
    named = {rec.id for rec in more if read_faster(rec, f)}  # a pathology's fix its run read faster
    found = [held(fix) if fix.id in named else fix for fix in (verified(rec, f) for rec in (*fired, *more))]
    kept = [rec for rec in found if not inside_noise(rec, f) and (rec.id in named or not no_gain(rec))]
    swept = {"increase-num-workers", "reduce-num-workers"} if f.sweep is not None and not _a_trade(f) else set()
    ranked = tuple(sorted(kept, key=lambda r: (r.id not in swept, not r.measured, -_gain(r))))
    return ranked, tuple(tried_without_gain(rec) for rec in found if rec.id not in named and no_gain(rec))


def _a_trade(f: Facts) -> bool:
    """The sweep's setting gains little (under ``SWEEP_WEIGHED_GAIN``) for much more memory: it is
    ranked by its gain like any other measured advice, not put first."""
    s = f.sweep
    cost = s.memory_cost_bytes if s is not None else None
    gain = s.speedup if s is not None else None
    return cost is not None and cost >= th.SWEEP_WEIGHED_MEMORY and gain is not None and gain < th.SWEEP_WEIGHED_GAIN


def _gain(rec: Recommendation) -> float:
    return rec.expected_speedup or 0.0
