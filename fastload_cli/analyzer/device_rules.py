"""Recommendation rules that rest on the breakdown, the batch's tensors, or training on CUDA."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice import bounded, cited, input_bound, loader_change
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import dims, pct, size
from fastload_cli.records import Bottleneck, FindingKind, Recommendation, Verdict


def pin_memory(f: Facts, v: Verdict) -> Recommendation | None:
    """Training on CUDA from pageable host memory, where the copies measurably cost the step."""
    loader = f.loader
    if not f.cuda_in_use or loader is None or loader.pin_memory or not f.copies_cost:
        return None
    per_batch = f" ({size(f.batch.bytes_per_batch)} per batch)" if f.batch is not None else ""
    return Recommendation(
        id="pin-memory",
        title="Pin host memory and copy asynchronously: pin_memory=True, non_blocking=True",
        detail=(
            f"The script trains on CUDA, and its batches{per_batch} come from pageable memory, so each copy to "
            "the GPU is staged and blocks the host. Change the loader and the copy to:\n"
            f"    {loader_change(loader, [('pin_memory', True)])}\n"
            "    images = images.cuda(non_blocking=True)"
        ),
        expected_speedup=None,
        measured=False,
        evidence=("pin_memory=False while training on CUDA.",),
    )


def _step_share(f: Facts, kind: str) -> float:
    return sum(s.share for s in f.breakdown.steps if s.kind == kind) if f.breakdown is not None else 0.0


def cache_in_ram(f: Facts, v: Verdict) -> Recommendation | None:
    """Reading and decoding dominate, and the decoded dataset fits in memory."""
    loader, found = f.loader, f.breakdown
    share = _step_share(f, "getitem")
    if not input_bound(v) or found is None or share < th.BREAKDOWN_DOMINANT or loader is None:
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
    if found is None or not found.steps or batch is None or not input_bound(v):
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
    if not f.cores_saturated:
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
            f"The CPUs were {pct(real.system_cpu_busy_fraction or 0.0)} busy and augmentation is most of the "
            "loading work. "
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
    """Float32 images built on the CPU and copied to the GPU, where the copies measurably cost the
    step: send uint8, normalise on the device."""
    batch = f.batch
    if not f.cuda_in_use or batch is None or not f.copies_cost:
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


def decode_on_gpu(f: Facts, v: Verdict) -> Recommendation | None:
    """CPU-bound loading on a CUDA machine that the cores this process may use cannot feed at the
    rate the step takes with free inputs, however many workers (the capacity line, ``cause.capacity``):
    decode and augment on the GPU."""
    needed, cores, line = f.loading_cores_needed, f.cores_per_rank, cited(v, FindingKind.CAPACITY)
    if v.bottleneck is not Bottleneck.CPU or not line or needed is None or not cores or needed <= cores:
        return None
    return Recommendation(
        id="decode-on-gpu",
        title=f"Decode and augment on the GPU: feeding it takes {needed:.0f} cores, {cores} are there",
        detail=(
            f"{line[0]} Move JPEG decoding and augmentation to the GPU:\n"
            "    images = torchvision.io.decode_jpeg(list_of_encoded, device='cuda')  # batched, nvJPEG\n"
            "    images = v2.Compose([...])(images)  # torchvision.transforms.v2 on CUDA tensors\n"
            "torchcodec's CUDA decoder, NVIDIA DALI (with its drop-in for torchvision.transforms.v2) and "
            "nvImageCodec do the same."
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
        evidence=line,
    )
