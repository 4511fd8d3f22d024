"""``%load_ext fastload_cli.ipython``: the ``%fastload`` magic, and the fastload command it runs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from fastload_cli import ipython


def test_a_reporting_command_writes_its_report_where_the_magic_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # no HTML extra
    command, page, text = ipython.invocation(["diagnose", "train.py", "--", "--lr", "1"], tmp_path)
    assert command == [sys.executable, "-m", "fastload_cli", "diagnose", "--output", f"text={text}", "train.py",
                       "--", "--lr", "1"]  # fmt: skip
    assert page is None and text == tmp_path / "report.txt"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())  # the HTML extra installed
    command, page, text = ipython.invocation(["try", "train.py", "--fix", "pin-memory"], tmp_path)
    assert command[3:6] == ["try", "--html", str(tmp_path / "report.html")] and text is None


def test_other_commands_run_as_given() -> None:
    command, page, text = ipython.invocation(["compare", "a.json", "b.json"], Path("/unused"))
    assert command[-3:] == ["compare", "a.json", "b.json"] and page is None and text is None


def test_the_extension_adds_the_magic_to_a_shell() -> None:
    if importlib.util.find_spec("IPython") is None:
        pytest.skip("IPython is not installed")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_line_magic("load_ext", "fastload_cli.ipython")
        assert "fastload" in shell.magics_manager.magics["line"]
    finally:
        InteractiveShell.clear_instance()
