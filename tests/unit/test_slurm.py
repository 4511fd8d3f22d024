"""Under SLURM: the job's nodes, this node's rank and the rendezvous read from SLURM's environment,
the user's own options first, and each node's report path its own."""

from __future__ import annotations

import pytest

from fastload_cli.cli.launcher import LaunchOptions, from_slurm
from fastload_cli.cli.slurm import PORT_BASE, first_host, node_path, slurm_job, tasks_on_this_node
from fastload_cli.errors import UsageError

STEP = {"SLURM_JOB_ID": "123456", "SLURM_NNODES": "4", "SLURM_NODEID": "2", "SLURM_STEP_NODELIST": "gpu[007-010]",
        "SLURM_STEP_TASKS_PER_NODE": "1(x4)"}  # fmt: skip


@pytest.mark.parametrize(
    ("hostlist", "first"),
    [
        ("node1", "node1"),
        ("gpu[003-010,012],cpu1", "gpu003"),
        ("cpu1,gpu[003-010]", "cpu1"),
        ("rack[2-3]-n[01,04]", "rack2-n01"),
        ("a[5],b", "a5"),
    ],
)
def test_the_first_host_of_a_hostlist(hostlist: str, first: str) -> None:
    assert first_host(hostlist) == first


def test_a_step_on_several_nodes_meets_at_its_first_node_on_a_port_from_the_job_id() -> None:
    job = slurm_job(STEP)
    assert job is not None
    assert (job.nnodes, job.node_rank, job.master_addr) == (4, 2, "gpu007")
    assert job.master_port == PORT_BASE + 123456 % 20000


def test_the_users_master_addr_and_port_win() -> None:
    job = slurm_job({**STEP, "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "29500"})
    assert job is not None and (job.master_addr, job.master_port) == ("10.0.0.5", 29500)


def test_outside_slurm_or_with_too_little_said_nothing_is_taken() -> None:
    assert slurm_job({}) is None
    assert slurm_job({k: v for k, v in STEP.items() if k != "SLURM_NODEID"}) is None
    assert slurm_job({**STEP, "SLURM_JOB_ID": "x"}) is None


def test_several_tasks_on_a_node_are_refused_with_the_srun_line_that_works() -> None:
    assert tasks_on_this_node({"SLURM_STEP_TASKS_PER_NODE": "8(x2)"}) == 8
    assert tasks_on_this_node({"SLURM_NTASKS_PER_NODE": "1"}) == 1
    with pytest.raises(UsageError, match="8 tasks on this node") as raised:
        slurm_job({**STEP, "SLURM_STEP_TASKS_PER_NODE": "8(x4)"})
    assert "--ntasks-per-node=1" in (raised.value.hint or "")


def test_launcher_options_are_filled_only_where_the_user_named_no_rendezvous() -> None:
    filled, job = from_slurm(LaunchOptions(nproc_per_node=8), STEP)
    assert job is not None
    assert (filled.nnodes, filled.node_rank, filled.master_addr) == ("4", 2, "gpu007")
    assert filled.launcher("diagnose") is not None and filled.launcher("diagnose").multi_node  # type: ignore[union-attr]
    own = LaunchOptions(nproc_per_node=8, rdzv_endpoint="head:29400", nnodes="4")
    assert from_slurm(own, STEP) == (own, None)
    assert from_slurm(LaunchOptions(), STEP) == (LaunchOptions(), None)  # one process: no job
    one_node = {**STEP, "SLURM_NNODES": "1"}
    assert from_slurm(LaunchOptions(nproc_per_node=8), one_node)[1] is None  # standalone, as without SLURM


def test_each_node_writes_a_report_of_its_own() -> None:
    assert node_path("out/report.json", 3, suffix=True) == "out/report.node3.json"
    assert node_path("report-{node}.json", 3, suffix=False) == "report-3.json"
    assert node_path("report-{node}.json", 3, suffix=True) == "report-3.json"
    assert node_path("node0.json", 0, suffix=False) == "node0.json"  # named by hand, per node
    assert node_path("-", 1, suffix=True) == "-"
