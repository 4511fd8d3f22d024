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
import statistics
import sys

from benchlib import ROOT, fastload, median_range, plain, ratio_of_rounds, throughput

sys.path.insert(0, str(ROOT))

from fastload_cli.config import Launcher, RunConfig
from fastload_cli.records import ChildSpec
from fastload_cli.runner.launch import run_mode

SCRIPT = ROOT / "tests" / "scripts" / "ddp_train.py"
LOAD = ("--load-ms", "3")


def to_verdict(ranks: int) -> float:
    job = ["--nproc-per-node", str(ranks)] if ranks > 1 else []
    return fastload("diagnose", *job, str(SCRIPT), "-q", script_args=LOAD, check=True).wall_s


def plain_job(ranks: int, steps: int) -> float:
    args = [str(SCRIPT), "--steps", str(steps), *LOAD]
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"] if ranks > 1 else []
    return throughput(plain(*launcher, *args))


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
            arms[name].append(plain_job(ranks, options.steps))
            arms[f"{name}, fastload"].append(under_fastload(ranks, options.steps))
    for ranks, times in verdicts.items():
        print(f"time to verdict, {ranks} rank(s): median {median_range(times)} s")
    for name in ("1 process", "2 ranks"):
        ratio = ratio_of_rounds(arms[f"{name}, fastload"], arms[name])
        print(
            f"{name}: plain {statistics.median(arms[name]):.0f} samples/s, under fastload "
            f"{statistics.median(arms[f'{name}, fastload']):.0f} samples/s, ratio {ratio:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
