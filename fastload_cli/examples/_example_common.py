"""What the example scripts share: small data sets made on first use (no downloads), and the
training loop.

Data sets are written to a temporary directory first and renamed into place, so an interrupted
first run never leaves a half-made data set behind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path


def parse_args(description: str, *, epochs: int = 2, batch_size: int = 32, **options: float) -> argparse.Namespace:
    """The examples' command line: --epochs, --steps, --batch-size, --device (``cpu`` by default,
    ``cuda`` to train on a GPU), and each example's own options (``workers=2`` adds ``--workers``,
    typed as its default)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--device", default="cpu", help="where the model trains: cpu, cuda, cuda:1, ...")
    for name, default in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default)
    return parser.parse_args()


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastload-examples"


def ensure(root: Path, make: Callable[[Path], None]) -> Path:
    """``root``, made by ``make(tmp_dir)`` if it does not exist yet."""
    if root.is_dir():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        make(tmp)
        os.rename(tmp, root)
    except OSError:
        if not root.is_dir():  # a concurrent first run may have won the race: that is fine
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def image_folder(classes: int = 10, per_class: int = 200, size: int = 192) -> Path:
    """An ImageFolder tree of JPEGs: smooth colour fields with grain, like small photos."""
    import torch
    from torchvision.transforms.functional import to_pil_image

    def make(tmp: Path) -> None:
        generator = torch.Generator().manual_seed(0)
        for c in range(classes):
            folder = tmp / f"class_{c:02d}"
            folder.mkdir()
            coarse = torch.rand(per_class, 3, 6, 6, generator=generator)
            images = torch.nn.functional.interpolate(coarse, size=(size, size), mode="bicubic", align_corners=False)
            images = (images + 0.08 * torch.rand(images.shape, generator=generator)).clamp(0, 1)
            for i, image in enumerate(images):
                to_pil_image(image).save(folder / f"{i:04d}.jpg", quality=90)

    return ensure(cache_dir() / f"image-folder-{classes}x{per_class}-{size}px", make)


def tensor_files(count: int = 1024, shape: tuple[int, ...] = (3, 32, 32)) -> Path:
    """One raw float32 file per sample, the way many data sets sit on a network share."""
    import torch

    def make(tmp: Path) -> None:
        generator = torch.Generator().manual_seed(0)
        for i in range(count):
            sample = torch.rand(shape, generator=generator)
            (tmp / f"{i:05d}.bin").write_bytes(sample.numpy().tobytes())

    return ensure(cache_dir() / f"tensor-files-{count}", make)


def train(
    loader: Iterable, model, optimizer, *, epochs: int, steps: int = 0, device: str = "cpu", timed_from: int = 5
) -> None:
    """Train on ``device`` with cross-entropy for ``epochs`` (or ``steps`` steps, when not 0); each
    batch is copied there as the loop receives it. Prints the loss per epoch and the throughput
    from step ``timed_from`` on, as many training scripts do."""
    import torch

    model.to(device)  # in place: the optimizer keeps the same parameters
    step, seen, started = 0, 0, None
    for epoch in range(epochs):
        for batch in loader:
            inputs, labels = (t.to(device, non_blocking=True) for t in batch)
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step == timed_from:
                started, seen = time.perf_counter(), 0
            seen += len(labels)
            if step == steps:
                break
        print(f"epoch {epoch}: loss {loss.item():.3f}")
        if step == steps:
            break
    if started is not None:
        print(f"throughput: {seen / (time.perf_counter() - started):.1f} samples/s")
