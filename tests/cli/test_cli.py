"""Command-line parsing, messages and exit codes (no training runs needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fastload_cli.cli import app
from tests.conftest import SCRIPTS

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_help_lists_the_commands() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("diagnose", "synthetic-compare", "sweep-workers", "try", "fix", "demo"):
        assert command in result.output


def test_help_does_not_import_torch_or_pynvml() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['fastload', '--help']\n"
        "from fastload_cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('torch', 'pynvml', 'torchvision') if m in sys.modules)\n"
        "sys.stderr.write(repr(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "[]"


def test_python_dash_m_is_the_same_program() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fastload_cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout.strip() == "fastload 0.1.0"


@pytest.mark.parametrize(
    "args",
    [
        ["diagnose"],  # no script
        ["diagnose", "x.py", "--max-batches", "0"],
        ["diagnose", "x.py", "--no-such-option"],
        ["diagnose", "x.py", "--epochs", "1"],  # script options must follow --
        ["frobnicate"],
        ["sweep-workers", "x.py", "--pin-memory", "sometimes"],
        ["sweep-workers", "x.py", "--max-workers", "-1"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert invoke(*args).exit_code == 2


def error_lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith(("Error:", "Hint:"))]


def test_a_missing_script_is_one_error_and_one_hint(tmp_path: Path) -> None:
    result = invoke("diagnose", str(tmp_path / "train.py"))
    assert result.exit_code == 1
    lines = error_lines(result)
    assert len(lines) == 2 and "no such file" in lines[0] and lines[1].startswith("Hint:")


def test_a_directory_is_refused(tmp_path: Path) -> None:
    result = invoke("diagnose", str(tmp_path))
    assert result.exit_code == 1
    assert "is a directory" in result.output


def test_a_syntax_error_is_shown_with_its_line(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("import torch\nfor x in :\n    pass\n")
    result = invoke("diagnose", str(script))
    assert result.exit_code == 1
    assert "line 2" in result.output


def test_an_unwritable_report_path_fails_before_running(tmp_path: Path) -> None:
    result = invoke("diagnose", str(SCRIPTS / "toy_train.py"), "--json", str(tmp_path / "missing" / "r.json"))
    assert result.exit_code == 1
    assert "cannot write the report" in result.output
    assert "does not exist" in result.output


def test_a_report_path_that_is_a_directory_fails(tmp_path: Path) -> None:
    result = invoke("diagnose", str(SCRIPTS / "toy_train.py"), "--json", str(tmp_path))
    assert result.exit_code == 1
    assert "it is a directory" in result.output


def test_an_unknown_mode_is_an_error() -> None:
    result = invoke("diagnose", str(SCRIPTS / "toy_train.py"), "--modes", "real,turbo")
    assert result.exit_code == 1
    assert "unknown mode 'turbo'" in result.output


def test_an_unknown_example_lists_the_known_ones() -> None:
    result = invoke("demo", "nope")
    assert result.exit_code == 1
    assert "augmentation" in result.output and "storage-latency" in result.output


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--workers", "0,two", "--workers: 'two' is not a whole number >= 0"),
        ("--workers", ",", "--workers needs at least one value"),
        ("--prefetch-factor", "0", "--prefetch-factor: '0' is not a whole number >= 1"),
    ],
)
def test_bad_sweep_settings_are_errors_before_anything_runs(option: str, value: str, message: str) -> None:
    result = invoke("sweep-workers", str(SCRIPTS / "toy_train.py"), option, value)
    assert result.exit_code == 1
    assert message in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output", "text"], "expected FORMAT=PATH"),
        (["--output", "pdf=r.pdf"], "unknown format 'pdf'"),
        (["--output", "text=-", "--json", "-"], "only one report can go to stdout"),
    ],
)
def test_a_bad_output_is_a_usage_error_before_running(args: list[str], message: str) -> None:
    result = invoke("diagnose", str(SCRIPTS / "toy_train.py"), *args)
    assert result.exit_code == 2
    assert message in result.output


def test_an_unwritable_output_path_fails_before_running(tmp_path: Path) -> None:
    result = invoke("diagnose", str(SCRIPTS / "toy_train.py"), "--output", f"text={tmp_path}")
    assert result.exit_code == 1
    assert "it is a directory" in result.output


def test_a_report_is_written_whole_or_not_at_all(tmp_path, monkeypatch) -> None:
    import os

    from fastload_cli.cli import run as running

    target = tmp_path / "report.json"
    target.write_text("the old report")
    os.chmod(target, 0o640)
    running.write_atomically(target, "the new report")
    assert target.read_text() == "the new report" and (target.stat().st_mode & 0o777) == 0o640

    def broken(fd: int, mode: str):  # the disk fills half way through the write
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(running.os, "fdopen", broken)
    with pytest.raises(OSError):
        running.write_atomically(target, "a report that never lands")
    assert target.read_text() == "the new report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_fix_apply_where_no_one_can_confirm_is_a_usage_error_before_any_run() -> None:
    result = invoke("fix", str(SCRIPTS / "toy_train.py"), "--apply")  # the test's stdin is no terminal
    assert result.exit_code == 2
    assert "--apply asks before it changes a file" in result.output and "--yes" in result.output


def test_fix_under_a_launcher_is_a_usage_error() -> None:
    result = invoke("fix", "--", "torchrun", "--nproc-per-node", "2", str(SCRIPTS / "toy_train.py"))
    assert result.exit_code == 2
    assert "plain runs of one process" in result.output


def test_fix_takes_at_least_one_round() -> None:
    result = invoke("fix", str(SCRIPTS / "toy_train.py"), "--rounds", "0")
    assert result.exit_code == 2
