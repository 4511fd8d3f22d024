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
    assert preloads(tmp_path, source) == ("torch", "numpy", "PIL", "torchvision", "PIL:Image")
    inside = "def main():\n    import timm\n    from torch.utils.data import DataLoader\n"
    assert preloads(tmp_path, inside) == ("torch", "timm", "torch.utils.data:DataLoader")
    assert preloads(tmp_path, "from . import torch\nimport torchvision\n") is None  # no torch of its own
    # the libraries of Hugging Face's and albumentations' scripts: a second or two each, every run
    frameworks = "import albumentations as A\nimport cv2\nimport torch\nfrom datasets import Dataset\n"
    assert preloads(tmp_path, frameworks) == ("torch", "datasets", "albumentations", "cv2", "datasets:Dataset")


def test_what_the_script_imports_from_its_libraries_is_named_for_the_starter(tmp_path: Path) -> None:
    # transformers imports the module behind a name on first use: the Trainer's takes seconds
    source = (
        "import torch\nimport torch.distributed\nimport mylib.models\nfrom mylib import thing\n"
        "from transformers import Trainer, TrainingArguments\nfrom torchvision.transforms import *\n"
    )
    assert preloads(tmp_path, source) == (
        "torch",
        "torchvision",
        "transformers",
        "torch.distributed:",
        "transformers:Trainer",
        "transformers:TrainingArguments",
    )


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


def test_a_starter_whose_imports_asked_cuda_for_its_devices_forks_no_run() -> None:
    # torch.cuda.is_available() marks every process forked after it unable to use CUDA ("Cannot
    # re-initialize CUDA in forked subprocess"): the starter's probe sees it, and its runs start cold
    code = "print(starter._cuda_poisoned())\ntorch.cuda.is_available()\nprint(starter._cuda_poisoned())\n"
    assert _with_the_probe(code).split() == ["False", "True"]


def test_names_whose_import_would_leave_no_run_able_to_use_cuda_are_left_to_the_runs() -> None:
    # torch.utils.benchmark asks CUDA for its devices on import: the starter's trial fork sees it,
    # and the starter imports the script's libraries alone (its runs import that module themselves)
    code = (
        "why = starter._preload(['torch', 'torch.utils:benchmark', 'torch.nn.utils:prune'])\n"
        "print(why, 'torch.utils.benchmark' in sys.modules, 'torch.nn.utils.prune' in sys.modules)\n"
        "print(starter._preload(['torch', 'torch.nn.utils:prune']), 'torch.nn.utils.prune' in sys.modules)\n"
    )
    assert _with_the_probe(code).splitlines() == ["None False False", "None True"]


def _with_the_probe(code: str) -> str:
    """``code`` run in a fresh interpreter with torch and the starter imported (a process of its
    own: what it imports stays there); its output. Skipped where torch cannot say whether a
    forked process may use CUDA."""
    import subprocess
    import sys

    head = (
        "import sys, torch\nfrom fastload_cli.runner.child import starter\n"
        "if not hasattr(torch._C, '_cuda_isInBadFork'):\n    raise SystemExit('no probe')\n"
    )
    done = subprocess.run([sys.executable, "-c", head + code], capture_output=True, text=True, timeout=120, check=False)
    if "no probe" in done.stderr:
        pytest.skip("this torch build cannot say whether a forked process may use CUDA")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_starter_is_started_before_the_first_run_and_that_run_forks_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # fastload starts the command's starter as soon as it knows the script, so that torch's import
    # passes while fastload prepares; the first run then finds that starter, and starts no other.
    # Not where the runs start cold: a module, or a data-parallel job, which the launcher starts
    from dataclasses import replace

    from fastload_cli.config import Launcher, RunConfig
    from fastload_cli.runner import start

    started: list[tuple[object, ...]] = []

    class Recorded:
        def __init__(self, *key: object) -> None:
            started.append(key)
            self.proc = self

        def poll(self) -> None:
            return None

    monkeypatch.setattr(warm, "WarmStarter", Recorded)
    monkeypatch.setattr(warm, "_STARTERS", {})
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    config = RunConfig(script=script, script_arg0="train.py")
    start.prestart(config)
    assert len(started) == 1 and started[0][2] == ("torch",)
    assert isinstance(start._starter(config), Recorded) and len(started) == 1  # the first run's: the same
    start.prestart(replace(config, launcher=Launcher(nproc_per_node=2)))
    start.prestart(replace(config, module="package.train"))
    assert len(started) == 1
