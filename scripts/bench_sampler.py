#!/usr/bin/env python3
"""Does fastload's sampling cost the script throughput? Three arms, interleaved round by round.

    python scripts/bench_sampler.py [--example augmentation] [--rounds 10] [--steps 120]

Arms: the plain script; the script under fastload's real mode sampling at 20 Hz (the default);
and the same with sampling effectively off (one sample at the start and one at the end). Each
run's number is the script's own throughput line, so every arm covers the same batches. Prints
the median of each arm and the median of its per-round ratio to the plain run.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default="augmentation")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
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
