"""Shared fixtures: every test must leave no process of a fastload run behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from fastload_cli.records import RUN_ID_ENV

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "fastload_cli" / "examples"
STRAY_GRACE_S = 5.0


def _run_processes(since: float) -> list[psutil.Process]:
    """Live processes started since ``since`` that belong to a fastload run or to this test."""
    found = {p.pid: p for p in psutil.Process().children(recursive=True)}
    for proc in psutil.process_iter(["create_time"]):
        if proc.pid in found or proc.info["create_time"] < since - 1:
            continue
        try:
            if RUN_ID_ENV in proc.environ():
                found[proc.pid] = proc
        except psutil.Error:
            continue
    return [p for p in found.values() if _alive(p)]


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.fixture(autouse=True)
def no_stray_processes() -> Iterator[None]:
    """Fail a test that leaves a child, a DataLoader worker or any process of a run behind."""
    started = time.time()
    yield
    deadline = time.monotonic() + STRAY_GRACE_S
    strays = _run_processes(started)
    while strays and time.monotonic() < deadline:
        time.sleep(0.1)
        strays = _run_processes(started)
    if strays:
        described = [f"{p.pid} {' '.join(p.cmdline()[:4])}" for p in strays if _alive(p)]
        for p in strays:
            with contextlib.suppress(psutil.Error):
                p.kill()
        pytest.fail(f"processes left behind: {described}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU tests run only where CUDA and NVML work; elsewhere they skip, saying why."""
    if not any("gpu" in item.keywords for item in items):
        return
    reason = _no_gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def _no_gpu_reason() -> str | None:
    import torch

    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False on this machine"
    from fastload_cli.samplers.gpu import open_nvml

    nvml = open_nvml()
    if isinstance(nvml, str):
        return nvml
    nvml.shutdown()
    return None


def run_fastload(
    *args: str, cwd: Path | None = None, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m fastload_cli ARGS`` as a user would run it (``env`` added to the environment);
    stdout and stderr captured."""
    env = dict(os.environ, COLUMNS="100", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "fastload_cli", *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
