"""Inside the child: what it knows of the interpreter, torch and the limits its workers run into,
sent as the ``env`` event. Only the stdlib (and torch, once the script has imported it)."""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from typing import Any


def torch_env(final: bool) -> dict[str, Any]:
    """What the child knows of torch; CUDA availability is only asked at the end of a run,
    since asking initialises the CUDA driver, which must not happen before workers fork."""
    torch = sys.modules.get("torch")
    env: dict[str, Any] = {"python": sys.version.split()[0]}
    if torch is None:
        return env
    env["torch"] = torch.__version__
    env["torch_threads"] = torch.get_num_threads()
    env.update(limits())
    with contextlib.suppress(Exception):
        env["sharing_strategy"] = torch.multiprocessing.get_sharing_strategy()
    in_use = bool(torch.cuda.is_initialized())
    env["cuda_in_use"] = in_use
    with contextlib.suppress(Exception):  # only said when formed: a script may destroy it before the end
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            env["process_group"] = True
    if in_use or final:
        try:
            env["cuda_available"] = bool(torch.cuda.is_available())
            if in_use:
                env["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        except Exception:  # a broken driver must not crash the report
            env["cuda_available"] = None
    return env


def limits() -> dict[str, int]:
    """The limits workers run into: open file descriptors, and /dev/shm (where they hand batches over)."""
    found: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError):
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY:
            found["fd_limit"] = soft
    with contextlib.suppress(OSError):
        shm = os.statvfs("/dev/shm")
        found["shm_total_bytes"], found["shm_free_bytes"] = shm.f_frsize * shm.f_blocks, shm.f_frsize * shm.f_bavail
    return found
