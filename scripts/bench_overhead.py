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
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastload_cli.examples import EXAMPLES, find  # noqa: E402

THROUGHPUT = re.compile(r"throughput: ([0-9.]+) samples/s")
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


def plain(path: Path, steps: int) -> float:
    command = [sys.executable, str(path), "--steps", str(steps)]
    return _throughput(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def under_fastload(path: Path, steps: int, mode: str) -> tuple[float, dict]:
    """(the script's own throughput, fastload's report) for one mode."""
    command = [
        sys.executable, "-m", "fastload_cli", "diagnose", str(path), "--modes", mode, "--warmup", "1",
        "--max-batches", str(steps * 10), "--fixed-batches", "--show-output", "--quiet", "--json", "-",
        "--", "--steps", str(steps),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"fastload failed:\n{done.stderr[-3000:]}")
    return _throughput(done.stderr), json.loads(done.stdout)


def _throughput(text: str) -> float:
    found = THROUGHPUT.findall(text)
    if not found:
        raise SystemExit(f"no throughput line in the script's output:\n{text[-2000:]}")
    return float(found[-1])


def hook_cost_us() -> float:
    done = subprocess.run([sys.executable, "-c", HOOK_BENCH], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def modes_for(example, wanted: list[str]) -> list[str]:
    return [m for m in wanted if m != "no-aug" or example.name == "augmentation"]


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
    rows = []
    for name in args.examples.split(","):
        example = find(name)
        if example is None:
            raise SystemExit(f"unknown example {name}")
        modes = modes_for(example, args.modes.split(","))
        plain_runs: list[float] = []
        runs: dict[str, list[float]] = {m: [] for m in modes}
        steps_ms: dict[str, list[float]] = {m: [] for m in modes}
        own: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.runs):
            plain_runs.append(plain(example.path, args.steps))
            for mode in modes:
                throughput, report = under_fastload(example.path, args.steps, mode)
                runs[mode].append(throughput)
                steps_ms[mode].append(report["runs"][0]["step_ms_p50"])
                own[mode].append(report["runs"][0]["profiler_cpu_percent"] / 100 / cores)
        row = {"example": name, "plain": plain_runs, "modes": {}}
        print(f"{name:<21}{'plain':<11}{statistics.median(plain_runs):>11.1f}")
        for mode in modes:
            pairs = [f / p for f, p in zip(runs[mode], plain_runs, strict=True)]
            found = {
                "throughput": runs[mode],
                "ratio_of_medians": statistics.median(runs[mode]) / statistics.median(plain_runs),
                "pair_ratios": pairs,
                "hook_share_of_step": cost_us / 1000 / statistics.median(steps_ms[mode]),
                "fastload_cpu_share": statistics.median(own[mode]),
            }
            row["modes"][mode] = found
            spread = f"{statistics.median(pairs):.3f} [{min(pairs):.2f}-{max(pairs):.2f}]"
            print(
                f"{'':<21}{mode:<11}{statistics.median(runs[mode]):>11.1f}{found['ratio_of_medians']:>10.3f}"
                f"{spread:>22}{100 * found['hook_share_of_step']:>9.3f}%{100 * found['fastload_cpu_share']:>13.2f}%"
            )
        rows.append(row)
    if args.out:
        result = {"runs": args.runs, "steps": args.steps, "hook_cost_us": cost_us, "cores": cores, "rows": rows}
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
