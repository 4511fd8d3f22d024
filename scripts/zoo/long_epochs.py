"""Train a small CNN on 200,000 procedurally made images a 6,250-batch epoch, with two DataLoader
workers: an epoch takes minutes, so no verdict can wait for one to end.

Each sample is a 3x64x64 uint8 image made from its index, cropped, flipped, blurred and
colour-jittered on the CPU (``--latency-ms 0``, the default: the augmentation is the limit); or
fetched with a fixed delay per read and only converted (``--latency-ms MS``: loading waits on
storage, and more workers than the script's two train faster).

Planted: cpu (the augmentation) by default; io with ``--latency-ms 4``.
    python long_epochs.py [--latency-ms MS] [--epochs N]
"""

import argparse
import time

import torch
from _zoo_data import train
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2

SAMPLES = 200_000


class Procedural(Dataset):
    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        if latency_s:
            self.transform = v2.ToDtype(torch.float32, scale=True)
        else:
            self.transform = v2.Compose(
                [
                    v2.RandomResizedCrop(64, antialias=True),
                    v2.RandomHorizontalFlip(),
                    v2.GaussianBlur(5),
                    v2.ColorJitter(0.4, 0.4, 0.4),
                    v2.ToDtype(torch.float32, scale=True),
                ]
            )

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, index: int):
        if self.latency_s:
            time.sleep(self.latency_s)  # the storage round trip
        generator = torch.Generator().manual_seed(index)
        image = torch.randint(0, 256, (3, 64, 64), dtype=torch.uint8, generator=generator)
        return self.transform(image), index % 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Procedural(args.latency_ms / 1000), batch_size=32, shuffle=True, num_workers=2)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10)
    )
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
