"""Data-parallel jobs on CPU: 2 ranks on the gloo backend, launched through torch.distributed.run.
A balanced job gets one process's verdict, a rank that reads slowly is named, a rank that raises
or a Ctrl-C stops the whole job, a rank whose step is slow is told from the ranks that wait for
it, and two node processes on one machine (by hand, or as srun starts them under SLURM) merge into
the job's report.
No timing is asserted; every test leaves no process behind (the autouse fixture checks)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS, assert_verdict, run_fastload

pytestmark = pytest.mark.slow
DDP = str(SCRIPTS / "ddp_train.py")
QUICK = ("--max-batches", "15", "--warmup", "3", "--json", "-", "-q")


def report_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_balanced_job_gets_the_verdict_one_process_gets() -> None:
    alone = report_of(run_fastload("diagnose", DDP, "--no-sweep", *QUICK, "--", "--load-ms", "3"))
    job = report_of(
        run_fastload("diagnose", "--nproc-per-node", "2", DDP, "--no-sweep", *QUICK, "--", "--load-ms", "3")
    )
    assert_verdict(alone, "io")
    assert_verdict(job, "io")
    assert alone["environment"]["world_size"] is None and alone["runs"][0]["ranks"] == []
    assert job["environment"]["world_size"] == 2 and job["environment"]["nproc_per_node"] == 2
    for run in job["runs"]:
        assert [(r["rank"], r["local_rank"]) for r in run["ranks"]] == [(0, 0), (1, 1)]
        assert all(r["batches"] > 0 for r in run["ranks"])
    assert job["verdict"]["slowest_rank"] is None
    assert all(run["ranks_changed"] == [] for run in job["runs"])  # no rank to free alone


def test_a_rank_whose_loader_reads_slowly_is_the_slowest_and_freeing_it_alone_is_measured() -> None:
    job = report_of(run_fastload("diagnose", "--nproc-per-node", "2", DDP, "--modes", "real,synthetic", *QUICK,
                                 "--", "--slow-rank", "1", "--slow-ms", "8"))  # fmt: skip
    assert_verdict(job, "io")
    assert job["verdict"]["slowest_rank"] == 1
    assert job["verdict"]["label"].endswith("on rank 1")
    waits = {r["rank"]: r["data_wait_fraction"] for r in job["runs"][0]["ranks"]}
    assert waits[1] > waits[0]
    freed = next(run for run in job["runs"] if run["ranks_changed"])
    assert freed["mode"] == "synthetic@rank1" and freed["ranks_changed"] == [1] and freed["status"] == "ok"
    finding = next(f for f in job["verdict"]["findings"] if f["kind"] == "straggler-freed")
    assert finding["values"]["job_gain"] > 1 + finding["values"]["noise"], finding["sentence"]
    assert job["recommendations"][0]["id"] == "straggler-input"


def test_a_rank_whose_step_is_slow_is_named_with_its_step_split_from_the_wait_for_it() -> None:
    # rank 1's step five times rank 0's: on two shared cores, rank 0's slowest steps (its p90, which
    # the rule holds rank 1 against) can reach three times its median
    straggling_step = ("--compute-rank", "1", "--compute-x", "5", "--width", "1024", "--workers", "0")
    job = report_of(run_fastload("diagnose", "--nproc-per-node", "2", DDP, "--modes", "real,synthetic", *QUICK,
                                 "--", *straggling_step))  # fmt: skip
    assert_verdict(job, "compute")
    assert job["verdict"]["slowest_rank"] == 1
    split = {r["rank"]: r for r in job["runs"][0]["ranks"]}
    assert split[1]["step_busy_ms_p50"] > split[0]["step_busy_ms_p50"]
    assert split[0]["step_blocked_fraction"] > split[1]["step_blocked_fraction"]  # rank 0 waits for rank 1
    assert "rank 1's step takes" in job["verdict"]["label"]
    assert all(run["ranks_changed"] == [] for run in job["runs"])  # no run frees a rank's step


def test_a_rank_that_raises_stops_the_job_and_its_traceback_is_kept() -> None:
    done = run_fastload("diagnose", "--nproc-per-node", "2", DDP, "--modes", "real", "--max-batches", "500",
                        "--fixed-batches", "--json", "-", "--", "--fail-rank", "1", "--fail-at", "15")  # fmt: skip
    report = report_of(done)
    real = report["runs"][0]
    assert real["status"] == "failed"
    assert real["error"].startswith("rank 1: RuntimeError: rank 1 failed at step 15")
    assert any("rank 1 failed at step 15" in c for c in report["verdict"]["caveats"])


def test_a_script_that_needs_the_launcher_says_how_to_run_it() -> None:
    done = run_fastload("diagnose", DDP, "--max-batches", "5", "--", "--needs-launcher")
    assert done.returncode == 1
    assert "RANK expected" in done.stderr and "--nproc-per-node" in done.stderr


def test_ctrl_c_stops_every_rank_and_writes_the_partial_report(tmp_path: Path) -> None:
    marker, out = tmp_path / "marker", tmp_path / "report.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastload_cli", "diagnose", "--nproc-per-node", "2", DDP, "--max-batches", "100000",
         "--fixed-batches", "--json", str(out), "--",
         "--load-ms", "3", "--marker", str(marker), "--marker-after", "15"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "rank 0 never reached its 15th step"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    report = json.loads(out.read_text())
    assert report["interrupted"] is True
    real = report["runs"][0]
    assert real["status"] == "interrupted" and [r["rank"] for r in real["ranks"]] == [0, 1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_nodes_write_their_reports_and_merge_names_the_slowest_rank_of_the_job(tmp_path: Path) -> None:
    port = str(free_port())
    nodes = []
    for node in (0, 1):
        rendezvous = ["--nproc-per-node", "1", "--nnodes", "2", "--node-rank", str(node), "--master-addr",
                      "127.0.0.1", "--master-port", port]  # fmt: skip
        command = [sys.executable, "-m", "fastload_cli", "diagnose", *rendezvous, DDP, "--modes", "real,synthetic",
                   "--max-batches", "15", "--warmup", "3", "-q", "--json", str(tmp_path / f"node{node}.json"),
                   "--", "--slow-rank", "1", "--slow-ms", "8"]  # fmt: skip
        nodes.append(subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        for proc in nodes:
            _, stderr = proc.communicate(timeout=300)
            assert proc.returncode == 0, stderr[-3000:]
    finally:
        for proc in nodes:
            if proc.poll() is None:
                proc.kill()
    reports = [json.loads((tmp_path / f"node{n}.json").read_text()) for n in (0, 1)]
    assert [r["environment"]["world_size"] for r in reports] == [2, 2]
    assert [[x["rank"] for x in r["runs"][0]["ranks"]] for r in reports] == [[0], [1]]
    assert any("`fastload merge`" in c for c in reports[0]["verdict"]["caveats"])
    merged = report_of(run_fastload("merge", str(tmp_path / "node0.json"), str(tmp_path / "node1.json"), "--json", "-"))
    assert merged["command"] == "merge"
    assert [x["rank"] for x in merged["runs"][0]["ranks"]] == [0, 1]
    assert merged["verdict"]["slowest_rank"] == 1
    assert_verdict(merged, "io")


def test_srun_on_two_nodes_takes_the_rendezvous_from_slurm_and_the_merge_names_the_slowest_rank(
    tmp_path: Path,
) -> None:
    """Two nodes of a SLURM job step, as srun starts fastload on each: the same command line, and
    SLURM's environment (simulated here, with the first node on 127.0.0.1) saying which node is which."""
    port = str(free_port())
    command = [sys.executable, "-m", "fastload_cli", "diagnose", "--nproc-per-node", "1", DDP, "--modes",
               "real,synthetic", "--max-batches", "15", "--warmup", "3", "--json", str(tmp_path / "report.json"),
               "--", "--slow-rank", "1", "--slow-ms", "8"]  # fmt: skip
    slurm = {"SLURM_JOB_ID": "4242", "SLURM_NNODES": "2", "SLURM_STEP_NODELIST": "127.0.0.1,127.0.0.2",
             "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "MASTER_PORT": port}  # fmt: skip
    nodes = [
        subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, **slurm, "SLURM_NODEID": str(node)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for node in (0, 1)
    ]
    try:
        errors = [proc.communicate(timeout=300)[1] for proc in nodes]
    finally:
        for proc in nodes:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in nodes] == [0, 0], errors[0][-2000:] + errors[1][-2000:]
    assert "SLURM: node 1 of 2, meeting at 127.0.0.1:" + port in errors[1]
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["report.node0.json", "report.node1.json"]
    merged = report_of(run_fastload("merge", *(str(tmp_path / name) for name in written), "--json", "-"))
    assert [x["rank"] for x in merged["runs"][0]["ranks"]] == [0, 1]
    assert merged["verdict"]["slowest_rank"] == 1
