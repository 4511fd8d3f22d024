#!/usr/bin/env python3
"""How often the comparison of fewer workers over whole epochs advises them, by their true gain: a
simulation that drives fastload's own rules (``analyzer/search/epochs.py``: ``_order`` asks for
the next pair, ``decided`` reads them) with rates drawn from a model of a noisy machine.

    python scripts/simulate_pairs.py [--diagnoses 2000] [--rounds 2,3,4] [--gains 1.0,1.06,1.12,1.15]
                                     [--epoch-noise 0.07] [--pair-drift 0.05] [--order 0.05]
                                     [--truth-noise 0.0] [--seed 1] [--unshared]

The script's own setting is 2 workers; 1 worker and 0 are both measured (as where the steady
windows found neither slower), 0 with the gain given and 1 worker with half of it. Each epoch's
rate is the setting's true rate times the machine's pace, which drifts between pairs
(``--pair-drift``, a log-normal step) and varies epoch to epoch (``--epoch-noise``); the second
epoch of each pair pays ``--order`` (the first's workers shutting down). ``--truth-noise`` moves
the true gain from one diagnose to the next (the machine itself changing what fewer workers save).
``--unshared`` holds the better of two settings to the bound of one alone, for comparison.

Prints, for each number of rounds more (``EPOCHS_MORE``), how often 0 workers was advised
(gain 1.0: how often a setting was advised on no gain at all) and how many epochs the comparison
ran on average. These are the model's figures, not the machine's: docs/sweeps.md gives the
measured ones.
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass

from fastload_cli.analyzer import noise
from fastload_cli.analyzer.search import epochs
from fastload_cli.records import WHOLE_EPOCHS, SweepPoint

OWN = 2
BASE = 300.0  # samples/s at the script's own setting


@dataclass(frozen=True)
class Machine:
    epoch_noise: float
    pair_drift: float
    order: float
    truth_noise: float


def steady(workers: int, rate: float) -> SweepPoint:
    """A steady window's point, as the sweep measured it before the comparison."""
    return SweepPoint(workers=workers, mode=f"workers={workers}", throughput_samples_per_s=rate, spread=0.08, runs=2)


def diagnose(gain: float, machine: Machine, rnd: random.Random) -> tuple[bool, int]:
    """One comparison to its end: whether it advised 0 workers (any setting, for a gain of 1.0),
    and how many epochs it ran."""
    true = gain * math.exp(rnd.gauss(0, machine.truth_noise)) if gain > 1 else 1.0
    gains = {OWN: 1.0, 1: 1 + (true - 1) / 2, 0: true}
    points = [steady(w, BASE * g * math.exp(rnd.gauss(0, 0.08))) for w, g in gains.items()]
    pace, ran = 0.0, 0
    while True:
        order = epochs._order(points, [OWN, 1, 0], OWN)
        if ran >= len(order):
            break
        pace += rnd.gauss(0, machine.pair_drift)
        for position, workers in enumerate(order[ran : ran + 2]):
            late = -machine.order if position else 0.0
            rate = BASE * gains[workers] * math.exp(pace + late + rnd.gauss(0, machine.epoch_noise))
            points.append(
                SweepPoint(
                    workers=workers,
                    mode=f"workers={workers}",
                    throughput_samples_per_s=rate,
                    spread=machine.epoch_noise,
                    variant=WHOLE_EPOCHS,
                )
            )
            ran += 1
    found = epochs.decided(points, OWN)
    advised = found is not None and found.told_apart and (found.workers == 0 or gain <= 1)
    return advised, ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--diagnoses", type=int, default=2000)
    parser.add_argument("--rounds", default="2,3,4")
    parser.add_argument("--gains", default="1.0,1.06,1.12,1.15")
    parser.add_argument("--epoch-noise", type=float, default=0.07)
    parser.add_argument("--pair-drift", type=float, default=0.05)
    parser.add_argument("--order", type=float, default=0.05)
    parser.add_argument("--truth-noise", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unshared", action="store_true", help="the better of two held to one setting's bound")
    args = parser.parse_args()
    if args.unshared:
        noise.T_ONE_SIDED[2] = noise.T_ONE_SIDED[1]
    machine = Machine(args.epoch_noise, args.pair_drift, args.order, args.truth_noise)
    gains = [float(g) for g in args.gains.split(",")]
    print("| rounds more | " + " | ".join(f"true {g:.2f}x: advised, epochs" for g in gains) + " |")
    print("| --- |" + " --- |" * len(gains))
    for rounds in (int(r) for r in args.rounds.split(",")):
        epochs.EPOCHS_MORE = rounds
        cells = []
        for gain in gains:
            rnd = random.Random(args.seed)
            results = [diagnose(gain, machine, rnd) for _ in range(args.diagnoses)]
            advised = sum(a for a, _ in results) / len(results)
            ran = sum(n for _, n in results) / len(results)
            cells.append(f"{advised:.0%}, {ran:.1f}")
        print(f"| {rounds} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
