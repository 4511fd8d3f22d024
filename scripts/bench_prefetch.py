#!/usr/bin/env python3
"""fastload's CUDA-stream prefetcher against the apex ``data_prefetcher`` pattern, on one script.

    python scripts/bench_prefetch.py [--rounds 3] [--steps 150] [--out results.json] [--dry-run]

The script: ResNet-18 (bf16 autocast) on 256 uint8 images of 224x224 a batch, from a loader with
pinned memory and 8 workers, normalised on the GPU. Three arms, each a plain run of that script in
its own process, alternated round by round:

- ``pinned``: the loop copies each batch itself, ``.cuda(non_blocking=True)`` (the baseline).
- ``fastload``: the loader wrapped in ``fastload_cli.fixes.CudaPrefetcher`` (what
  ``--fix cuda-prefetch`` applies and what fastload recommends writing).
- ``apex``: the prefetcher of NVIDIA apex's ImageNet example: the next batch copied and
  normalised on a side stream at the end of each step, the main stream waiting for it.

Prints images/s per arm (median and range) and the median per-round ratio to ``pinned``; writes
them as JSON with ``--out``. Needs CUDA; ``--dry-run`` checks the arguments and names the arms.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from benchlib import ROOT, alternated, median_range, ratio_of_rounds, write_json

ARMS = ("pinned", "fastload", "apex")
BATCH, WARMUP = 256, 20
MEAN, STD = (0.485 * 255, 0.456 * 255, 0.406 * 255), (0.229 * 255, 0.224 * 255, 0.225 * 255)


class Frames:
    """``count`` random uint8 images and labels, the same few images over and over: loading costs
    a copy, as for a data set already decoded in memory."""

    def __init__(self, count: int) -> None:
        import torch

        self.images = torch.randint(0, 256, (64, 3, 224, 224), dtype=torch.uint8)
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):  # type: ignore[no-untyped-def]
        return self.images[index % len(self.images)], index % 1000


class ApexPrefetcher:
    """The apex ImageNet example's ``data_prefetcher``: copy and normalise the next batch on a side
    stream, make the main stream wait for it, mark the tensors as used there."""

    def __init__(self, loader, mean, std) -> None:  # type: ignore[no-untyped-def]
        import torch

        self.batches, self.stream = iter(loader), torch.cuda.Stream()
        self.mean, self.std = mean, std
        self.preload()

    def preload(self) -> None:
        import torch

        try:
            images, labels = next(self.batches)
        except StopIteration:
            self.next = None
            return
        with torch.cuda.stream(self.stream):
            images = images.cuda(non_blocking=True).float().sub_(self.mean).div_(self.std)
            self.next = images, labels.cuda(non_blocking=True)

    def __iter__(self):  # type: ignore[no-untyped-def]
        import torch

        while self.next is not None:
            torch.cuda.current_stream().wait_stream(self.stream)
            images, labels = self.next
            images.record_stream(torch.cuda.current_stream())
            labels.record_stream(torch.cuda.current_stream())
            self.preload()
            yield images, labels


def batches(arm: str, loader, mean, std):  # type: ignore[no-untyped-def]
    """The arm's batches on the GPU, normalised."""
    if arm == "apex":
        yield from ApexPrefetcher(loader, mean, std)
        return
    if arm == "fastload":
        from fastload_cli.fixes import CudaPrefetcher

        loader = CudaPrefetcher(loader)
    for images, labels in loader:
        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
        yield images.float().sub_(mean).div_(std), labels


def train(arm: str, steps: int) -> float:
    """One arm's training run; its images per second after the warm-up steps."""
    import torch
    import torchvision
    from torch.utils.data import DataLoader

    loader = DataLoader(Frames(BATCH * (steps + WARMUP + 1)), batch_size=BATCH, num_workers=8, pin_memory=True)
    model = torchvision.models.resnet18(num_classes=1000).cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    mean, std = (torch.tensor(v, device="cuda").view(1, 3, 1, 1) for v in (MEAN, STD))
    started = 0.0
    for step, (images, labels) in enumerate(batches(arm, loader, mean, std)):
        if step == WARMUP:
            torch.cuda.synchronize()
            started = time.perf_counter()
        images = images.contiguous(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step == WARMUP + steps - 1:
            break
    torch.cuda.synchronize()
    return steps * BATCH / (time.perf_counter() - started)


def plain_run(arm: str, steps: int) -> float:
    """The arm trained in a process of its own, as a user's script would run."""
    command = [sys.executable, str(Path(__file__)), "--arm", arm, "--steps", str(steps)]
    path = os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))  # fastload_cli.fixes
    done = subprocess.run(command, cwd=ROOT, env=dict(os.environ, PYTHONPATH=path), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the {arm} arm failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return float(done.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150, help="timed steps per run, after the warm-up")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--arm", choices=ARMS, help="train one arm in this process and print its images/s")
    parser.add_argument("--dry-run", action="store_true", help="check the arguments, name the arms, run nothing")
    args = parser.parse_args()
    if args.dry_run:
        print(f"would run: {args.rounds} rounds of {', '.join(ARMS)}, {args.steps} timed steps each")
        return 0
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench_prefetch needs a CUDA GPU (torch.cuda.is_available() is False)")
    if args.arm:
        print(f"images/s {train(args.arm, args.steps):.1f}")
        return 0
    found = alternated({arm: lambda arm=arm: plain_run(arm, args.steps) for arm in ARMS}, args.rounds)
    for arm in ARMS:
        print(f"{arm:<10}{median_range(found[arm])} images/s   x{ratio_of_rounds(found[arm], found['pinned']):.3f}")
    write_json(args.out, {"device": torch.cuda.get_device_name(), "steps": args.steps, "images_per_s": found})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
