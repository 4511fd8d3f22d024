"""Train a small classifier on records streamed from shard files by an IterableDataset that shards
by worker, as the docs say, with four DataLoader workers. The records were packed into one file.

Planted: each worker reads the shards whose position matches its id, and with one shard worker 0
reads them all while the other three have nothing: one worker does all the work. The fix is more
shards than workers (or splitting a shard's records by worker).
    python idle_workers.py [--epochs N]
"""

import argparse

import torch
from _zoo_data import cache_dir, train
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

RECORDS = 4096


def packed_shard():
    path = cache_dir() / f"packed-{RECORDS}.pt"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        generator = torch.Generator().manual_seed(0)
        torch.save(
            {"features": torch.randn(RECORDS, 256, generator=generator), "labels": torch.arange(RECORDS) % 10}, path
        )
    return [path]


class ShardStream(IterableDataset):
    def __init__(self, paths) -> None:
        self.paths = paths

    def __iter__(self):
        info = get_worker_info()
        mine = self.paths[info.id :: info.num_workers] if info is not None else self.paths
        for path in mine:
            shard = torch.load(path)
            for features, label in zip(shard["features"], shard["labels"], strict=True):
                spectrum = torch.fft.rfft(features.repeat(16)).abs()  # the record's decoding
                yield spectrum[:256] / spectrum.max(), label


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(ShardStream(packed_shard()), batch_size=32, num_workers=4)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
