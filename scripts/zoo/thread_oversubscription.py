"""Train a small classifier on spectral features computed per sample with numpy: each sample is
whitened with a matrix product and projected through an eigenbasis, in two DataLoader workers.

Planted: numpy's OpenBLAS starts a thread per core in every worker (torch limits its own threads in
workers, not numpy's), so two workers run four BLAS threads, spinning for work, on two cores. The fix is
one thread per worker (a worker_init_fn with threadpoolctl, or OMP_NUM_THREADS=1).
    python thread_oversubscription.py [--epochs N]
"""

import argparse

import numpy as np
import torch
from _zoo_data import train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SpectralFeatures(Dataset):
    def __init__(self, count: int = 2048, size: int = 128) -> None:
        rng = np.random.default_rng(0)
        self.signals = rng.standard_normal((64, size, size)).astype(np.float32)
        self.whitening = rng.standard_normal((size, size)).astype(np.float32) / size
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int):
        signal = self.signals[index % len(self.signals)]
        whitened = self.whitening @ signal @ self.whitening.T
        features = np.linalg.svd(whitened, compute_uv=False)[:64]
        return torch.from_numpy(features.astype(np.float32)), index % 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(SpectralFeatures(), batch_size=32, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
