#!/usr/bin/env python3
"""Data-parallel jobs: what fastload costs on a 2-rank job against the same script in one process.

    python scripts/bench_ddp.py [--rounds 3] [--steps 150]

1. Time to verdict: ``fastload diagnose`` with default settings on tests/scripts/ddp_train.py
   (storage latency of 3 ms per sample on every rank), in one process and with --nproc-per-node 2.
2. Overhead per rank: the job's own throughput line (rank 0 prints samples/s over the job, after
   10 steps) under plain torch.distributed.run against the same job under fastload's real mode,
   interleaved round by round; and the same for one process, plain python against fastload.
Prints medians and the median of each round's ratio.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastload_cli.config import Launcher, RunConfig  # noqa: E402
from fastload_cli.records import ChildSpec  # noqa: E402
from fastload_cli.runner.launch import run_mode  # noqa: E402

SCRIPT = ROOT / "tests" / "scripts" / "ddp_train.py"
THROUGHPUT = re.compile(r"throughput: ([0-9.]+) samples/s")
LOAD = ("--load-ms", "3")


def throughput(text: str) -> float:
    found = THROUGHPUT.findall(text)
    if not found:
        raise SystemExit(f"no throughput line in the script's output:\n{text[-2000:]}")
    return float(found[-1])


def to_verdict(ranks: int) -> float:
    job = ["--nproc-per-node", str(ranks)] if ranks > 1 else []
    command = [sys.executable, "-m", "fastload_cli", "diagnose", *job, str(SCRIPT), "-q", "--json", "-", "--", *LOAD]
    started = time.monotonic()
    subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    return time.monotonic() - started


def plain(ranks: int, steps: int) -> float:
    args = [str(SCRIPT), "--steps", str(steps), *LOAD]
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"] if ranks > 1 else []
    done = subprocess.run([sys.executable, *launcher, *args], capture_output=True, text=True, check=True)
    return throughput(done.stdout)


def under_fastload(ranks: int, steps: int) -> float:
    config = RunConfig(
        script=SCRIPT,
        script_arg0=str(SCRIPT),
        script_args=("--steps", str(steps), *LOAD),
        child=ChildSpec(warmup=0),
        max_batches=steps * 10,
        launcher=Launcher(nproc_per_node=ranks) if ranks > 1 else None,
    )
    return throughput(run_mode(config).output_tail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150)
    options = parser.parse_args()
    verdicts: dict[int, list[float]] = {1: [], 2: []}
    arms: dict[str, list[float]] = {"1 process": [], "1 process, fastload": [], "2 ranks": [], "2 ranks, fastload": []}
    for _ in range(options.rounds):
        for ranks in (1, 2):
            verdicts[ranks].append(to_verdict(ranks))
            name = "1 process" if ranks == 1 else "2 ranks"
            arms[name].append(plain(ranks, options.steps))
            arms[f"{name}, fastload"].append(under_fastload(ranks, options.steps))
    for ranks, times in verdicts.items():
        spread = f"{min(times):.1f}-{max(times):.1f}"
        print(f"time to verdict, {ranks} rank(s): median {statistics.median(times):.1f} s ({spread})")
    for name in ("1 process", "2 ranks"):
        ratio = statistics.median(a / b for a, b in zip(arms[f"{name}, fastload"], arms[name], strict=True))
        print(
            f"{name}: plain {statistics.median(arms[name]):.0f} samples/s, under fastload "
            f"{statistics.median(arms[f'{name}, fastload']):.0f} samples/s, ratio {ratio:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
