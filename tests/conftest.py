"""Shared fixtures: every test must leave no process of a fastload run behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = Path(__file__).resolve().parent / "scripts"
EXAMPLES = ROOT / "fastload_cli" / "examples"
STRAY_GRACE_S = 5.0
TEST_ID_ENV = "FASTLOAD_TEST_ID"  # set for each test: the processes it starts carry it


def _run_processes(test_id: str) -> list[psutil.Process]:
    """Live processes this test started: its descendants, and every process that carries its id
    (a process of a fastload run inherits the environment it was started with, re-parented or
    not); never another test's or another fastload's on the same machine."""
    found = {p.pid: p for p in psutil.Process().children(recursive=True)}
    for proc in psutil.process_iter():
        if proc.pid in found or proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(TEST_ID_ENV) == test_id:
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
def no_stray_processes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test that leaves a child, a DataLoader worker or any process of a run behind."""
    test_id = uuid.uuid4().hex
    monkeypatch.setenv(TEST_ID_ENV, test_id)  # every process the test starts inherits it
    yield
    deadline = time.monotonic() + STRAY_GRACE_S
    strays = _run_processes(test_id)
    while strays and time.monotonic() < deadline:
        time.sleep(0.1)
        strays = _run_processes(test_id)
    if strays:
        described = [f"{p.pid} {' '.join(p.cmdline()[:4])}" for p in strays if _alive(p)]
        for p in strays:
            with contextlib.suppress(psutil.Error):
                p.kill()
        pytest.fail(f"processes left behind: {described}")


COMPARED = ("real", "synthetic", "no-aug")  # the runs a verdict compares


def disturbed_by_others(report: dict) -> bool:
    """fastload measured other processes taking a notable share of the machine's CPU during a
    run the verdict compares (another fastload, another test suite): it says so in its caveats."""
    from fastload_cli.analyzer.thresholds import FOREIGN_LOAD_NOTABLE

    loads = [r.get("foreign_cpu_fraction") or 0.0 for r in report["runs"] if r["mode"] in COMPARED]
    return any(load >= FOREIGN_LOAD_NOTABLE for load in loads)


def assert_verdict(report: dict, *expected: str) -> bool:
    """The planted verdict; or, where other processes kept the machine busy during a compared run
    and the verdict is another, that fastload said so: a caveat naming the other processes and
    less than full confidence (it lowers it, or gives none). True where the planted verdict was
    checked, so what rests on it can be."""
    from fastload_cli.analyzer.thresholds import CONFIDENCE_DISTURBED, CONFIDENCE_STRONG

    verdict = report["verdict"]
    if verdict["bottleneck"] in expected:
        return True
    head = f"{verdict['bottleneck']} {verdict['confidence']}: {verdict['label']}"
    said = "\n".join([head, *verdict["evidence"], *verdict["caveats"]])  # what it rests on, to read on failure
    assert disturbed_by_others(report), said
    assert any("ther processes" in c for c in verdict["caveats"]), said
    most = round(CONFIDENCE_STRONG * CONFIDENCE_DISTURBED, 2)  # the report gives two decimals
    assert verdict["confidence"] <= most, said  # lowered from the most it gives
    return False


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
