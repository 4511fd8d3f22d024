"""uint8 over the bus, normalised on the device: ``GpuNormalize``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# uint8 over the bus, normalised on the device


class GpuNormalize:
    """``(x / scale - mean) / std`` per channel, for uint8 image batches already on the device:
    send a quarter of the bytes float32 would take, and normalise where the step runs. Channels
    are the third dimension from the end (NCHW or CHW). Works on any device, the CPU included."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], scale: float = 255.0) -> None:
        if len(mean) != len(std):
            raise ValueError(f"mean and std need one value per channel (got {len(mean)} and {len(std)})")
        if any(s == 0 for s in std):
            raise ValueError("std cannot be 0")
        self.mean, self.std, self.scale = tuple(mean), tuple(std), scale
        self._constants: dict[Any, tuple[Any, Any]] = {}  # (device, dtype) -> mean, std tensors

    def __call__(self, images: Any) -> Any:
        import torch

        if images.dim() < 3 or images.shape[-3] != len(self.mean):
            raise ValueError(f"expected {len(self.mean)} channels at dimension -3, got shape {tuple(images.shape)}")
        dtype = images.dtype if images.is_floating_point() else torch.float32
        mean, std = self._on(images.device, dtype)
        return (images.to(dtype) / self.scale - mean) / std

    def _on(self, device: Any, dtype: Any) -> tuple[Any, Any]:
        import torch

        key = (device, dtype)
        if key not in self._constants:
            shape = (len(self.mean), 1, 1)
            self._constants[key] = (
                torch.tensor(self.mean, device=device, dtype=dtype).view(shape),
                torch.tensor(self.std, device=device, dtype=dtype).view(shape),
            )
        return self._constants[key]
