"""What fastload's benchmarks share: fastload run and its report read back, a plain run of a
script, arms alternated round by round, medians and ranges, and the JSON they write.

The benchmarks run on shared, noisy machines: every comparison here alternates its arms within
one run of the benchmark and quotes medians (and the median of per-round ratios), never a mean
of runs made at different times.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
THROUGHPUT = re.compile(r"throughput: ([0-9.]+) samples/s")  # the line the bundled scripts print


@dataclass(frozen=True)
class Ran:
    """One fastload command: its JSON report (None when it failed), wall time, exit status, stderr."""

    report: dict[str, Any] | None
    wall_s: float
    code: int
    stderr: str


def fastload(
    *args: str,
    script_args: Sequence[str] = (),
    check: bool = False,
    prefix: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> Ran:
    """``python -m fastload_cli ARGS --json - [-- SCRIPT_ARGS]`` from the repository's root, its
    report read back; ``check``: a failure ends the benchmark with fastload's last output;
    ``prefix``: a command fastload runs under (``prlimit ...``); ``env``: added to the environment."""
    command = [*prefix, sys.executable, "-m", "fastload_cli", *args, "--json", "-"]
    command += ["--", *script_args] if script_args else []
    started = time.monotonic()
    environment = {**os.environ, **env} if env else None
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode not in (0, 3) and check:
        raise SystemExit(f"fastload {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout) if done.stdout.strip() and done.returncode in (0, 3) else None
    return Ran(report=report, wall_s=wall, code=done.returncode, stderr=done.stderr)


def plain(*args: str) -> str:
    """``python ARGS`` (a script and its arguments, or ``-m`` and a module), its standard output."""
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def throughput(text: str) -> float:
    """The last ``throughput: N samples/s`` line a bundled script printed."""
    found = THROUGHPUT.findall(text)
    if not found:
        raise SystemExit(f"no throughput line in the script's output:\n{text[-2000:]}")
    return float(found[-1])


def alternated(arms: Mapping[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each arm measured once a round, in turn, the order reversed every other round so that the
    machine's drift falls on every arm alike."""
    found: dict[str, list[float]] = {name: [] for name in arms}
    names = list(arms)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else reversed(names):
            found[name].append(arms[name]())
    return found


def median_range(values: Sequence[float], digits: int = 1) -> str:
    """``median (low-high)``."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def ratio_of_rounds(arm: Sequence[float], base: Sequence[float]) -> float:
    """The median of the per-round ratios of ``arm`` to ``base`` (measured in the same rounds)."""
    return statistics.median(a / b for a, b in zip(arm, base, strict=True))


def write_json(path: Path | None, document: object) -> None:
    """The benchmark's results as JSON, where ``--out`` asked for them."""
    if path is not None:
        path.write_text(json.dumps(document, indent=2))
