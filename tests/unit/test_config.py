"""Input validation: scripts that cannot run and modes that do not exist fail with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastload_cli.config import check_counts, check_script, parse_modes
from fastload_cli.errors import FastloadError, ScriptNotFoundError
from fastload_cli.records import Mode, ModeSpec


def test_a_missing_script(tmp_path: Path) -> None:
    with pytest.raises(ScriptNotFoundError, match="no such file"):
        check_script("nope.py", tmp_path)


def test_a_directory(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ScriptNotFoundError, match="is a directory"):
        check_script("d", tmp_path)


def test_not_python(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(ScriptNotFoundError, match="does not look like a Python script"):
        check_script("data.csv", tmp_path)


def test_a_python_shebang_without_suffix_is_fine(tmp_path: Path) -> None:
    (tmp_path / "train").write_text("#!/usr/bin/env python3\nprint(1)\n")
    assert check_script("train", tmp_path) == tmp_path / "train"


def test_a_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("x = 1\ndef f(:\n")
    with pytest.raises(FastloadError, match=r"syntax error in bad\.py, line 2"):
        check_script("bad.py", tmp_path)


def test_counts() -> None:
    with pytest.raises(FastloadError, match="--max-batches"):
        check_counts(warmup=0, max_batches=0, timeout_s=1)
    with pytest.raises(FastloadError, match="--timeout"):
        check_counts(warmup=0, max_batches=1, timeout_s=0)


def test_modes_parse_and_real_comes_first() -> None:
    assert parse_modes("synthetic,workers=4") == (
        ModeSpec(mode=Mode.REAL),
        ModeSpec(mode=Mode.SYNTHETIC),
        ModeSpec(mode=Mode.WORKERS, workers=4),
    )
    assert ModeSpec.parse("workers=4").label == "workers=4"


@pytest.mark.parametrize("text", ["fast", "workers=x", "real=2", ","])
def test_bad_modes(text: str) -> None:
    with pytest.raises(FastloadError):
        parse_modes(text)


def test_a_reports_mode_and_variant_read_back_as_the_mode_that_ran() -> None:
    from fastload_cli.records import Mode, ModeSpec

    specs = [
        ModeSpec(mode=Mode.REAL),
        ModeSpec(mode=Mode.SYNTHETIC_DEVICE),
        ModeSpec(mode=Mode.CACHED_NO_AUG),
        ModeSpec(mode=Mode.SPLIT),
        ModeSpec(mode=Mode.WORKERS, workers=0),
        ModeSpec(mode=Mode.WORKERS, workers=12, prefetch_factor=4, pin_memory=False),
        ModeSpec(mode=Mode.WORKERS, workers=8, pin_memory=True),
        ModeSpec(mode=Mode.FIX, fixes=("persistent-workers", "prefetch-factor=4")),
        ModeSpec(mode=Mode.SYNTHETIC, ranks=(1, 3)),
    ]
    for spec in specs:
        assert ModeSpec.from_label(spec.label, spec.variant) == spec
    with pytest.raises(ValueError, match="no mode is labelled 'warp'"):
        ModeSpec.from_label("warp")
