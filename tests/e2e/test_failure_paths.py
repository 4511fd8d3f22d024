"""Nothing outlives fastload: killed or hung up during a data-parallel job, every process of the job
(the launcher's agent, the ranks, their DataLoader workers) is gone within seconds, and a rank
started after fastload died leaves rather than waiting for it. No timing beyond those deadlines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastload_cli.records import ChildSpec
from fastload_cli.records.protocol import BOOTSTRAP, CHANNEL_DIR_ENV, CHANNEL_OPEN_S, PARENT_GONE
from tests.conftest import ROOT, SCRIPTS, TEST_ID_ENV, _run_processes

pytestmark = pytest.mark.slow
DDP = str(SCRIPTS / "ddp_train.py")
GONE_WITHIN_S = 10.0


def job_under_fastload(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A 2-rank job under fastload, once rank 0 has trained 15 steps; and its report's path."""
    marker, out = tmp_path / "marker", tmp_path / "report.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastload_cli", "diagnose", "--nproc-per-node", "2", DDP, "--max-batches", "100000",
         "--fixed-batches", "--json", str(out), "--", "--workers", "1", "--load-ms", "3", "--marker", str(marker),
         "--marker-after", "15"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),  # as from a terminal, even under nohup
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "rank 0 never reached its 15th step"
    return proc, out


def left_after(deadline_s: float) -> list[str]:
    """This test's processes still alive ``deadline_s`` from now (checked until then)."""
    deadline = time.monotonic() + deadline_s
    while True:
        alive = _run_processes(os.environ[TEST_ID_ENV])
        if not alive or time.monotonic() > deadline:
            return [" ".join(p.cmdline()[:4]) for p in alive]
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["killed", "hung-up"])
def test_no_process_of_a_job_outlives_fastload(tmp_path: Path, sig: int) -> None:
    proc, out = job_under_fastload(tmp_path)
    try:
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert left_after(GONE_WITHIN_S) == []
    if sig == signal.SIGHUP:  # a hang-up is a stop: the partial report, exit 129
        assert proc.returncode == 129, stderr
        report = json.loads(out.read_text())
        assert report["interrupted"] is True and report["runs"][0]["batches"] > 0


def test_a_rank_whose_fastload_is_gone_before_it_reports_leaves(tmp_path: Path) -> None:
    # a rank the launcher started after fastload died: its FIFO is there, nobody reads it
    os.mkfifo(tmp_path / "events.0", 0o600)
    env = {**os.environ, CHANNEL_DIR_ENV: str(tmp_path), "LOCAL_RANK": "0"}
    child = [sys.executable, "-c", BOOTSTRAP, str(ROOT), ChildSpec(warmup=1).to_json(), DDP]
    done = subprocess.run(child, env=env, capture_output=True, text=True, timeout=CHANNEL_OPEN_S + 30)
    assert done.returncode == PARENT_GONE, done.stderr


def test_under_nohup_a_hang_up_does_not_stop_fastload(tmp_path: Path) -> None:
    # nohup starts fastload with SIGHUP ignored: a closed terminal must leave the run going
    out = tmp_path / "report.json"
    command = [sys.executable, "-m", "fastload_cli", "diagnose", str(SCRIPTS / "toy_train.py"), "--modes", "real",
               "--max-batches", "40", "--fixed-batches", "--json", str(out), "--", "--load-ms", "20"]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )  # fmt: skip
    time.sleep(4)  # inside the run
    proc.send_signal(signal.SIGHUP)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert json.loads(out.read_text())["runs"][0]["batches"] == 40
