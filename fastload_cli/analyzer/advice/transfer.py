"""The copy to the GPU: pinned memory, and uint8 sent with normalisation on the device."""

from __future__ import annotations

from fastload_cli.analyzer.advice.shared import (
    loader_change,
)
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import size
from fastload_cli.records import Recommendation, Verdict


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
