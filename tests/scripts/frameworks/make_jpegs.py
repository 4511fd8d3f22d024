"""A folder of JPEGs of varied sizes, one sub-folder per class, as image datasets are laid out.

python make_jpegs.py DIR [--per-class 64] [--classes 4]
"""

import argparse
import random
from pathlib import Path

from PIL import Image


def make(root: Path, per_class: int = 64, classes: int = 4, seed: int = 0) -> Path:
    rng = random.Random(seed)
    for c in range(classes):
        folder = root / "train" / f"class{c}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            size = (rng.randint(80, 200), rng.randint(80, 200))
            image = Image.effect_noise(size, 60).convert("RGB")
            image.save(folder / f"{i:04d}.jpg", quality=90)
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--per-class", type=int, default=64)
    parser.add_argument("--classes", type=int, default=4)
    args = parser.parse_args()
    make(Path(args.dir), args.per_class, args.classes)
