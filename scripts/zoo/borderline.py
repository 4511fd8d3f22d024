"""Loading and the step take about the same time: one worker fetches each batch from a remote
store in 24 ms while the step takes 20 ms. Neither is clearly the limit.

Planted: a hedged verdict.    python borderline.py
"""

import time

import torch
from torch.utils.data import DataLoader, Dataset


class Remote(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        time.sleep(0.003)  # 8 samples per batch: 24 ms per batch
        return torch.randn(64), index % 10


def step(x):
    end = time.perf_counter() + 0.020  # the training step, 20 ms of host work
    while time.perf_counter() < end:
        pass


def main():
    loader = DataLoader(Remote(), batch_size=8, num_workers=1)
    for _ in range(10):
        for x, _y in loader:
            step(x)


if __name__ == "__main__":
    main()
