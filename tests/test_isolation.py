"""The leftover-process check counts the processes the test started, and no one else's."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from tests.conftest import TEST_ID_ENV, _run_processes

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def detached(test_id: str) -> psutil.Process:
    """A sleeping process that is not this test's descendant (its parent has exited), carrying
    ``test_id``, as a run's re-parented worker would, or another test's or fastload's process."""
    env = {**os.environ, TEST_ID_ENV: test_id}
    quiet = "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"  # not the pipe its parent's output goes to
    start = f"import subprocess; print(subprocess.Popen({SLEEP!r}, {quiet}).pid)"
    outer = subprocess.run(
        [sys.executable, "-c", start], env=env, capture_output=True, text=True, timeout=30, check=True
    )
    return psutil.Process(int(outer.stdout))


def test_a_process_of_this_test_is_found_even_once_it_is_not_a_child() -> None:
    sleeper = detached(os.environ[TEST_ID_ENV])
    try:
        assert sleeper.pid in {p.pid for p in _run_processes(os.environ[TEST_ID_ENV])}
    finally:
        sleeper.kill()


def test_another_tests_or_another_fastloads_processes_are_not_counted() -> None:
    sleeper = detached("another")
    try:
        assert sleeper.pid not in {p.pid for p in _run_processes(os.environ[TEST_ID_ENV])}
        assert sleeper.pid in {p.pid for p in _run_processes("another")}
    finally:
        sleeper.kill()
