#!/usr/bin/env python3
"""Does fastload's sampling cost the script throughput? Three arms, interleaved round by round.

    python scripts/bench_sampler.py [--example augmentation] [--rounds 10] [--steps 120]
    python scripts/bench_sampler.py --tree 4,16,40,80

Arms: the plain script; the script under fastload's real mode sampling at 20 Hz (the default);
and the same with sampling effectively off (one sample at the start and one at the end). Each
run's number is the script's own throughput line, so every arm covers the same batches. Prints
the median of each arm and the median of its per-round ratio to the plain run.

With ``--tree``: one tick's cost against the size of the process tree (a node's ranks and their
workers), on trees of sleeping processes: the median CPU time of 40 ticks of fastload's host
sampler, and the share of one core that is at the default interval and at the interval the
sampler keeps to (``SAMPLING_CPU_BUDGET``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from benchlib import ROOT, plain, ratio_of_rounds, throughput, write_json

sys.path.insert(0, str(ROOT))

from fastload_cli.config import DEFAULT_SAMPLE_INTERVAL_S, RunConfig
from fastload_cli.examples import find
from fastload_cli.records import ChildSpec
from fastload_cli.runner.launch import run_mode

NO_SAMPLING_S = 3600.0  # longer than any run: only the first and the last sample are taken


def under_fastload(path: Path, steps: int, interval_s: float) -> float:
    config = RunConfig(
        script=path,
        script_arg0=str(path),
        script_args=("--steps", str(steps)),
        child=ChildSpec(warmup=0),
        max_batches=steps * 10,
        sample_interval_s=interval_s,
    )
    return throughput(run_mode(config).output_tail)


def tick_cost(sizes: list[int]) -> int:
    import subprocess
    import time

    from fastload_cli.samplers.host import SAMPLING_CPU_BUDGET, HostSampler

    sleeper = "import time; time.sleep(600)"
    for size in sizes:
        kids = f"[subprocess.Popen([sys.executable, '-c', {sleeper!r}]) for _ in range({size - 1})]"
        tree = f"import subprocess, sys, time\nkids = {kids}\ntime.sleep(600)"
        root = subprocess.Popen([sys.executable, "-c", tree])
        try:
            sampler = HostSampler(root.pid, DEFAULT_SAMPLE_INTERVAL_S)
            while len(sampler.sample().procs) < size:  # until every process has started
                time.sleep(0.2)
            costs = []
            for _ in range(40):
                before = time.thread_time()
                sampler.sample()
                costs.append(time.thread_time() - before)
        finally:
            subprocess.run(["pkill", "-P", str(root.pid)], check=False)
            root.kill()
            root.wait()
        tick = statistics.median(costs)
        kept = max(DEFAULT_SAMPLE_INTERVAL_S, tick / SAMPLING_CPU_BUDGET)
        print(
            f"{size} processes: {1000 * tick:.2f} ms a tick, {100 * tick / DEFAULT_SAMPLE_INTERVAL_S:.1f}% of a core "
            f"at {1 / DEFAULT_SAMPLE_INTERVAL_S:.0f} Hz; kept to every {kept:.2f} s ({100 * tick / kept:.1f}%)"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default="augmentation")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--tree", help="one tick's cost on trees of these many processes, comma-separated")
    args = parser.parse_args()
    if args.tree:
        return tick_cost([int(n) for n in args.tree.split(",")])
    example = find(args.example)
    if example is None:
        raise SystemExit(f"unknown example {args.example}")

    arms: dict[str, list[float]] = {"plain": [], "fastload 20 Hz": [], "fastload, no sampling": []}
    for _ in range(args.rounds):
        arms["plain"].append(throughput(plain(str(example.path), "--steps", str(args.steps))))
        arms["fastload 20 Hz"].append(under_fastload(example.path, args.steps, DEFAULT_SAMPLE_INTERVAL_S))
        arms["fastload, no sampling"].append(under_fastload(example.path, args.steps, NO_SAMPLING_S))
    print(f"{'arm':<24}{'median samples/s':>18}{'ratio to plain (median of rounds)':>36}")
    for name, values in arms.items():
        print(f"{name:<24}{statistics.median(values):>18.1f}{ratio_of_rounds(values, arms['plain']):>36.3f}")
    write_json(args.out, {"example": args.example, "steps": args.steps, "arms": arms})
    return 0


if __name__ == "__main__":
    sys.exit(main())
