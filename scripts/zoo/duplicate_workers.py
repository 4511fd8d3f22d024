"""Train a small classifier on records streamed from shard files by an IterableDataset, with two
DataLoader workers to read them faster.

Planted: the dataset's __iter__ reads every shard, and each worker runs it in full: both workers
yield the same stream, so every record is trained on twice per epoch and loading does twice the
work. The fix is to shard by torch.utils.data.get_worker_info() in __iter__.
    python duplicate_workers.py [--epochs N]
"""

import argparse

import torch
from _zoo_data import cache_dir, train
from torch import nn
from torch.utils.data import DataLoader, IterableDataset

SHARDS, PER_SHARD = 8, 512


def shard_files():
    root = cache_dir() / f"shards-{SHARDS}x{PER_SHARD}"
    root.mkdir(parents=True, exist_ok=True)
    generator = torch.Generator().manual_seed(0)
    paths = []
    for shard in range(SHARDS):
        features = torch.randn(PER_SHARD, 256, generator=generator)
        labels = torch.randint(0, 10, (PER_SHARD,), generator=generator)
        path = root / f"shard-{shard:03d}.pt"
        if not path.exists():
            torch.save({"features": features, "labels": labels}, path)
        paths.append(path)
    return paths


class ShardStream(IterableDataset):
    def __init__(self, paths) -> None:
        self.paths = paths

    def __iter__(self):
        for path in self.paths:
            shard = torch.load(path)
            for features, label in zip(shard["features"], shard["labels"], strict=True):
                yield features * 0.5 + 0.1, label


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(ShardStream(shard_files()), batch_size=32, num_workers=2)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
