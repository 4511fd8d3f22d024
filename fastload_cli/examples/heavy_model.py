"""Train a convolutional network on an in-memory tensor data set.

The data are already tensors in RAM, so loading a batch is a few indexing operations; the
network's forward and backward passes take the time.

    python heavy_model.py [--epochs N] [--steps N] [--batch-size N] [--device D]
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from _example_common import parse_args, train


def build_model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
        nn.Conv2d(128, 256, 3, stride=2, padding=1), nn.BatchNorm2d(256), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, classes),
    )  # fmt: skip


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])

    torch.manual_seed(0)
    images = torch.randn(4096, 3, 32, 32)
    labels = torch.randint(0, 100, (4096,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True)
    model = build_model(100)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    train(loader, model, optimizer, epochs=args.epochs, steps=args.steps, device=args.device)


if __name__ == "__main__":
    main()
