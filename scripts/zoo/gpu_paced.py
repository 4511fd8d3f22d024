"""A GPU host's shape on any machine: a training step of 30 ms during which the host only waits
(as it waits for a GPU's kernels), 40-batch epochs whose two DataLoader workers start again every
epoch, and samples fetched from storage with a fixed delay per read.

Two workers make a batch every 48 ms where the step takes 30: loading is the limit, and more
workers (four make one every 24 ms) train faster, up to the step's pace.

Planted: io, and more workers.    python gpu_paced.py [--epochs N]
"""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

BATCHES_AN_EPOCH = 40
BATCH = 16


class Remote(Dataset):
    def __len__(self) -> int:
        return BATCHES_AN_EPOCH * BATCH

    def __getitem__(self, index: int):
        time.sleep(0.006)  # the storage round trip: 96 ms a batch on one worker
        return torch.randn(3, 32, 32), index % 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Remote(), batch_size=BATCH, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(args.epochs):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            time.sleep(0.030)  # the host waits on the GPU's kernels (a synchronising .item(), say)


if __name__ == "__main__":
    main()
