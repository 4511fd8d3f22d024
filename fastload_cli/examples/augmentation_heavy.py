"""Train a small CNN on an image folder with heavy augmentation.

A typical vision pipeline: JPEG files read by ImageFolder, a stack of random augmentations
(resized crop, flip, colour jitter, rotation, blur, erasing) on PIL images, two DataLoader
workers. The model is small, so the workers' augmentation work sets the pace.

    python augmentation_heavy.py [--epochs N] [--steps N] [--batch-size N] [--device D] [--workers N]
"""

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from _example_common import image_folder, parse_args, train


def build_loader(batch_size: int, workers: int) -> DataLoader:
    augment = transforms.Compose(
        [
            transforms.RandomResizedCrop(176),
            transforms.RandomHorizontalFlip(),
            transforms.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
            transforms.RandomRotation(15),
            transforms.GaussianBlur(9),
            transforms.ToTensor(),
            transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
            transforms.RandomErasing(p=0.25),
        ]
    )
    dataset = datasets.ImageFolder(image_folder(), transform=augment)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers, drop_last=True)


def build_model(classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes),
    )  # fmt: skip


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], epochs=3, workers=2)

    torch.manual_seed(0)
    loader = build_loader(args.batch_size, args.workers)
    model = build_model(len(loader.dataset.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    train(loader, model, optimizer, epochs=args.epochs, steps=args.steps, device=args.device)


if __name__ == "__main__":
    main()
