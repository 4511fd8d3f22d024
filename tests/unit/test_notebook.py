"""A notebook as one script: its code cells in order, IPython's syntax handled or refused by cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastload_cli.records.notebook import NotebookError, cells, check


def notebook(tmp_path: Path, *sources: str | list[str], markdown_first: bool = True) -> Path:
    found = [{"cell_type": "markdown", "source": "# Training"}] if markdown_first else []
    found += [{"cell_type": "code", "source": s, "outputs": [], "metadata": {}} for s in sources]
    path = tmp_path / "train.ipynb"
    path.write_text(json.dumps({"cells": found, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))
    return path


def test_code_cells_run_in_order_numbered_as_jupyter_shows_them(tmp_path: Path) -> None:
    path = notebook(tmp_path, ["import os\n", "x = 1\n"], "y = x + 1")
    found = cells(path)
    assert [c.number for c in found] == [2, 3]  # the markdown cell is the first
    assert found[0].source == "import os\nx = 1\n" and found[1].source == "y = x + 1\n"
    assert found[1].filename("train.ipynb") == "train.ipynb [cell 3]"


def test_magics_that_change_nothing_are_left_out_and_timed_code_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "8")  # restored after the test
    path = notebook(
        tmp_path,
        "%matplotlib inline\n%load_ext autoreload\n%autoreload 2\nimport math",
        "%env OMP_NUM_THREADS=1\n%time y = math.sqrt(4)\nmath.sqrt?",
        "%%time\nfor i in range(2):\n    %time z = i",
    )
    namespace: dict[str, object] = {}
    for cell in cells(path):
        exec(compile(cell.source, cell.filename("nb"), "exec"), namespace)
    assert namespace["y"] == 2.0 and namespace["z"] == 1
    assert __import__("os").environ.get("OMP_NUM_THREADS") == "1"


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("!pip install timm", "cell 1: the shell line `!pip install timm`"),
        ("%%bash\necho hi", "cell 1: the cell magic %%bash"),
        ("import os\n%run other.py", "cell 1: the magic %run"),
    ],
)
def test_what_is_not_python_is_refused_naming_the_cell(tmp_path: Path, source: str, says: str) -> None:
    with pytest.raises(NotebookError, match=says):
        cells(notebook(tmp_path, source, markdown_first=False))


def test_a_syntax_error_names_the_cell_and_its_line(tmp_path: Path) -> None:
    with pytest.raises(NotebookError, match=r"cell 3: line 2: "):
        check(notebook(tmp_path, "x = 1", "x = 2\ndef f(:\n  pass"), "train.ipynb")
    with pytest.raises(NotebookError, match="not a Jupyter notebook"):
        (tmp_path / "x.ipynb").write_text("[]")
        cells(tmp_path / "x.ipynb")
