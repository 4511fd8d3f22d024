"""The digest of a batch's drawn indices: the same in every process for the same indices (the
runs compared are separate processes), other for other indices."""

from __future__ import annotations

import os
import subprocess
import sys

from fastload_cli.runner.child.draws import _digest


def test_the_same_indices_give_the_same_digest_in_another_process() -> None:
    code = "from fastload_cli.runner.child.draws import _digest; print(_digest([3, 1, 4, 1, 5]), _digest(['a', 'b']))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # a string's hash differs from process to process
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.split() == [_digest([3, 1, 4, 1, 5]), _digest(["a", "b"])]


def test_other_indices_give_another_digest() -> None:
    assert _digest([3, 1, 4]) != _digest([3, 1, 5]) != _digest(7)
    assert _digest(7) == _digest([7])  # one index (no batching) reads as a draw of one
