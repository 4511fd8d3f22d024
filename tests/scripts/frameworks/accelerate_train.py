"""A plain training loop made device-agnostic with Hugging Face accelerate: the model, optimizer
and DataLoader go through ``Accelerator.prepare``, the backward pass through the accelerator.

    python accelerate_train.py [--workers 2] [--epochs 2] [--samples 4096]
"""

import argparse

import torch
from accelerate import Accelerator
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    """Feature vectors computed per sample (a small FFT-based transform), with labels."""

    def __init__(self, size: int):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        signal = torch.randn(4096, generator=generator)
        spectrum = torch.fft.rfft(signal).abs()[:256]
        return spectrum / spectrum.max(), index % 4


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=4096)
    args = parser.parse_args()
    accelerator = Accelerator(cpu=True)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(Features(args.samples), batch_size=64, shuffle=True, num_workers=args.workers)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    model.train()
    for _ in range(args.epochs):
        for features, labels in loader:
            loss = nn.functional.cross_entropy(model(features), labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    main()
