"""What each sample costs to make: cheaper augmentation, cheaper samples, decoding on the GPU,
augmentation on the GPU, images resized offline to the size trained at."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice.promises import (
    promise,
)
from fastload_cli.analyzer.advice.shared import (
    bounded,
    cited,
    input_bound,
    pipeline_bound,
)
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import dims, pct
from fastload_cli.records import Bottleneck, FindingKind, Recommendation, Verdict


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


def step_share(f: Facts, kind: str) -> float:
    return sum(s.share for s in f.breakdown.steps if s.kind == kind) if f.breakdown is not None else 0.0


def decoded_bytes(f: Facts) -> float | None:
    """Bytes of one decoded sample: the first step's input image, else the batch's bytes per sample."""
    for step in f.breakdown.steps if f.breakdown is not None else ():
        if step.input_pixels is not None:
            return step.input_pixels * 3.0
    return f.batch.bytes_per_sample if f.batch is not None else None
