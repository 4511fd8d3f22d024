"""The plain run ``fastload fix`` proves a change with: the script as ``python`` runs it, only its
epochs timed; a patched copy of the script or of a module it imports standing in for the original
under the original's name (``__file__``, relative paths); a failure said with the script's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastload_cli.config import RunConfig
from fastload_cli.errors import ScriptFailedError
from fastload_cli.runner.plain import PlainSettings, plain_run

SETTINGS = PlainSettings(epochs=2, epoch_batches=50, timeout_s=120)
DATA = """import torch
from torch.utils.data import DataLoader, TensorDataset


def loader():
    return DataLoader(TensorDataset(torch.arange(16.0)), batch_size=2)
"""
TRAIN = """import sys
from pathlib import Path

from data import loader

Path(sys.argv[1]).write_text(__file__)
train = loader()
for epoch in range(5):
    for batch in train:
        pass
"""


def config(folder: Path) -> RunConfig:
    return RunConfig(script=folder / "train.py", script_arg0="train.py", script_args=("seen.txt",), cwd=folder)


def test_the_epochs_of_the_script_as_it_is_are_timed(tmp_path: Path) -> None:
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "train.py").write_text(TRAIN)
    run = plain_run(config(tmp_path), {}, SETTINGS, "the script")
    assert run.batches == (8, 8)  # two epochs of 16 samples in 2s, then the script is ended
    assert run.batches_per_s is not None and run.batches_per_s > 0


def test_a_patched_module_and_script_stand_in_for_the_originals_under_their_names(tmp_path: Path) -> None:
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "train.py").write_text(TRAIN)
    copies = tmp_path / "copies"
    copies.mkdir()
    (copies / "data.py").write_text(DATA.replace("batch_size=2", "batch_size=4"))
    (copies / "train.py").write_text(TRAIN.replace("range(5)", "range(1)"))
    sources = {tmp_path / "data.py": copies / "data.py", tmp_path / "train.py": copies / "train.py"}
    run = plain_run(config(tmp_path), sources, SETTINGS, "the patched script")
    assert run.batches == (4,)  # the copy's batch size, and its one epoch
    assert (tmp_path / "seen.txt").read_text() == str(tmp_path / "train.py")  # the original's __file__


def test_a_script_that_fails_before_its_first_batch_is_said_with_its_output(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("raise RuntimeError('no data here')\n")
    with pytest.raises(ScriptFailedError, match="the plain run of the script trained no batch") as caught:
        plain_run(config(tmp_path), {}, SETTINGS, "the script")
    assert "RuntimeError: no data here" in caught.value.output_tail
