"""In the parent: one plain run of the script (``runner/child/plain.py``), as ``fastload fix``
proves a patch with: started in a session of its own, its output kept for a failure's message,
stopped with its whole tree at its timeout or on Ctrl-C, and read back as the batches its busiest
loader delivered per second over the epochs it ran.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fastload_cli.config import RunConfig
from fastload_cli.errors import ScriptFailedError
from fastload_cli.records import RUN_ID_ENV
from fastload_cli.records.protocol import PLAIN
from fastload_cli.runner.processes import terminate_run
from fastload_cli.runner.start import PACKAGE_PARENT

OUTPUT_KEPT = 20_000  # characters of a plain run's output kept for the message when it fails
STOP_GRACE_S = 10.0  # a run past its timeout, interrupted, has this long to write its epochs and leave


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainRun:
    """What one plain run measured: its busiest loader's epochs, each one's batches and seconds."""

    batches: tuple[int, ...]
    seconds: tuple[float, ...]

    @property
    def batches_per_s(self) -> float | None:
        seconds, batches = sum(self.seconds), sum(self.batches)
        return batches / seconds if seconds > 0 and batches else None


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainSettings:
    """How long a plain run trains: ``epochs`` epochs of its busiest loader, each cut at ``epoch_batches``."""

    epochs: int
    epoch_batches: int
    timeout_s: float


def plain_run(config: RunConfig, sources: dict[Path, Path], settings: PlainSettings, what: str) -> PlainRun:
    """One plain run of ``config``'s script, its files in ``sources`` (original -> patched copy)
    standing in for the originals; ``what`` names the run in a failure's message."""
    with tempfile.TemporaryDirectory(prefix="fastload-plain-") as folder:
        result = Path(folder) / "epochs.json"
        output = _run(config, _command(config, sources, settings, result), settings.timeout_s)
        measured = _read(result)
    if measured is None or not any(measured.batches):
        raise ScriptFailedError(
            f"the plain run of {what} trained no batch",
            "it must train as `python SCRIPT` does; the output below says why it stopped",
            output,
        )
    return measured


def _command(config: RunConfig, sources: dict[Path, Path], settings: PlainSettings, result: Path) -> list[str]:
    spec = {
        "result": str(result),
        "epochs": settings.epochs,
        "epoch_batches": settings.epoch_batches,
        "sources": {str(k): str(v) for k, v in sources.items()},
        "module": config.module is not None,
    }
    target = config.module if config.module is not None else config.script_arg0
    return [config.python, "-c", PLAIN, PACKAGE_PARENT, json.dumps(spec), target, *config.script_args]


def _run(config: RunConfig, command: list[str], timeout_s: float) -> str:
    """The run to its end (or its timeout); its output, the tail kept."""
    run_id = secrets.token_hex(8)
    proc = subprocess.Popen(
        command,
        cwd=config.cwd,
        env={**os.environ, RUN_ID_ENV: run_id},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    out = b""
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # as Ctrl-C would: the epochs so far are written at its exit
        with contextlib.suppress(subprocess.TimeoutExpired):
            out, _ = proc.communicate(timeout=STOP_GRACE_S)
    finally:
        terminate_run(proc, run_id, [])
    return out.decode(errors="replace")[-OUTPUT_KEPT:]


def _read(path: Path) -> PlainRun | None:
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    epochs, end = document["epochs"], float(document["end"])
    marks = [float(t) for t, _ in epochs] + [end]
    return PlainRun(
        batches=tuple(int(n) for _, n in epochs),
        seconds=tuple(b - a for a, b in itertools.pairwise(marks)),
    )
