"""Under SLURM: one fastload per node (``srun --ntasks-per-node=1 fastload diagnose
--nproc-per-node N train.py``), with the node count, this node's rank and the rendezvous taken from
SLURM's environment where the user names none, as torchrun users set them by hand: the first node
of the step is the rendezvous host, the port is ``MASTER_PORT`` or one derived from the job id, so
every node of the job finds the same. Pure: an environment mapping in, launcher options out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath

from fastload_cli.errors import UsageError

# A port every node of the job derives alike from its id, above the ports systems hand out below.
PORT_BASE = 20000
PORT_RANGE = 20000
_GROUP = re.compile(r"\[([^\]]*)\]")


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """This node's place in a SLURM job step, and where the job's nodes meet."""

    nnodes: int
    node_rank: int
    master_addr: str
    master_port: int
    where: str  # what the values came from, for the note


def slurm_job(env: Mapping[str, str]) -> SlurmJob | None:
    """The step this process runs in, or None outside SLURM (or where SLURM says too little).
    A UsageError where srun started several tasks on this node: each would start the whole
    node's ranks."""
    job_id = env.get("SLURM_JOB_ID", "")
    nodes = env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES") or env.get("SLURM_JOB_NUM_NODES")
    node_rank = env.get("SLURM_NODEID")
    hosts = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not job_id.isdigit() or not nodes or not nodes.isdigit() or node_rank is None or not node_rank.isdigit():
        return None
    tasks = tasks_on_this_node(env)
    if tasks is not None and tasks > 1:
        raise UsageError(
            f"srun started {tasks} tasks on this node: each would start all of the node's ranks",
            "start one fastload per node: srun --ntasks-per-node=1 fastload ... --nproc-per-node N",
        )
    addr = env.get("MASTER_ADDR") or (first_host(hosts) if hosts else None)
    if not addr:
        return None
    port = env.get("MASTER_PORT", "")
    where = "MASTER_ADDR" if env.get("MASTER_ADDR") else "the step's first node"
    return SlurmJob(
        nnodes=int(nodes),
        node_rank=int(node_rank),
        master_addr=addr,
        master_port=int(port) if port.isdigit() else PORT_BASE + int(job_id) % PORT_RANGE,
        where=f"{where}, port {'MASTER_PORT' if port.isdigit() else 'from the job id'}",
    )


def tasks_on_this_node(env: Mapping[str, str]) -> int | None:
    """How many tasks srun started on each node (``SLURM_STEP_TASKS_PER_NODE``, as ``2(x4)``,
    or ``SLURM_NTASKS_PER_NODE``): the first node's count, which is this one's in an even step."""
    text = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_NTASKS_PER_NODE") or ""
    first = re.match(r"\d+", text)
    return int(first.group()) if first else None


def first_host(hostlist: str) -> str:
    """The first host of a SLURM hostlist: ``gpu[003-010,012],cpu1`` -> ``gpu003``."""
    depth, end = 0, len(hostlist)
    for i, char in enumerate(hostlist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            end = i
            break
    return _GROUP.sub(lambda m: re.split(r"[,-]", m.group(1))[0], hostlist[:end]).strip()


def node_path(path: str, node_rank: int, *, suffix: bool) -> str:
    """A report path for one node of the job: ``{node}`` in it replaced by the node's rank; where
    it has none and ``suffix`` (nodes started alike, as srun does), ``.node<N>`` before its
    extension, so the nodes' reports on a shared file system do not overwrite one another."""
    if path == "-" or ("{node}" not in path and not suffix):
        return path
    if "{node}" in path:
        return path.replace("{node}", str(node_rank))
    pure = PurePath(path)
    return str(pure.with_name(f"{pure.stem}.node{node_rank}{pure.suffix}"))
