"""Train a small convolutional network on 224x224 images made in memory, 64 to a batch, with four
DataLoader workers: the usual ImageNet-style settings.

Planted: nothing, on a machine with room in /dev/shm. Workers hand batches over through shared
memory, and four workers with two batches each in flight hold 8 x 38 MB there. In a container
with Docker's default 64 MB /dev/shm, a worker dies of a bus error (pytorch#5040). The fix is a
larger /dev/shm (docker run --shm-size=1g), or fewer batches in flight.
    python small_shm.py [--epochs N]
"""

import argparse

import torch
from _zoo_data import train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self) -> int:
        return 2048

    def __getitem__(self, index: int):
        generator = torch.Generator().manual_seed(index)
        return torch.rand(3, 224, 224, generator=generator), index % 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Images(), batch_size=64, shuffle=True, num_workers=4)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 7, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10)
    )
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
