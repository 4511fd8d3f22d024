"""Image classification with an albumentations pipeline, as its users write it: a Dataset over a
folder of JPEGs (one folder per class) read with OpenCV, ``A.Compose`` of random crops, flips,
colour and blur applied with keyword calls, ``ToTensorV2``, a small CNN.

    python albumentations_train.py DATA_DIR [--workers 1] [--size 96] [--epochs 1] [--steps 0] [--val-transform]

DATA_DIR holds one folder per class (or a ``train`` folder of them). With ``--steps N`` it stops
after N steps and prints its throughput (after 10 steps of warm-up); ``--val-transform`` trains on
the validation pipeline (resize, centre crop, normalise), as a plain run without augmentation.
"""

import argparse
import time
from pathlib import Path

import albumentations as A
import cv2
import torch
from albumentations.pytorch import ToTensorV2
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Folder(Dataset):
    def __init__(self, root: str, transform) -> None:
        folder = Path(root) / "train" if (Path(root) / "train").is_dir() else Path(root)
        classes = sorted(p.name for p in folder.iterdir() if p.is_dir())
        self.items = [(str(f), i) for i, c in enumerate(classes) for f in sorted((folder / c).glob("*.jpg"))]
        self.transform = transform

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        path, label = self.items[index]
        image = cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB)
        return self.transform(image=image)["image"], label


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--val-transform", action="store_true")
    args = parser.parse_args()
    cv2.setNumThreads(0)  # as albumentations' docs advise inside DataLoader workers
    train_transform = A.Compose(
        [
            A.RandomResizedCrop(size=(args.size, args.size), scale=(0.3, 1.0)),
            A.HorizontalFlip(p=0.5),
            A.ColorJitter(brightness=0.3, contrast=0.3, saturation=0.3, hue=0.05, p=0.8),
            A.OneOf([A.GaussianBlur(blur_limit=(3, 7)), A.MotionBlur(blur_limit=7)], p=0.5),
            A.Affine(rotate=(-20, 20), scale=(0.9, 1.1), p=0.7),
            A.Normalize(),
            ToTensorV2(),
        ]
    )
    val_transform = A.Compose(
        [A.SmallestMaxSize(max_size=args.size), A.CenterCrop(height=args.size, width=args.size), A.Normalize(),
         ToTensorV2()]
    )  # fmt: skip
    transform = val_transform if args.val_transform else train_transform
    loader = DataLoader(Folder(args.data_dir, transform), batch_size=32, shuffle=True,
                        num_workers=args.workers, drop_last=True)  # fmt: skip
    model = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2), nn.ReLU(), nn.Conv2d(32, 64, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 4))  # fmt: skip
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    step, started = 0, time.perf_counter()
    for _ in range(args.epochs if not args.steps else 10**6):
        for images, labels in loader:
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == 10:
                started = time.perf_counter()
            if step == args.steps:
                print(f"throughput: {(step - 10) * 32 / (time.perf_counter() - started):.1f} samples/s", flush=True)
                return


if __name__ == "__main__":
    main()
