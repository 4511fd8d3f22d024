"""The data-parallel options: torchrun's own, under the same names, declared once for every command
that runs a script. A user turns ``torchrun --nproc-per-node 2 train.py --lr 0.1`` into
``fastload diagnose --nproc-per-node 2 train.py -- --lr 0.1``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Annotated, Any

import typer

from fastload_cli.cli.groups import group
from fastload_cli.cli.run import Output, note
from fastload_cli.cli.slurm import SlurmJob, node_path, slurm_job
from fastload_cli.cli.typed import Typed
from fastload_cli.config import Launcher, RunConfig
from fastload_cli.errors import UsageError

PANEL = "Data-parallel jobs (torchrun's options)"
# Set in every process torchrun's agent starts: fastload itself was started as a rank.
TORCHRUN_ENV = ("TORCHELASTIC_RUN_ID", "LOCAL_RANK")


def _option(flag: str, text: str, **extra: Any) -> Any:
    return typer.Option(flag, help=text, rich_help_panel=PANEL, **extra)


@group
@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchOptions:
    """torchrun's options, named as on a torchrun line; ``launcher()`` checks them."""

    nproc_per_node: Annotated[
        int | None, _option("--nproc-per-node", "Ranks on this node: run as a data-parallel job.", min=1)
    ] = None
    nnodes: Annotated[str | None, _option("--nnodes", "Nodes in the job (MIN:MAX for an elastic range).")] = None
    node_rank: Annotated[int | None, _option("--node-rank", "This node's rank among the nodes.", min=0)] = None
    rdzv_backend: Annotated[str | None, _option("--rdzv-backend", "Rendezvous backend (c10d, static).")] = None
    rdzv_endpoint: Annotated[str | None, _option("--rdzv-endpoint", "Rendezvous endpoint, HOST:PORT.")] = None
    rdzv_id: Annotated[str | None, _option("--rdzv-id", "Rendezvous id shared by the job's nodes.")] = None
    master_addr: Annotated[
        str | None, _option("--master-addr", "Address of the node of rank 0 (static rendezvous).")
    ] = None
    master_port: Annotated[
        int | None, _option("--master-port", "Port on the node of rank 0 (static rendezvous).", min=0)
    ] = None
    max_restarts: Annotated[
        int | None, _option("--max-restarts", "Restarts of the job's ranks on failure (default 0).", min=0)
    ] = None

    def launcher(self, command: str) -> Launcher | None:
        """The job's launcher settings, None for a single process; a UsageError for options that
        need --nproc-per-node, or for fastload started as a rank by torchrun."""
        if all(os.environ.get(name) for name in TORCHRUN_ENV):
            raise UsageError(
                "fastload is running inside a rank that torchrun started: each rank would run its own "
                "fastload, their modes would drift apart and the job's collectives would stall",
                f"run fastload once, with torchrun's options: fastload {command} --nproc-per-node N train.py -- ARGS",
            )
        given = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        if self.nproc_per_node is None:
            if given:
                names = ", ".join("--" + name.replace("_", "-") for name in given)
                raise UsageError(
                    f"{names} {'needs' if len(given) == 1 else 'need'} --nproc-per-node",
                    "for example: --nproc-per-node 2",
                )
            return None
        nnodes = self.nnodes or "1"
        if not all(part.isdigit() and int(part) >= 1 for part in nnodes.split(":", 1)):
            raise UsageError(f"--nnodes: '{nnodes}' is not a number of nodes", "for example --nnodes 2, or 1:4")
        return Launcher(**{**given, "nnodes": nnodes, "max_restarts": self.max_restarts or 0})


def launched(launch: LaunchOptions, what: Typed) -> LaunchOptions:
    """The options with those the typed launcher line names (``typed.understood``); a UsageError
    where both name one and differ."""
    for name, value in what.launch.items():
        mine = getattr(launch, name)
        if mine is not None and mine != value:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} is {mine} for fastload and {value} in the {what.typed} line", "give it once")
    return replace(launch, **{k: v for k, v in what.launch.items() if v is not None})  # type: ignore[arg-type]


RENDEZVOUS = ("nnodes", "node_rank", "rdzv_backend", "rdzv_endpoint", "rdzv_id", "master_addr", "master_port")


def from_slurm(launch: LaunchOptions, env: Mapping[str, str]) -> tuple[LaunchOptions, SlurmJob | None]:
    """The options with the job's nodes and rendezvous taken from SLURM's environment, where a
    job runs on several nodes under srun and the user named no rendezvous; as given otherwise."""
    if launch.nproc_per_node is None or any(getattr(launch, name) is not None for name in RENDEZVOUS):
        return launch, None
    job = slurm_job(env)
    if job is None or job.nnodes < 2:
        return launch, None
    filled = replace(
        launch,
        nnodes=str(job.nnodes),
        node_rank=job.node_rank,
        master_addr=job.master_addr,
        master_port=job.master_port,
    )
    return filled, job


def with_launcher(base: RunConfig, launch: LaunchOptions, command: str, out: Output) -> tuple[Output, RunConfig]:
    """``base`` run as a data-parallel job when asked, its rendezvous from SLURM's environment where
    it names none, and each node's report paths its own; a note when the node's cores look too few."""
    launch, slurm = from_slurm(launch, os.environ)
    launcher = launch.launcher(command)
    if launcher is None:
        return out, base
    if slurm is not None:
        note(
            out,
            f"SLURM: node {slurm.node_rank} of {slurm.nnodes}, meeting at {slurm.master_addr}:{slurm.master_port} "
            f"({slurm.where}).",
        )
    if launcher.multi_node and launcher.node_rank is not None:
        paths = {k: node_path(v, launcher.node_rank, suffix=slurm is not None) for k, v in out.paths.items()}
        out = replace(out, paths=paths)
    from fastload_cli.samplers.host import cpu_count

    cores = cpu_count()
    if cores is not None and launcher.nproc_per_node > cores:
        note(
            out,
            f"--nproc-per-node {launcher.nproc_per_node} is more ranks than this node's {cores} cores: "
            "they will compete for the CPU, and the figures will show it.",
        )
    return out, replace(base, launcher=launcher)


def fixed_plan(base: RunConfig, out: Output) -> bool:
    """A job on several nodes: every node's fastload must run the same modes in the same order (each
    mode is a job the nodes meet in), so none may choose its next runs from its own measurements."""
    if base.launcher is None or not base.launcher.multi_node:
        return False
    note(out, "A job on several nodes: every node runs the same fixed list of modes (no automatic sweep).")
    return True
