"""What the GPU zoo scripts share: a CUDA device (or a clear exit without one), and the loop."""

from __future__ import annotations

import sys


def cuda_device():
    import torch

    if not torch.cuda.is_available():
        sys.exit("this zoo case needs a CUDA GPU (torch.cuda.is_available() is False)")
    return torch.device("cuda")


def train(loader, model, device, epochs: int = 20) -> None:
    """Train ``model`` on ``device`` with cross-entropy and SGD; each batch is copied there as the
    loop receives it (asynchronously when the loader pins memory)."""
    import torch

    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.to(device, non_blocking=loader.pin_memory), y.to(device, non_blocking=loader.pin_memory)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
