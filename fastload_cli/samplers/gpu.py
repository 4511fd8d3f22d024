"""GPU sampling through NVML (``nvidia-ml-py``), optional and read-only.

Without NVML (no driver, no GPU, no package) every GPU figure is absent and the reason is kept:
fastload never shows a GPU number it did not read. NVML utilisation is device-wide, so it is
reported as "device busy %". Fields are degraded one by one (a GPU without PCIe counters still
reports utilisation). fastload never changes any GPU setting.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.records import GpuDevice, GpuSample, SamplerHealth
from fastload_cli.samplers.ticker import Ticker

MIN_INTERVAL_S = 0.1  # NVML's utilisation counter itself averages over 1/6 s to 1 s


@dataclass
class Nvml:
    """An initialised NVML: the module, and the handles of the devices the script can see."""

    module: Any
    handles: list[tuple[int, Any]]
    unavailable: dict[str, str] = field(default_factory=dict)

    def devices(self) -> tuple[GpuDevice, ...]:
        return tuple(self._device(index, handle) for index, handle in self.handles)

    def _device(self, index: int, handle: Any) -> GpuDevice:
        nvml = self.module
        name = self.read("name", lambda: _text(nvml.nvmlDeviceGetName(handle)))
        memory = self.read("memory_total", lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).total))
        return GpuDevice(index=index, name=name or f"GPU {index}", memory_total_bytes=memory)

    def read(self, name: str, get: Callable[[], Any]) -> Any:
        try:
            return get()
        except self.module.NVMLError as exc:
            self.unavailable.setdefault(name, str(exc) or type(exc).__name__)
            return None

    def sample(self, t_ns: int, index: int, handle: Any) -> GpuSample:
        nvml = self.module
        rx = self.read("pcie", lambda: nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_RX_BYTES))
        tx = self.read("pcie", lambda: nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_TX_BYTES))
        return GpuSample(
            t_ns=t_ns,
            index=index,
            util_percent=self.read("util", lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
            memory_used_bytes=self.read("memory_used", lambda: int(nvml.nvmlDeviceGetMemoryInfo(handle).used)),
            pcie_rx_bytes_per_s=None if rx is None else rx * 1024.0,  # NVML reports KB/s
            pcie_tx_bytes_per_s=None if tx is None else tx * 1024.0,
        )

    def shutdown(self) -> None:
        with contextlib.suppress(self.module.NVMLError):
            self.module.nvmlShutdown()


def open_nvml() -> Nvml | str:
    """An initialised NVML, or the reason there is none ("unavailable: ..." is added by callers)."""
    try:
        import pynvml
    except ImportError:
        return "nvidia-ml-py (pynvml) is not installed"
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML did not initialise ({exc}); no NVIDIA driver or GPU on this machine"
    except OSError as exc:  # some versions raise this when libnvidia-ml.so is missing
        return f"NVML library not found ({exc})"
    try:
        count = pynvml.nvmlDeviceGetCount()
        handles = [(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in _visible(count)]
    except pynvml.NVMLError as exc:
        _quiet_shutdown(pynvml)
        return f"NVML could not list devices ({exc})"
    if not handles:
        _quiet_shutdown(pynvml)
        return "no GPU visible (CUDA_VISIBLE_DEVICES hides them all)" if count else "NVML reports no GPU"
    return Nvml(module=pynvml, handles=handles)


def _visible(count: int) -> list[int]:
    """Device indices the script can use: all, or those CUDA_VISIBLE_DEVICES names by number."""
    text = os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return list(range(count))
    indices: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit():  # UUIDs or MIG names: sample every device rather than guess
            return list(range(count)) if part else indices
        if int(part) < count:
            indices.append(int(part))
    return indices


def _quiet_shutdown(module: Any) -> None:
    with contextlib.suppress(Exception):  # a half-initialised NVML must not mask the real reason
        module.nvmlShutdown()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class GpuSampler:
    """Samples every visible device on a steady clock; ``unavailable`` explains empty results."""

    def __init__(self, nvml: Nvml, interval_s: float) -> None:
        self._nvml = nvml
        self._ticker: Ticker[list[GpuSample]] = Ticker(self._sample, max(interval_s, MIN_INTERVAL_S), "fastload-gpu")

    def _sample(self) -> list[GpuSample]:
        t_ns = time.monotonic_ns()
        return [self._nvml.sample(t_ns, index, handle) for index, handle in self._nvml.handles]

    def start(self) -> None:
        self._ticker.start()

    def stop(self) -> tuple[tuple[GpuSample, ...], SamplerHealth]:
        rows = self._ticker.stop()
        health = SamplerHealth(
            interval_s=self._ticker.interval_s,
            ticks=self._ticker.ticks,
            late_ticks=self._ticker.late_ticks,
            unavailable=tuple(f"{k}: {v}" for k, v in sorted(self._nvml.unavailable.items())),
        )
        return tuple(s for row in rows for s in row), health
