#!/usr/bin/env python3
"""The augmentation example trained in plain Python, without fastload, timed epoch by epoch.

    python scripts/bench_first_epoch.py [--epochs 4] [--workers 2] [--batch-size 32] [--persistent-workers]
                                        [--whole]

Prints each epoch's samples/s from its 8th batch on (``--whole``: from ``iter()`` to its last
step, its workers' start-up included, as training experiences it), and what its DataLoader workers cost per
batch: user and kernel CPU time and minor page faults (``getrusage(RUSAGE_CHILDREN)``: each
epoch's workers have exited when it ends). With ``--persistent-workers`` the first epoch's workers
serve every epoch and are counted once, at the end, over all batches. Run it as it is and with glibc's
thresholds fixed (``MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=134217728``) to see
what the first epoch's workers inherit from a main process that has not trained yet.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fastload_cli" / "examples"))

TIMED_FROM = 8  # batches of each epoch left out: its start-up and the workers' first prefetched ones


def epoch(loader, model, optimizer, whole: bool) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """One epoch of training: its samples/s (from its ``TIMED_FROM``-th batch, or ``whole``) and batches."""
    import torch

    started, samples, batches = time.perf_counter(), 0, 0
    for batches, (inputs, labels) in enumerate(loader, 1):
        if batches == TIMED_FROM and not whole:
            started, samples = time.perf_counter(), 0
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        samples += len(labels)
    return samples / (time.perf_counter() - started), batches


def workers_cost(before: resource.struct_rusage, batches: int, wait_s: float) -> tuple[resource.struct_rusage, str]:
    """What the workers that exited since ``before`` cost per batch, once they have had ``wait_s`` to exit."""
    time.sleep(wait_s)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, kernel = (after.ru_utime - before.ru_utime) / batches, (after.ru_stime - before.ru_stime) / batches
    faults = (after.ru_minflt - before.ru_minflt) / batches
    return after, f"user {1000 * user:.1f} ms, kernel {1000 * kernel:.1f} ms, {faults:,.0f} minor faults"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--persistent-workers", action="store_true")
    parser.add_argument("--whole", action="store_true", help="time each epoch whole, from iter() on")
    args = parser.parse_args()

    import torch
    from augmentation_heavy import build_loader, build_model

    torch.manual_seed(0)
    loader = build_loader(args.batch_size, args.workers)
    if args.persistent_workers:
        loader = torch.utils.data.DataLoader(
            loader.dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
            drop_last=True, persistent_workers=True,
        )  # fmt: skip
    model = build_model(len(loader.dataset.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = 0
    for n in range(args.epochs):
        rate, batches = epoch(loader, model, optimizer, args.whole)
        total += batches
        if args.persistent_workers:
            print(f"epoch {n}: {rate:.1f} samples/s", flush=True)
            continue
        before, cost = workers_cost(before, batches, 0.5)  # the epoch's workers exit and are counted
        print(f"epoch {n}: {rate:.1f} samples/s; workers per batch: {cost}", flush=True)
    if args.persistent_workers:
        del loader  # the workers exit and are counted
        print(f"all epochs, workers per batch: {workers_cost(before, total, 1.0)[1]}", flush=True)


if __name__ == "__main__":
    main()
