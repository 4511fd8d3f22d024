"""Training started the way people start it: a package run with -m, a notebook, and the launcher
lines they type after --. Each gets the verdict of the equivalent script invocation, and sees what
it would see under plain python; what cannot run is refused in one line, exit 2, before any run.
No timing is asserted; every test leaves no process behind (the autouse fixture checks)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS, assert_verdict, run_fastload

pytestmark = pytest.mark.slow
TOY = SCRIPTS / "toy_train.py"
DDP = str(SCRIPTS / "ddp_train.py")
QUICK = ("--no-sweep", "--max-batches", "15", "--warmup", "3", "--json", "-", "-q")
LATENCY = ("--load-ms", "3", "--step-ms", "1")  # reads that sleep: io-bound however it is started


def report_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def package(tmp_path: Path) -> Path:
    """``pkg.train``: the toy script, importing a module of its own package relatively."""
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "helper.py").write_text("ANSWER = 42\n")
    (folder / "train.py").write_text("from .helper import ANSWER\n\nassert ANSWER == 42\n" + TOY.read_text())
    return tmp_path


def test_a_module_run_with_dash_m_sees_what_python_dash_m_shows_it_and_gets_the_scripts_verdict(
    tmp_path: Path,
) -> None:
    root = package(tmp_path)
    plain_view, fastload_view = tmp_path / "plain.json", tmp_path / "fastload.json"
    subprocess.run(
        [sys.executable, "-m", "pkg.train", "--steps", "2", "--view", str(plain_view)],
        cwd=root,
        check=True,
        timeout=120,
    )
    module = report_of(
        run_fastload("diagnose", "-m", "pkg.train", *QUICK, "--", *LATENCY, "--view", str(fastload_view), cwd=root)
    )
    assert module["script"] == "-m pkg.train"
    plain, seen = json.loads(plain_view.read_text()), json.loads(fastload_view.read_text())
    for key in ("name", "path0", "cwd", "file"):
        assert seen[key] == plain[key], key
    assert seen["argv"][0] == plain["argv"][0]  # the module's file, as python -m sets it
    script = report_of(run_fastload("diagnose", str(TOY), *QUICK, "--", *LATENCY))
    if assert_verdict(script, "io"):
        assert_verdict(module, "io")
    typed = report_of(run_fastload("diagnose", *QUICK, "--", "python", "-m", "pkg.train", *LATENCY, cwd=root))
    assert typed["script"] == "-m pkg.train" and typed["verdict"]["bottleneck"] == module["verdict"]["bottleneck"]


def notebook(path: Path, *cells: str) -> Path:
    code = [{"cell_type": "code", "source": c, "outputs": [], "metadata": {}, "execution_count": None} for c in cells]
    document = {"cells": [{"cell_type": "markdown", "source": "# train", "metadata": {}}, *code]}
    path.write_text(json.dumps({**document, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


DATA_CELL = """%matplotlib inline
import time
import torch
from torch.utils.data import DataLoader, Dataset

class Latency(Dataset):
    def __len__(self):
        return 4096
    def __getitem__(self, index):
        time.sleep(0.003)
        return torch.full((8,), float(index % 7)), index % 3

loader = DataLoader(Latency(), batch_size=4)
"""
LOOP_CELL = """def busy(ms):
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass

for epoch in range(100):
    for x, y in loader:
        busy(1)
"""


def test_a_notebook_runs_its_cells_in_order_and_gets_the_verdict_of_the_same_code_as_a_script(
    tmp_path: Path,
) -> None:
    book = notebook(tmp_path / "train.ipynb", DATA_CELL, LOOP_CELL)
    script = tmp_path / "train.py"
    script.write_text(DATA_CELL.replace("%matplotlib inline\n", "") + LOOP_CELL)
    from_notebook = report_of(run_fastload("diagnose", str(book), *QUICK))
    from_script = report_of(run_fastload("diagnose", str(script), *QUICK))
    if assert_verdict(from_script, "io"):
        assert_verdict(from_notebook, "io")
    assert from_notebook["runs"][0]["batches"] > 0


def test_a_notebook_cell_that_raises_is_named_with_its_line(tmp_path: Path) -> None:
    book = notebook(tmp_path / "train.ipynb", "x = 1", "y = 2\nraise ValueError('from the notebook')")
    done = run_fastload("diagnose", str(book), *QUICK)
    assert done.returncode == 1
    assert '[cell 3]", line 2' in done.stderr and "ValueError: from the notebook" in done.stderr


@pytest.mark.parametrize(
    ("typed", "names"),
    [
        (("deepspeed", "train.py"), "'deepspeed' is neither a script nor a launcher fastload knows"),
        (("torchrun", "--log-dir", "/tmp/x", str(TOY)), "torchrun --log-dir: not an option fastload passes on"),
    ],
)
def test_an_unknown_launcher_or_option_is_refused_in_one_line_before_any_run(
    typed: tuple[str, ...], names: str
) -> None:
    done = run_fastload("diagnose", "--", *typed)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and names in errors[0], done.stderr


def test_a_broken_notebook_cell_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    book = notebook(tmp_path / "train.ipynb", "import os", "def f(:\n    pass", LOOP_CELL)
    done = run_fastload("diagnose", str(book), *QUICK)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "cell 3: line 1" in errors[0], done.stderr


def test_python_before_the_script_is_the_script() -> None:
    typed = report_of(run_fastload("diagnose", *QUICK, "--", "python", str(TOY), *LATENCY))
    assert typed["script"] == str(TOY)
    assert_verdict(typed, "io")


JOB = ("--modes", "real,synthetic", "--max-batches", "15", "--warmup", "3", "--json", "-", "-q")


@pytest.mark.parametrize(
    "launcher",
    [
        ("torchrun", "--nproc-per-node", "2"),
        ("python", "-m", "torch.distributed.run", "--nproc_per_node=2", "--standalone"),
        ("accelerate", "launch", "--num_processes", "2"),
    ],
    ids=["torchrun", "torch.distributed.run", "accelerate launch"],
)
def test_a_launcher_line_as_typed_runs_the_job_fastloads_own_options_run(launcher: tuple[str, ...]) -> None:
    if launcher[0] == "accelerate" and importlib.util.find_spec("accelerate") is None:
        pytest.skip("accelerate is not installed (pip install 'fastload[frameworks]')")
    typed = report_of(run_fastload("diagnose", *JOB, "--", *launcher, DDP, "--load-ms", "3"))
    assert typed["environment"]["world_size"] == 2 and typed["environment"]["nproc_per_node"] == 2
    own = report_of(run_fastload("diagnose", "--nproc-per-node", "2", DDP, *JOB, "--", "--load-ms", "3"))
    if assert_verdict(own, "io"):
        assert_verdict(typed, "io")


def test_accelerate_launch_with_one_process_is_a_plain_run() -> None:
    if importlib.util.find_spec("accelerate") is None:
        pytest.skip("accelerate is not installed (pip install 'fastload[frameworks]')")
    typed = report_of(run_fastload("diagnose", *QUICK, "--", "accelerate", "launch", str(TOY), *LATENCY))
    assert typed["environment"]["world_size"] is None
    assert_verdict(typed, "io")
