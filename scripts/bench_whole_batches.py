#!/usr/bin/env python3
"""What `index-whole-batches` is worth on the in-memory-tensors zoo case: the same TensorDataset and
MLP as scripts/zoo/in_memory_tensors.py, trained with four loader shapes, interleaved round by round.

    python scripts/bench_whole_batches.py [--rounds 3] [--steps 120]

Arms: the case as written (a sample at a time, num_workers=4); a sample at a time in the main
process (num_workers=0, what `reduce-num-workers` advises); and a whole batch per indexing
(batch_size=None with a BatchSampler) with 0 and 2 workers. Each arm skips 10 warm-up steps, then
times ``--steps`` training steps. Prints each arm's median samples/s and its median ratio to the
case as written.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

BATCH = 256
WARM_UP = 10


def arms(dataset: TensorDataset) -> dict[str, DataLoader]:
    def whole(workers: int) -> DataLoader:
        sampler = BatchSampler(RandomSampler(dataset), BATCH, drop_last=False)
        return DataLoader(dataset, batch_size=None, sampler=sampler, num_workers=workers)

    return {
        "per-sample, num_workers=4 (as written)": DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=4),
        "per-sample, num_workers=0": DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=0),
        "whole batches, num_workers=0": whole(0),
        "whole batches, num_workers=2": whole(2),
    }


def samples_per_s(loader: DataLoader, model: nn.Module, steps: int) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = iter(loader)
    for _ in range(WARM_UP):
        next(batches)
    started, done = time.perf_counter(), 0
    for x, y in batches:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        done += 1
        if done == steps:
            break
    return done * BATCH / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=120)
    options = parser.parse_args()
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(50_000, 512), torch.randint(0, 10, (50_000,)))
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    loaders = arms(dataset)
    rates: dict[str, list[float]] = {name: [] for name in loaders}
    for _ in range(options.rounds):
        for name, loader in loaders.items():
            rates[name].append(samples_per_s(loader, model, options.steps))
    base = rates[next(iter(loaders))]
    for name, got in rates.items():
        ratio = statistics.median(a / b for a, b in zip(got, base, strict=True))
        print(f"{name:40s} {statistics.median(got):8.0f} samples/s  {ratio:.2f}x")


if __name__ == "__main__":
    main()
