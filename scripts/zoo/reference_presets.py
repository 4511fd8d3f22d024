"""Image classification shaped like torchvision's classification reference
(references/classification/train.py): the train and eval pipelines are preset objects from a
module beside the script (``_presets.py``), the dataset a torchvision dataset given the preset as
its transform, ``-j`` workers, one evaluation pass after each epoch.

Planted: augmentation. RandomResizedCrop, AugMix and RandomErasing on 2 workers cost far more
than making the images and the small network's step; without them an epoch trains faster.
fastload must find them inside the preset object (no-aug substitutes them) and name them in the
breakdown.
    python reference_presets.py [-j 2] [--epochs N] [--device cuda]
"""

import argparse

import torch
import torchvision
from _presets import ClassificationPresetEval, ClassificationPresetTrain
from torch import nn


def train_one_epoch(model, criterion, optimizer, loader, device) -> None:
    model.train()
    for image, target in loader:
        image, target = image.to(device, non_blocking=True), target.to(device, non_blocking=True)
        loss = criterion(model(image), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate(model, loader, device) -> float:
    model.eval()
    correct = total = 0
    with torch.inference_mode():
        for image, target in loader:
            image, target = image.to(device), target.to(device)
            correct += int((model(image).argmax(1) == target).sum())
            total += len(target)
    return correct / max(total, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("-b", "--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--auto-augment", default="augmix", help="ta_wide, augmix, ra, imagenet")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda to train on the GPU")
    args = parser.parse_args()
    torch.manual_seed(0)
    train_set = torchvision.datasets.FakeData(
        args.samples,
        (3, 160, 160),
        10,
        transform=ClassificationPresetTrain(crop_size=128, auto_augment=args.auto_augment, erase_prob=0.25),
    )
    val_set = torchvision.datasets.FakeData(
        128, (3, 160, 160), 10, transform=ClassificationPresetEval(crop_size=128, resize_size=144), random_offset=1
    )
    device = torch.device(args.device)
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, num_workers=args.workers, pin_memory=device.type == "cuda"
    )
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=args.batch_size, num_workers=args.workers)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10)
    ).to(device)  # fmt: skip
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(args.epochs):
        train_one_epoch(model, criterion, optimizer, train_loader, device)
        print(f"epoch {epoch}: val acc {evaluate(model, val_loader, device):.3f}", flush=True)


if __name__ == "__main__":
    main()
