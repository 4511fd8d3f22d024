"""Recommendations: each rule fires only on what was measured, and its expected speedup never
exceeds the speedup ceiling (no input-pipeline change can beat a free input pipeline).

A rule is a function ``(Facts, Verdict) -> Recommendation | None``; ``RULES`` lists them in the
order they are shown when their expected gains tie.
"""

from __future__ import annotations

from collections.abc import Callable

from fastload_cli.analyzer import sweep
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.verdict import Facts
from fastload_cli.formatting import capitalised, dims, pct, size
from fastload_cli.records import Bottleneck, FindingKind, Recommendation, RunSummary, Verdict

Rule = Callable[[Facts, Verdict], "Recommendation | None"]


# The findings that say what the loading processes did.
LOADER_ACTIVITY = (
    FindingKind.LOADERS_BUSY,
    FindingKind.LOADERS_IDLE,
    FindingKind.LOADERS_MIXED,
    FindingKind.HANDOFF,
    FindingKind.KERNEL_READS,
)


def cited(v: Verdict, *kinds: FindingKind) -> tuple[str, ...]:
    """The verdict's evidence a recommendation rests on: its findings of these kinds."""
    return tuple(finding.sentence for finding in v.of(*kinds))


def bounded(gain: float | None, ceiling: float | None) -> float | None:
    """A gain capped by the ceiling; unknown without one. Not rounded here: reporters round the
    gain and the ceiling alike, so a gain equal to the ceiling is shown equal to it.

    A gain is at least 1.0x unless the ceiling itself is below 1 (the input pipeline cannot help).
    """
    if gain is None or ceiling is None:
        return None
    return min(max(1.0, gain), ceiling)


def _input_bound(v: Verdict) -> bool:
    return v.bottleneck in (Bottleneck.CPU, Bottleneck.IO)


def _pipeline_bound(f: Facts, v: Verdict) -> bool:
    """Input-bound by building batches in the steady state: not by workers starting again every
    epoch, nor by handing cheap batches over from workers (their own rules speak for those)."""
    return _input_bound(v) and not f.restarts_dominate and f.cheap_batches is None


def capped(gain: float | None, ceiling: float | None) -> float | None:
    """A measured gain, capped by the ceiling when one was measured."""
    if gain is None:
        return None
    return gain if ceiling is None else min(gain, ceiling)


def measured_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """The num_workers setting a sweep measured to be faster than the script's own."""
    s = f.sweep
    if s is None or not s.significant or s.recommended_workers is None or s.current_workers is None:
        return None
    n, now = s.recommended_workers, s.current_workers
    extra = f", {s.recommended_variant.replace(',', ', ')}" if s.recommended_variant else ""
    persistent = ", persistent_workers=True" if n > 0 else ""
    snippet = f"DataLoader(dataset, ..., num_workers={n}{persistent}{extra})"
    return Recommendation(
        id="increase-num-workers" if n > now else "reduce-num-workers",
        title=f"Use num_workers={n}{extra} (now {now})",
        detail=(
            f"{sweep.conclusion(s)} A sweep under the real training step measured it (noise ±{100 * s.noise:.0f}%, "
            f"memory as process-tree RSS). {sweep.returns(s)} Change the loader to:\n    {snippet}"
        ),
        expected_speedup=capped(s.speedup, v.speedup_ceiling),
        measured=True,
        evidence=cited(v, FindingKind.SWEEP),
    )


def more_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """More DataLoader workers, when loading is the limit and there is room for them (an
    estimate: when a sweep ran, ``measured_workers`` speaks instead)."""
    workers, cores, real = f.num_workers, f.cpu_count, f.real
    if f.sweep is not None:
        return None
    if not _pipeline_bound(f, v) or workers is None or real is None:
        return None
    if v.bottleneck is Bottleneck.IO:
        target = max(th.IO_WORKERS_SUGGESTED, 2 * workers)
        why = "loading waits on latency, so more loads in flight hide it; this holds past the core count"
    else:
        saturated = real.system_cpu_busy_fraction is not None and real.system_cpu_busy_fraction >= th.CPU_SATURATED
        if cores is None or saturated or workers >= cores:
            return None
        target = min(cores, th.CPU_WORKERS_CAP) if workers else max(1, min(cores - 1, th.CPU_WORKERS_CAP))
        if target <= workers:
            return None
        why = f"loading is CPU work and the {cores} cores are not all busy"
    gain = target / workers if workers else _gain_from_moving_loading(real, target)
    if gain is None:
        return None
    snippet = f"DataLoader(dataset, ..., num_workers={target}, persistent_workers=True)"
    return Recommendation(
        id="increase-num-workers",
        title=f"Use num_workers={target} (now {workers})",
        detail=f"{capitalised(why)}. Change the loader to:\n    {snippet}\n"
        "The gain is an estimate (up to the speedup ceiling); `fastload sweep-workers` measures it.",
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=cited(v, *LOADER_ACTIVITY, FindingKind.CORES_FREE, FindingKind.MACHINE_CPU),
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
    if aug is None or aug < th.AUG_SPEEDUP_SIGNIFICANT or not _input_bound(v):
        return None
    names = ", ".join(dict.fromkeys(s.split("(")[0] for s in f.substituted)) or "the random transforms"
    return Recommendation(
        id="reduce-augmentation-cost",
        title=f"Make augmentation cheaper: it costs up to {aug:.1f}x throughput",
        detail=(
            f"Measured: with {names} replaced by deterministic stand-ins, throughput rose {aug:.1f}x. "
            "Apply the expensive transforms to uint8 tensors rather than PIL images or float tensors "
            "(torchvision.transforms.v2), crop before colour and blur operations, or run augmentation "
            "on the GPU (torchvision.transforms.v2 on CUDA tensors, Kornia, NVIDIA DALI)."
        ),
        expected_speedup=bounded(aug, v.speedup_ceiling),
        measured=True,
        evidence=cited(v, FindingKind.AUGMENTATION),
    )


def cheaper_samples(f: Facts, v: Verdict) -> Recommendation | None:
    """When all cores are busy loading, only cheaper samples help."""
    real = f.real
    if v.bottleneck is not Bottleneck.CPU or not _pipeline_bound(f, v) or real is None:
        return None
    if real.system_cpu_busy_fraction is None or real.system_cpu_busy_fraction < th.CPU_SATURATED:
        return None
    return Recommendation(
        id="cores-saturated",
        title="All cores are busy: make each sample cheaper to load",
        detail=(
            f"The CPUs were {pct(real.system_cpu_busy_fraction)} busy, so more workers will not help. "
            "Decode at the size you train at (pre-resize images offline), cache decoded samples in RAM "
            "when they fit"
            + (", and move augmentation to the GPU." if f.cuda_in_use else ", and make augmentation cheaper.")
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
        evidence=cited(v, FindingKind.CORES_SATURATED, FindingKind.LOADERS_BUSY),
    )


def hide_storage_latency(f: Facts, v: Verdict) -> Recommendation | None:
    """IO-bound: move the data closer, or read it in fewer, larger pieces."""
    if v.bottleneck is not Bottleneck.IO or not _pipeline_bound(f, v):
        return None
    return Recommendation(
        id="faster-storage",
        title="Read from faster storage, or in fewer, larger reads",
        detail=(
            "Loading waits on storage or network latency. Copy the dataset to local disk or a RAM "
            "disk (/dev/shm) before training, cache samples in RAM when the dataset fits, or pack "
            "small files into record files (WebDataset shards, LMDB) read sequentially."
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
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
        expected_speedup=bounded(1.0, v.speedup_ceiling),
        measured=True,
        evidence=cited(v, FindingKind.DATA_WAIT, FindingKind.CEILING, FindingKind.CEILING_UNEXPLAINED),
    )


def _workers(f: Facts) -> int:
    return f.loader.num_workers if f.loader is not None else 0


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
            "unpickled, which costs more than building it. Change the loader to:\n"
            "    DataLoader(dataset, ..., num_workers=0)\n"
            "`fastload sweep-workers` measures both settings under your training step."
        ),
        expected_speedup=None,
        measured=False,
        evidence=(f"Dataset type: {loader.dataset_type}; num_workers={loader.num_workers}.",),
    )


def persistent_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """Workers restarted every epoch, at a measurable cost."""
    startup, epoch_s = f.startup_s, f.epoch_s
    if f.loader is None or startup is None or epoch_s is None or startup < th.STARTUP_NOTABLE_SHARE * epoch_s:
        return None
    return Recommendation(
        id="persistent-workers",
        title="Keep the workers between epochs: persistent_workers=True",
        detail=(
            f"Starting the {f.loader.num_workers} workers took {startup:.2f} s per epoch (measured), "
            f"{100 * startup / epoch_s:.0f}% of an epoch's {epoch_s:.1f} s of steps; without persistent workers "
            "every epoch pays it again. Change the loader to:\n"
            f"    DataLoader(dataset, ..., num_workers={f.loader.num_workers}, persistent_workers=True)"
        ),
        # Not capped by the speedup ceiling: the steady-state runs it comes from leave start-up out.
        expected_speedup=(epoch_s + startup) / epoch_s,
        measured=False,
        evidence=(f"Worker start-up per epoch: {startup:.2f} s over {len(f.epoch_startup_s)} epoch(s).",),
    )


def pin_memory(f: Facts, v: Verdict) -> Recommendation | None:
    """Training on CUDA from pageable host memory."""
    loader = f.loader
    if not f.cuda_in_use or loader is None or loader.pin_memory:
        return None
    per_batch = f" ({size(f.batch.bytes_per_batch)} per batch)" if f.batch is not None else ""
    return Recommendation(
        id="pin-memory",
        title="Pin host memory and copy asynchronously: pin_memory=True, non_blocking=True",
        detail=(
            f"The script trains on CUDA, and its batches{per_batch} come from pageable memory, so each copy to "
            "the GPU is staged and blocks the host. Change the loader and the copy to:\n"
            "    DataLoader(dataset, ..., pin_memory=True)\n"
            "    images = images.cuda(non_blocking=True)"
        ),
        expected_speedup=None,
        measured=False,
        evidence=("pin_memory=False while training on CUDA.",),
    )


def larger_prefetch(f: Facts, v: Verdict) -> Recommendation | None:
    """Spiky waits while the workers idle: a deeper queue smooths them."""
    loader, real, p50, p90 = f.loader, f.real, f.wait_ms_p50, f.wait_ms_p90
    if loader is None or loader.num_workers == 0 or real is None or p50 is None or p90 is None:
        return None
    busy = real.loader_busy_fraction
    if busy is None or busy > th.LOADER_IDLE or p90 < th.WAIT_SPIKE_MIN_MS or p90 < th.WAIT_SPIKY_RATIO * max(p50, 0.1):
        return None
    factor = 2 * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR)
    gain = None
    if real.throughput_batches_per_s and real.data_wait_fraction is not None:
        step_ms = 1000 / real.throughput_batches_per_s
        spikes_ms = max(0.0, real.data_wait_fraction * step_ms - p50)
        gain = step_ms / (step_ms - spikes_ms) if spikes_ms < step_ms else None
    return Recommendation(
        id="larger-prefetch-factor",
        title=f"Prefetch deeper: prefetch_factor={factor}",
        detail=(
            f"Waits are spiky (median {p50:.1f} ms, 90th percentile {p90:.1f} ms) while the workers are busy only "
            f"{pct(busy)} of the time: they can keep more batches ready. Change the loader to:\n"
            f"    DataLoader(dataset, ..., num_workers={loader.num_workers}, prefetch_factor={factor})\n"
            "`fastload sweep-workers --prefetch-factor 2,4,8` measures it."
        ),
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=(f"Wait per step: median {p50:.1f} ms, p90 {p90:.1f} ms; workers busy {pct(busy)}.",),
    )


def _step_share(f: Facts, kind: str) -> float:
    return sum(s.share for s in f.breakdown.steps if s.kind == kind) if f.breakdown is not None else 0.0


def cache_in_ram(f: Facts, v: Verdict) -> Recommendation | None:
    """Reading and decoding dominate, and the decoded dataset fits in memory."""
    loader, found = f.loader, f.breakdown
    share = _step_share(f, "getitem")
    if not _input_bound(v) or found is None or share < th.BREAKDOWN_DOMINANT or loader is None:
        return None
    if loader.dataset_len is None or f.memory_available_bytes is None:
        return None
    per_sample = _decoded_bytes(f)
    if per_sample is None:
        return None
    needed = per_sample * loader.dataset_len
    if needed > th.RAM_CACHE_SHARE * f.memory_available_bytes:
        return None
    return Recommendation(
        id="cache-decoded-samples",
        title=f"Cache decoded samples in RAM: the dataset needs about {size(needed)}",
        detail=(
            f"Reading and decoding take {pct(share)} of a sample's loading time (measured), and the "
            f"{loader.dataset_len:,} decoded samples need about {size(needed)} ({size(per_sample)} each) of the "
            f"{size(f.memory_available_bytes)} free. Decode once, keep the results, and apply only the random "
            "transforms per epoch, e.g.:\n"
            "    self.cache = [decode(path) for path in self.paths]  # in __init__, or filled on first use"
        ),
        expected_speedup=bounded(1 / (1 - share) if share < 1 else None, v.speedup_ceiling),
        measured=False,
        evidence=(f"Breakdown: read and decode {pct(share)} of {found.ms_per_sample:.1f} ms per sample.",),
    )


def _decoded_bytes(f: Facts) -> float | None:
    """Bytes of one decoded sample: the first step's input image, else the batch's bytes per sample."""
    for step in f.breakdown.steps if f.breakdown is not None else ():
        if step.input_pixels is not None:
            return step.input_pixels * 3.0
    return f.batch.bytes_per_sample if f.batch is not None else None


def resize_offline(f: Facts, v: Verdict) -> Recommendation | None:
    """The most expensive step resizes large images: resize them once, offline."""
    found, batch = f.breakdown, f.batch
    if found is None or not found.steps or batch is None or not _input_bound(v):
        return None
    top = next((s for s in found.steps if s.kind == "transform"), None)
    if top is None or top is not found.steps[0] or "Resize" not in top.name:
        return None
    pixels = top.input_pixels
    size_text = dims(top.input_kind, top.input_shape)
    trained = max((leaf.shape[-1] * leaf.shape[-2] for leaf in batch.leaves if len(leaf.shape) >= 3), default=None)
    if pixels is None or not trained or pixels < th.RESIZE_LARGE_FACTOR * trained:
        return None
    return Recommendation(
        id="resize-offline",
        title=f"Resize the images offline: {size_text}s are cut to {trained**0.5:.0f}px every epoch",
        detail=(
            f"{top.name.split('(')[0]} is the most expensive step ({pct(top.share)} of a sample's loading time, "
            f"measured) and its inputs are {size_text}s, {pixels / trained:.0f}x the pixels the model trains on. "
            "Store the dataset at about the training size (keeping some margin for random crops), e.g. with "
            "PIL's Image.thumbnail once per file; decoding smaller files is faster too."
        ),
        expected_speedup=bounded(1 / (1 - top.share), v.speedup_ceiling),
        measured=False,
        evidence=(f"Breakdown: {top.name.split('(')[0]} {top.ms_per_sample:.2f} ms per sample ({pct(top.share)}).",),
    )


def augmentation_to_gpu(f: Facts, v: Verdict) -> Recommendation | None:
    """Augmentation dominates and the cores are full: on a CUDA machine, move it to the GPU."""
    real = f.real
    if not f.cuda_in_use or v.bottleneck is not Bottleneck.CPU or real is None:
        return None
    if real.system_cpu_busy_fraction is None or real.system_cpu_busy_fraction < th.CPU_SATURATED:
        return None
    random_share = sum(
        s.share for s in (f.breakdown.steps if f.breakdown else ()) if any(a in s.name for a in f.augmentations)
    )
    aug = f.aug_speedup
    if random_share < th.BREAKDOWN_DOMINANT and (aug is None or aug < th.AUG_SPEEDUP_SIGNIFICANT):
        return None
    return Recommendation(
        id="augmentation-on-gpu",
        title="Move augmentation to the GPU (or NVIDIA DALI): the CPU cores are full",
        detail=(
            f"The CPUs were {pct(real.system_cpu_busy_fraction)} busy and augmentation is most of the loading work. "
            "Load uint8 tensors in the workers and augment batches on the GPU:\n"
            "    from torchvision.transforms import v2\n"
            "    augment = v2.Compose([v2.RandomResizedCrop(224), v2.RandomHorizontalFlip(), v2.ColorJitter(0.4)])\n"
            "    images = augment(images.cuda(non_blocking=True))\n"
            "Kornia and NVIDIA DALI do the same, DALI including JPEG decoding."
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
        evidence=cited(v, FindingKind.CORES_SATURATED, FindingKind.LOADERS_BUSY, FindingKind.AUGMENTATION),
    )


def uint8_transfer(f: Facts, v: Verdict) -> Recommendation | None:
    """Float32 images built on the CPU and copied to the GPU: send uint8, normalise on the device."""
    batch = f.batch
    if not f.cuda_in_use or batch is None:
        return None
    images = [
        leaf
        for leaf in batch.leaves
        if leaf.dtype in ("torch.float32", "float32") and len(leaf.shape) == 4 and leaf.shape[1] in (1, 3)
    ]
    if not images:
        return None
    saved = sum(leaf.nbytes for leaf in images) * 3 // 4
    return Recommendation(
        id="uint8-transfer",
        title=f"Send uint8 images and normalise on the GPU: {size(saved)} less to copy per step",
        detail=(
            "The batch's images are float32, made on the CPU: four bytes per pixel channel cross to the GPU "
            "where one would do, and the CPU spends time converting. Keep them uint8 in the dataset "
            "(drop ToTensor/Normalize) and convert on the device:\n"
            "    images = images.cuda(non_blocking=True).float().div_(255)\n"
            "    images = (images - mean) / std  # mean, std as CUDA tensors"
        ),
        expected_speedup=None,
        measured=False,
        evidence=(f"Batch images: {', '.join(f'{leaf.dtype} {list(leaf.shape)}' for leaf in images)}.",),
    )


RULES: tuple[Rule, ...] = (
    measured_workers,
    cheaper_augmentation,
    more_workers,
    in_memory_without_workers,
    cheaper_samples,
    augmentation_to_gpu,
    cache_in_ram,
    resize_offline,
    persistent_workers,
    larger_prefetch,
    pin_memory,
    uint8_transfer,
    hide_storage_latency,
    step_is_the_limit,
)


def recommend(f: Facts, v: Verdict) -> tuple[Recommendation, ...]:
    """Every rule that fires: a num_workers setting a sweep measured first (a one-line change with a
    measured gain), then measured ones, then by expected gain."""
    found = [rec for rule in RULES if (rec := rule(f, v)) is not None]
    swept = {"increase-num-workers", "reduce-num-workers"} if f.sweep is not None else set()
    return tuple(sorted(found, key=lambda r: (r.id not in swept, not r.measured, -(r.expected_speedup or 0.0))))
