"""Train a small classifier on records fetched from a store where a few records sit on a slow
(archive) tier: one in 64 takes 0.4 s to fetch, the rest a millisecond.

Planted: head-of-line blocking. Four workers keep up on average, but the DataLoader hands batches
over in order, so a batch holding a slow record stalls the loop while the other workers' batches
wait behind it. The fix is DataLoader(in_order=False) (and a deeper prefetch).
    python slow_samples.py [--epochs N]
"""

import argparse
import time

import torch
from _zoo_data import train
from torch import nn
from torch.utils.data import DataLoader, Dataset

SLOW_EVERY = 64  # one record in this many is on the archive tier


class RecordStore(Dataset):
    def __init__(self, count: int = 4096) -> None:
        generator = torch.Generator().manual_seed(0)
        self.features = torch.randn(count, 128, generator=generator)
        self.labels = torch.randint(0, 10, (count,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def fetch_latency_s(self, index: int) -> float:
        return 0.4 if index % SLOW_EVERY == 7 else 0.001

    def __getitem__(self, index: int):
        time.sleep(self.fetch_latency_s(index))  # the store's round trip
        return self.features[index], self.labels[index]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(RecordStore(), batch_size=16, shuffle=True, num_workers=4)
    model = nn.Sequential(nn.Linear(128, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
