"""Training scripts bundled with fastload, each with a planted bottleneck.

They are ordinary scripts, not written against fastload: each makes its own small data set on
first run (no downloads) under ``$XDG_CACHE_HOME/fastload-examples`` (``~/.cache`` by default).
``fastload demo NAME`` diagnoses one of them; ``python -m fastload_cli.examples.NAME`` is not how
they are meant to be run: run them as scripts, with or without fastload.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    filename: str
    expected: str  # the planted verdict: a Bottleneck value
    summary: str
    requires: tuple[str, ...] = ()  # importable modules the script needs besides torch

    @property
    def path(self) -> Path:
        return HERE / self.filename


EXAMPLES = (
    Example(
        name="augmentation",
        filename="augmentation_heavy.py",
        expected="cpu",
        summary="an image folder with heavy torchvision augmentation on 2 workers: CPU-bound loading",
        requires=("torchvision",),
    ),
    Example(
        name="heavy-model",
        filename="heavy_model.py",
        expected="compute",
        summary="an in-memory tensor dataset feeding a large model: the training step is the limit",
    ),
    Example(
        name="storage-latency",
        filename="storage_latency.py",
        expected="io",
        summary="samples read from storage with per-read latency (like a network file system): IO-bound",
    ),
    Example(
        name="main-process-decode",
        filename="main_process_decode.py",
        expected="cpu",
        summary="JPEG decoding in the main process (num_workers=0): CPU-bound loading",
        requires=("torchvision",),
    ),
)


def names() -> list[str]:
    return [e.name for e in EXAMPLES]


def find(name: str) -> Example | None:
    return next((e for e in EXAMPLES if e.name == name), None)
