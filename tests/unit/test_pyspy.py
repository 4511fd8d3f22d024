"""py-spy: its raw output read, and its absence or failure reported instead of a profile."""

from __future__ import annotations

import sys
from pathlib import Path

from fastload_cli.samplers.pyspy import PySpy, read_raw


def test_collapsed_stacks_count_their_innermost_frame() -> None:
    raw = (
        "<module> (train.py:10);__getitem__ (data.py:20);decode (data.py:31) 7\n"
        "<module> (train.py:10);__getitem__ (data.py:20);rotate (aug.py:5) 2\n"
        "<module> (train.py:10);collate (data.py:40);decode (data.py:31) 1\n"
        "garbage line\n"
    )
    assert read_raw(raw) == {"decode (data.py:31)": 8, "rotate (aug.py:5)": 2}


def test_without_py_spy_the_profile_says_how_to_get_it() -> None:
    spy = PySpy(1.0, executable=None)
    spy.start([12345], "workers")
    profile = spy.stop()
    assert profile.top == () and profile.unavailable is not None
    assert "py-spy is not installed" in profile.unavailable


def test_a_py_spy_that_cannot_attach_gives_its_reason(tmp_path: Path) -> None:
    fake = tmp_path / "py-spy"
    fake.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stderr.write('Error: Permission denied (os error 13)\\n')\nsys.exit(1)\n"
    )
    fake.chmod(0o755)
    spy = PySpy(1.0, executable=str(fake))
    spy.start([12345], "workers")
    profile = spy.stop()
    assert profile.unavailable is not None and "Permission denied" in profile.unavailable


def test_a_run_that_ends_before_sampling_starts_says_so(tmp_path: Path) -> None:
    profile = PySpy(1.0, executable="/bin/true").stop()
    assert profile.unavailable == "the run ended before the loading processes could be profiled"
