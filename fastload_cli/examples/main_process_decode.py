"""Train a small CNN on JPEG files decoded in the main process (num_workers=0).

No augmentation at all: each image is decoded, resized and normalised, one after another, in the
training process itself, between optimizer steps.

    python main_process_decode.py [--epochs N] [--steps N] [--batch-size N] [--device D]
"""

from pathlib import Path

import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from _example_common import image_folder, parse_args, train


class JpegDataset(Dataset):
    def __init__(self, root: Path) -> None:
        self.files = sorted(root.glob("*/*.jpg"))
        self.classes = sorted({f.parent.name for f in self.files})
        self.prepare = transforms.Compose(
            [
                transforms.Resize(144),
                transforms.CenterCrop(128),
                transforms.ToTensor(),
                transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)),
            ]
        )

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int):
        path = self.files[index]
        with Image.open(path) as image:
            pixels = self.prepare(image.convert("RGB"))
        return pixels, self.classes.index(path.parent.name)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])

    torch.manual_seed(0)
    dataset = JpegDataset(image_folder())
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, len(dataset.classes)),
    )  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    train(loader, model, optimizer, epochs=args.epochs, steps=args.steps, device=args.device)


if __name__ == "__main__":
    main()
