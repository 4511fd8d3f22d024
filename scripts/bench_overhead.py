#!/usr/bin/env python3
"""Instrumentation overhead of `fastload`: plain script vs each mode, and fastload's own CPU.

    python scripts/bench_overhead.py [--runs 5] [--steps 80] [--examples heavy-model,augmentation]
                                     [--modes real,synthetic,no-aug] [--out results.json]

1. End to end. Each bundled example times itself from its 5th step to its last and prints
   "throughput: X samples/s". That number is read from a plain `python example.py --steps N`
   run and from the same script under `fastload diagnose --modes M` for every mode M (with
   --show-output and --max-batches large enough that the script finishes by itself): the same
   batches, timed by the same code. Plain and fastload runs alternate within each repeat; the
   table gives the median of each and the ratio of medians against plain. For `real` that ratio
   is the instrumentation overhead; `synthetic` and `no-aug` change the work itself (free inputs,
   no augmentation), so theirs is the speedup the mode measures, not an overhead. `no-aug` runs
   only for examples with random augmentation.
2. Cost accounting, which machine noise does not blur: the time the child's hooks add to every
   batch (an in-process microbenchmark), as a share of the step time fastload measured; and the
   CPU time of the fastload process itself (event reading, host and GPU sampling) during each
   mode, which it reports as `profiler_cpu_percent`, as a share of all cores.
A mode named `real-cold` (any mode with `-cold`) runs with its run started as a fresh interpreter
(`FASTLOAD_WARM_START=0`) rather than forked from fastload's warm starter: what a warm start
changes in the script's own pace.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from benchlib import ROOT, fastload, plain, throughput, write_json

sys.path.insert(0, str(ROOT))

from fastload_cli.examples import EXAMPLES, find
from fastload_cli.records.protocol import WARM_START_ENV

HOOK_BENCH = r"""
import os, statistics, time, torch
from torch.utils.data import DataLoader, TensorDataset
torch.set_num_threads(1)
data = TensorDataset(torch.randn(20000, 3, 32, 32), torch.randint(0, 10, (20000,)))
def per_batch(n=600):
    it = iter(DataLoader(data, batch_size=32)); next(it)
    t = time.perf_counter_ns()
    for _ in range(n): next(it)
    return (time.perf_counter_ns() - t) / n
plain = statistics.median(per_batch() for _ in range(9))
from fastload_cli.records import ChildSpec
from fastload_cli.runner.child.channel import Channel
from fastload_cli.runner.child.hooks import install
install(Channel(os.open(os.devnull, os.O_WRONLY)), ChildSpec())
hooked = statistics.median(per_batch() for _ in range(9))
print((hooked - plain) / 1000)
"""


def under_fastload(path: Path, steps: int, mode: str) -> tuple[float, dict]:
    """(the script's own throughput, fastload's report) for one mode; ``M-cold``: mode M with its
    run started cold, a fresh interpreter (``FASTLOAD_WARM_START=0``), not forked warm."""
    ran = fastload(
        "diagnose", str(path), "--modes", mode.removesuffix("-cold"), "--warmup", "1", "--max-batches",
        str(steps * 10), "--fixed-batches", "--show-output", "--quiet", script_args=("--steps", str(steps)),
        check=True, env={WARM_START_ENV: "0"} if mode.endswith("-cold") else None,
    )  # fmt: skip
    assert ran.report is not None
    return throughput(ran.stderr), ran.report


def hook_cost_us() -> float:
    return float(plain("-c", HOOK_BENCH).strip())


def modes_for(example, wanted: list[str]) -> list[str]:
    return [m for m in wanted if m != "no-aug" or example.name == "augmentation"]


def measure(name: str, modes_asked: list[str], runs: int, steps: int, cost_us: float, cores: int) -> dict:
    """Plain runs and each mode's runs of one example, alternated; printed and returned as a row."""
    example = find(name)
    if example is None:
        raise SystemExit(f"unknown example {name}")
    modes = modes_for(example, modes_asked)
    plain_runs: list[float] = []
    found: dict[str, list[tuple[float, dict]]] = {m: [] for m in modes}
    for _ in range(runs):
        plain_runs.append(throughput(plain(str(example.path), "--steps", str(steps))))
        for mode in modes:
            found[mode].append(under_fastload(example.path, steps, mode))
    print(f"{name:<21}{'plain':<11}{statistics.median(plain_runs):>11.1f}")
    return {
        "example": name,
        "plain": plain_runs,
        "modes": {m: mode_row(m, found[m], plain_runs, cost_us, cores) for m in modes},
    }


def mode_row(mode: str, runs: list[tuple[float, dict]], plain_runs: list[float], cost_us: float, cores: int) -> dict:
    rates = [rate for rate, _ in runs]
    pairs = [f / p for f, p in zip(rates, plain_runs, strict=True)]
    step_ms = statistics.median(report["runs"][0]["step_ms_p50"] for _, report in runs)
    row = {
        "throughput": rates,
        "ratio_of_medians": statistics.median(rates) / statistics.median(plain_runs),
        "pair_ratios": pairs,
        "hook_share_of_step": cost_us / 1000 / step_ms,
        "fastload_cpu_share": statistics.median(r["runs"][0]["profiler_cpu_percent"] / 100 / cores for _, r in runs),
    }
    spread = f"{statistics.median(pairs):.3f} [{min(pairs):.2f}-{max(pairs):.2f}]"
    print(
        f"{'':<21}{mode:<11}{statistics.median(rates):>11.1f}{row['ratio_of_medians']:>10.3f}"
        f"{spread:>22}{100 * row['hook_share_of_step']:>9.3f}%{100 * row['fastload_cpu_share']:>13.2f}%"
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--examples", default=",".join(e.name for e in EXAMPLES))
    parser.add_argument("--modes", default="real,synthetic,no-aug")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cost_us = hook_cost_us()
    cores = len(os.sched_getaffinity(0))
    print(f"child hooks add {cost_us:.1f} us per batch; {cores} cores; {args.runs} repeats\n")
    header = ("example", "run", "samples/s", "vs plain", "pair ratios", "hooks /", "fastload CPU")
    print("{:<21}{:<11}{:>11}{:>10}{:>22}{:>10}{:>14}".format(*header))
    print("{:<21}{:<11}{:>11}{:>10}{:>22}{:>10}{:>14}".format("", "", "(median)", "(medians)", "median [range]", "step",
                                                             "/ all cores"))  # fmt: skip
    modes = args.modes.split(",")
    rows = [measure(name, modes, args.runs, args.steps, cost_us, cores) for name in args.examples.split(",")]
    write_json(
        args.out, {"runs": args.runs, "steps": args.steps, "hook_cost_us": cost_us, "cores": cores, "rows": rows}
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
