"""What a failure says about its cause: a hint for the user, resting only on what was observed.

PyTorch reports a worker's troubles in the main process with fixed phrases ("Caught X in
DataLoader worker process N", "DataLoader worker (pid N) is killed by signal", "Unexpected bus
error encountered in worker"); a missing torch is a ModuleNotFoundError naming it; a script made
for ``torchrun`` names the variable it found missing. A kill is blamed on memory only when the
kernel's OOM counter moved during the run; a timeout is explained from where the script's main
thread was when it hit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastload_cli.records import RunResult, RunStatus, StopReason
from fastload_cli.records.protocol import FEEDER_FAILED

NO_LOADER_HINT = (
    "fastload measures torch.utils.data.DataLoader; custom iterables, NVIDIA DALI pipelines and "
    "data already on the device are not seen"
)

SHM_HINT = (
    "a DataLoader worker hit a bus error: /dev/shm (shared memory, where workers hand batches over) is too "
    "small. Give the container more (docker run --shm-size=8g, or a larger /dev/shm mount), or use fewer "
    "workers or a smaller prefetch_factor"
)
MEMORY_ADVICE = "use fewer workers, a smaller prefetch_factor or smaller batches"
WORKER_RAISED_HINT = (
    "the dataset raised inside a DataLoader worker: the worker's own traceback follows 'Original Traceback' "
    "in the message; run with num_workers=0 to debug it in the main process"
)
STUCK_HINT = (
    "a DataLoader worker is stuck (a lock, a network read that never returns): DataLoader(timeout=...) "
    "makes it raise instead of waiting forever"
)
LOST_BATCH_HINT = (
    "where /dev/shm was full, give it more room or keep fewer batches in flight; where the batch held "
    "something that cannot be pickled, return only tensors, numbers, strings and containers of them from the "
    "dataset and collate_fn; DataLoader(timeout=...) makes such a wait raise instead of hanging"
)
TORCHRUN_HINT = (
    "the script expects to be started by torchrun (it reads RANK, WORLD_SIZE, LOCAL_RANK or MASTER_ADDR). "
    "Run it as a data-parallel job, with your torchrun line's options under the same names: "
    "fastload diagnose --nproc-per-node N SCRIPT -- ARGS"
)
PORT_IN_USE_HINT = (
    "the job's rendezvous port is in use (another job, or one still closing): pass a free one with "
    "--master-port (or --rdzv-endpoint HOST:PORT); on one node, leave both out and fastload picks a free port"
)
_TORCHRUN_SIGNS = (
    "rank expected, but not set",
    "world_size expected, but not set",
    "master_addr expected, but not set",
    "master_port expected, but not set",
    "keyerror: 'rank'",
    "keyerror: 'local_rank'",
    "keyerror: 'world_size'",
    "keyerror: 'master_addr'",
)


def hint_for(
    message: str, output_tail: str = "", python: str | None = None, oom_kills: int | None = None
) -> str | None:
    """A hint for a script failure, from its exception text, the script's last output and the
    OOM kills the kernel counted during the run."""
    text = f"{message}\n{output_tail}"
    lowered = text.lower()
    if "bus error" in lowered or "insufficient shared memory" in lowered:
        return SHM_HINT
    if "killed by signal" in lowered or ("dataloader worker" in lowered and "exited unexpectedly" in lowered):
        return killed_hint("a DataLoader worker was killed", oom_kills)
    if "in dataloader worker process" in lowered:
        return WORKER_RAISED_HINT
    if any(sign in lowered for sign in _TORCHRUN_SIGNS):
        return TORCHRUN_HINT
    if "eaddrinuse" in lowered or "address already in use" in lowered:
        return PORT_IN_USE_HINT
    if "no module named 'torch'" in lowered:
        where = f" for {python}" if python else ""
        return (
            f"torch is not installed{where}: install it in that environment, or run fastload with the "
            "Python that has it (python -m fastload_cli ...)"
        )
    return None


def killed_hint(what: str, oom_kills: int | None) -> str:
    """Why a process was killed, as far as the kernel's OOM counter tells."""
    if oom_kills is None:
        return f"{what}; check `dmesg` for the OOM killer (its counter could not be read); if it acted, {MEMORY_ADVICE}"
    if oom_kills > 0:
        return f"{what}, and the kernel's OOM killer acted during the run: memory ran out; {MEMORY_ADVICE}"
    return (
        f"{what}, but the kernel's OOM killer did not act during the run (its counter did not move): something "
        "else sent the signal (a job scheduler, a container limit, another user)"
    )


def timeout_hint(stuck_at: Sequence[str]) -> str:
    """Why a run timed out, from the main thread's frames when it did (most recent first)."""
    if not stuck_at:
        return "where the script's main thread was could not be read; raise --timeout if it needs longer to start"
    where = _package_relative(stuck_at[0])
    if any("torch/distributed" in frame for frame in stuck_at):
        return (
            f"the main thread was blocked in torch.distributed ({where}): a collective or rendezvous waits for "
            "other ranks that never arrive. Start data-parallel scripts with one process per rank, or give the "
            "script a one-process job's environment (WORLD_SIZE=1)"
        )
    if any("torch/utils/data" in frame for frame in stuck_at):
        return f"the main thread was waiting for a DataLoader batch ({where}); {STUCK_HINT}"
    return (
        f"the main thread was at {where}, not waiting for a DataLoader, when the timeout hit: the script itself "
        "is blocked or slower than --timeout allows"
    )


def _package_relative(frame: str) -> str:
    """A frame in an installed package, from the package on: ``torch/distributed/...:3913 in f``."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in frame:
            return frame.split(marker, 1)[1]
    return frame


def substitution_hint(replaced: Sequence[str]) -> str:
    """A no-aug run failed with fastload's stand-ins in place: they, not the script, are the suspect."""
    names = ", ".join(dict.fromkeys(replaced))
    return (
        f"in this run fastload replaced {names} with deterministic stand-ins: when the real run did not fail "
        "this way, the failure comes from fastload's substitution, not from your script or dataset. "
        "`--keep-transform NAME` keeps a transform as it is"
    )


def describe_error(run: RunResult) -> str | None:
    """What went wrong, in a job prefixed with the rank it happened on: the rank the error was
    raised on, even when the job is seen from another (its straggler)."""
    said = _what_went_wrong(run)
    where = run.error.rank if run.error is not None and run.error.rank is not None else run.rank
    return f"rank {where}: {said}" if said is not None and run.ranks and where is not None else said


def _what_went_wrong(run: RunResult) -> str | None:
    if run.error is not None:
        return f"{run.error.type_name}: {run.error.message}".strip().rstrip(":")
    if run.status is RunStatus.TIMEOUT:
        return "timed out"
    if run.stop_reason is StopReason.BATCH_LOST:
        return lost_batch(run.output_tail)
    if run.status is RunStatus.INTERRUPTED:
        return "interrupted"
    if run.signal_name == "SIGKILL":
        return "killed by SIGKILL (often the out-of-memory killer)"
    if run.signal_name is not None:
        return f"killed by {run.signal_name}"
    if run.status is RunStatus.FAILED and run.stop_reason is StopReason.SCRIPT_ENDED:
        return f"exited with status {run.exit_code}"
    if run.status is RunStatus.FAILED:
        return "the script's process ended without reporting why"
    return None


def lost_batch(output: str) -> str:
    """A run fastload stopped because a worker dropped a batch (``runner/lost.py``): what the
    worker's queue said (the last line of its feeder's traceback)."""
    found = re.search(FEEDER_FAILED, output)
    lines = output[found.end() :].splitlines()[1:] if found is not None else []
    said = next((line.strip() for line in lines if line and not line[0].isspace()), None)
    return (
        "a DataLoader worker could not hand a batch over" + (f" ({said})" if said else "") + ", and the "
        "training loop would wait for it forever: fastload stopped the run"
    )
