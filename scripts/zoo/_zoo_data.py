"""What the zoo scripts share: data made on first use in ~/.cache/fastload-zoo (no downloads),
and the training loop."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "fastload-zoo"


def large_files(count: int = 96, size_mb: int = 4) -> Path:
    """``count`` files of random bytes, ``size_mb`` MB each: too big to matter in the page cache
    once each is evicted after reading."""
    root = cache_dir() / f"large-files-{count}x{size_mb}mb"
    if root.is_dir():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".large-files-", dir=root.parent))
    try:
        for i in range(count):
            (tmp / f"{i:04d}.bin").write_bytes(os.urandom(size_mb * 2**20))
        os.rename(tmp, root)
    except OSError:
        if not root.is_dir():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def train(loader, model, epochs: int) -> None:
    """Train ``model`` with cross-entropy and SGD on ``loader`` for ``epochs`` epochs."""
    import torch

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
