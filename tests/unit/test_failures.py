"""Hints for known failure signatures."""

from __future__ import annotations

import pytest

from fastload_cli.analyzer.failures import KILLED_HINT, SHM_HINT, WORKER_RAISED_HINT, hint_for


@pytest.mark.parametrize(
    ("message", "tail", "hint"),
    [
        ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.", "", KILLED_HINT),
        ("RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly", "", KILLED_HINT),
        (
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory",
            SHM_HINT,
        ),
        ("ValueError: Caught ValueError in DataLoader worker process 0.\nOriginal Traceback", "", WORKER_RAISED_HINT),
    ],
)
def test_known_signatures_get_their_hint(message: str, tail: str, hint: str) -> None:
    assert hint_for(message, tail) == hint


def test_a_missing_torch_names_the_interpreter() -> None:
    found = hint_for("ModuleNotFoundError: No module named 'torch'", python="/opt/venv/bin/python")
    assert found is not None and "torch is not installed for /opt/venv/bin/python" in found


def test_an_ordinary_error_gets_no_hint() -> None:
    assert hint_for("ValueError: bad learning rate", "Traceback ...") is None
