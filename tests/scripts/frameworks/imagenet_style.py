"""Shaped like the PyTorch ImageNet example (examples/imagenet/main.py) run with ``--dummy``:
FakeData through the usual training transforms, ``-j`` workers, a small network, a timed loop.

    python imagenet_style.py [-j 2] [-b 64] [--epochs 1] [--image-size 64] [--samples 4096]
"""

import argparse
import time

import torch
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch import nn

parser = argparse.ArgumentParser(description="ImageNet-style training on FakeData")
parser.add_argument("-a", "--arch", default="cnn", choices=["cnn", "tiny"], help="model architecture")
parser.add_argument("-j", "--workers", default=2, type=int, metavar="N", help="number of data loading workers")
parser.add_argument("-b", "--batch-size", default=64, type=int, metavar="N")
parser.add_argument("--epochs", default=1, type=int, metavar="N")
parser.add_argument("--lr", default=0.1, type=float)
parser.add_argument("--image-size", default=64, type=int)
parser.add_argument("--samples", default=4096, type=int)
parser.add_argument("-p", "--print-freq", default=50, type=int)


ARCHS = {
    "cnn": lambda: nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(64, 1000),
    ),
    "tiny": lambda: nn.Sequential(
        nn.Conv2d(3, 8, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 1000)
    ),
}  # fmt: skip


def main():
    args = parser.parse_args()
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.FakeData(
        args.samples,
        (3, args.image_size, args.image_size),
        1000,
        transforms.Compose(
            [
                transforms.RandomCrop(args.image_size, padding=4),
                transforms.RandomHorizontalFlip(),
                transforms.ToTensor(),
                normalize,
            ]
        ),
    )
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=False
    )
    model = ARCHS[args.arch]()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    for epoch in range(args.epochs):
        train(train_loader, model, criterion, optimizer, epoch, args)


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    end = time.time()
    data_time = batch_time = 0.0
    for i, (images, target) in enumerate(train_loader):
        data_time += time.time() - end
        loss = criterion(model(images), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time += time.time() - end
        end = time.time()
        if i % args.print_freq == 0:
            per_batch, per_wait = batch_time / (i + 1), data_time / (i + 1)
            print(f"Epoch: [{epoch}][{i}/{len(train_loader)}] time {per_batch:.3f} data {per_wait:.3f}")


if __name__ == "__main__":
    main()
