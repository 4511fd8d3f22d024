"""Train a small classifier on an annotation index held as a list of Python dicts (a path, a label
and boxes per image), the way a COCO-style dataset keeps it, with two persistent workers.

Planted: each worker touches the records it loads, and touching a Python object writes its
reference count, which copies the page it lives on out of the memory the workers share with the
parent. Every worker's own memory grows with every batch, and with persistent workers across
epochs (pytorch#13246). The fix is to keep the index in numpy arrays.
    python memory_growth.py [--epochs N]
"""

import argparse
import io

import numpy as np
import torch
from _zoo_data import train
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset


def jpeg_bytes(side: int = 160) -> bytes:
    """A photo-like JPEG every record decodes (the index is the point here, not the pixels)."""
    pixels = np.random.default_rng(0).integers(0, 255, (side, side, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=90)
    return out.getvalue()


class AnnotatedImages(Dataset):
    def __init__(self, count: int = 1_500_000) -> None:
        self.jpeg = jpeg_bytes()
        self.records = [
            {"path": f"images/{i:09d}.jpg", "label": i % 10, "boxes": [(i % 7, i % 5, 32, 32)]} for i in range(count)
        ]

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int):
        record = self.records[index]
        x, y, w, h = record["boxes"][0]
        image = Image.open(io.BytesIO(self.jpeg)).convert("RGB").crop((x, y, x + 8 * w, y + 8 * h)).resize((32, 32))
        features = torch.from_numpy(np.asarray(image, dtype=np.float32)).mean(dim=2).flatten()[:128] / 255
        return features, record["label"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(AnnotatedImages(), batch_size=128, shuffle=True, num_workers=2, persistent_workers=True)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10))
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
