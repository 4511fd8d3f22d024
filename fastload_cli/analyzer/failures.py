"""What a failure's message says about its cause: a hint for the user, from known signatures.

PyTorch reports a worker's troubles in the main process with fixed phrases ("Caught X in
DataLoader worker process N", "DataLoader worker (pid N) is killed by signal", "Unexpected bus
error encountered in worker"); a missing torch is a ModuleNotFoundError naming it.
"""

from __future__ import annotations

SHM_HINT = (
    "a DataLoader worker hit a bus error: /dev/shm (shared memory, where workers hand batches over) is too "
    "small. Give the container more (docker run --shm-size=8g, or a larger /dev/shm mount), or use fewer "
    "workers or a smaller prefetch_factor"
)
KILLED_HINT = (
    "a DataLoader worker was killed by a signal; SIGKILL usually means the machine ran out of memory: use "
    "fewer workers, a smaller prefetch_factor or smaller batches, and check `dmesg` for the OOM killer"
)
WORKER_RAISED_HINT = (
    "the dataset raised inside a DataLoader worker: the worker's own traceback follows 'Original Traceback' "
    "in the message; run with num_workers=0 to debug it in the main process"
)
STUCK_HINT = (
    "if a DataLoader worker is stuck (a lock, a network read that never returns), DataLoader(timeout=...) "
    "makes it raise instead of waiting forever"
)


def hint_for(message: str, output_tail: str = "", python: str | None = None) -> str | None:
    """A hint for a script failure, from its exception text and the script's last output."""
    text = f"{message}\n{output_tail}"
    lowered = text.lower()
    if "bus error" in lowered or "insufficient shared memory" in lowered:
        return SHM_HINT
    if "killed by signal" in lowered or ("dataloader worker" in lowered and "exited unexpectedly" in lowered):
        return KILLED_HINT
    if "in dataloader worker process" in lowered:
        return WORKER_RAISED_HINT
    if "no module named 'torch'" in lowered:
        where = f" for {python}" if python else ""
        return (
            f"torch is not installed{where}: install it in that environment, or run fastload with the "
            "Python that has it (python -m fastload_cli ...)"
        )
    return None
