"""Which scripts start warm, and with which libraries imported first (``runner/warm.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastload_cli.records.protocol import WARM_START_ENV
from fastload_cli.runner import warm


def preloads(tmp_path: Path, source: str) -> tuple[str, ...] | None:
    script = tmp_path / "train.py"
    script.write_text(source)
    return warm.preloads_for(script)


def test_the_libraries_the_script_imports_are_imported_first(tmp_path: Path) -> None:
    source = "import torch, torchvision\nfrom PIL import Image\nimport numpy as np\nimport mylib\n"
    assert preloads(tmp_path, source) == ("torch", "numpy", "PIL", "torchvision")
    inside = "def main():\n    import timm\n    from torch.utils.data import DataLoader\n"
    assert preloads(tmp_path, inside) == ("torch", "timm")
    assert preloads(tmp_path, "from . import torch\nimport torchvision\n") is None  # no torch of its own
    # the libraries of Hugging Face's and albumentations' scripts: a second or two each, every run
    frameworks = "import albumentations as A\nimport cv2\nimport torch\nfrom datasets import Dataset\n"
    assert preloads(tmp_path, frameworks) == ("torch", "datasets", "albumentations", "cv2")


@pytest.mark.parametrize(
    "source",
    [
        'import os\nos.environ["OMP_NUM_THREADS"] = "1"\nimport torch\n',
        "import os, torch\nos.putenv('CUDA_VISIBLE_DEVICES', '0')\n",
        "import torch\ndef broken(:\n",
        "import numpy\n",
    ],
    ids=["sets-environ", "putenv", "syntax-error", "no-torch"],
)
def test_a_script_starts_cold_where_forking_could_change_it(tmp_path: Path, source: str) -> None:
    assert preloads(tmp_path, source) is None


def test_warm_starts_can_be_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WARM_START_ENV, "0")
    assert preloads(tmp_path, "import torch\n") is None
    assert warm.preloads_for(tmp_path / "missing.py") is None
