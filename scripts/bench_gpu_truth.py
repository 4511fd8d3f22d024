#!/usr/bin/env python3
"""What the GPU zoo's cases are, by plain training runs (no fastload measuring): each case as
written, alternated with each change that would tell its cause, ``--rounds`` rounds.

    python scripts/bench_gpu_truth.py [--rounds 2] [--epochs 3] [--epoch-batches 40] [--cases a,b]
                                      [--out truth.json] [--dry-run]

The changes (``plain_epochs.py``'s options, as a user would edit the script):

- gpu-transfer: ``pin_memory=True`` (the zoo's loop then copies with ``non_blocking=True``), 8
  workers, and uint8 frames converted on the device (``--uint8``, a quarter of the bytes): if the
  copies are the limit, fewer bytes help and more workers do not; pinning helps where the copy,
  not the pinning, is what the loop waits for.
- gpu-input-bound: 8 workers: if the CPU workers are the limit, more of them help.
- gpu-large-model: 8 workers: a busy GPU gains nothing from more of them.
- gpu-tiny-kernels: 0 workers, as written (its loader has none): the control, a rerun of itself.

Each run trains ``--epochs`` epochs of at most ``--epoch-batches`` batches; the rate is the warm
epochs' (after the first) samples/s. Without ``--cases``, gpu-transfer alone: the case whose
cause a GPU decides most narrowly (the others train minutes per epoch on their own).
Prints each arm's samples/s (median and range) and its median per-round ratio to the case as
written; writes them as JSON with ``--out``. Needs CUDA; ``--dry-run`` checks the arguments.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

from benchlib import ROOT, alternated, median_range, ratio_of_rounds, write_json

ZOO = ROOT / "scripts" / "zoo"
# case -> its arms: name -> (num_workers, plain_epochs.py options, the script's own arguments);
# "written" is the script as it is
Arm = tuple[str, tuple[str, ...], tuple[str, ...]]
ARMS: dict[str, dict[str, Arm]] = {
    "gpu-transfer": {
        "written": ("own", (), ()),
        "pinned": ("own", ("--set", "pin_memory=True"), ()),
        "workers=8": ("8", (), ()),
        "uint8": ("own", (), ("--uint8",)),
    },
    "gpu-input-bound": {"written": ("own", (), ()), "workers=8": ("8", (), ())},
    "gpu-large-model": {"written": ("own", (), ()), "workers=8": ("8", (), ())},
    "gpu-tiny-kernels": {"written": ("own", (), ()), "again": ("own", (), ())},
}
RATE = re.compile(r"^W (\w+) .* all (\d+) warm (\d+) filling ([\d.]+)$", re.MULTILINE)  # plain_epochs.py's line


def plain_rate(case: str, arm: Arm, epochs: tuple[str, ...]) -> float:
    """The warm epochs' samples/s of one plain run of ``case``."""
    workers, options, script_args = arm
    script = ZOO / (case.replace("-", "_") + ".py")
    command = [sys.executable, str(ROOT / "scripts" / "plain_epochs.py"), *epochs, *options, workers, str(script)]
    done = subprocess.run([*command, *script_args], cwd=ROOT, capture_output=True, text=True, check=False)
    found = RATE.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"plain run of {case} ({' '.join(command[2:])}) failed: {done.stderr[-600:]}")
    return float(found[-1][2]) or float(found[-1][1])


def truth(case: str, rounds: int, epochs: tuple[str, ...]) -> dict[str, object]:
    arms = {name: (lambda arm=arm: plain_rate(case, arm, epochs)) for name, arm in ARMS[case].items()}
    rates = alternated(arms, rounds)
    ratios = {name: round(ratio_of_rounds(r, rates["written"]), 3) for name, r in rates.items() if name != "written"}
    for name, r in rates.items():
        against = f"  {ratios[name]:.2f}x the script as written" if name in ratios else ""
        print(f"{case:18s} {name:10s} {median_range(r, 0)} samples/s{against}", flush=True)
    return {"case": case, "samples_per_s": rates, "ratio_to_written": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--epoch-batches", type=int, default=40)
    parser.add_argument("--cases", help=f"comma-separated, of: {', '.join(ARMS)}")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--dry-run", action="store_true", help="check the arguments and the scripts, run nothing")
    args = parser.parse_args()
    cases = args.cases.split(",") if args.cases else ["gpu-transfer"]
    unknown = [c for c in cases if c not in ARMS]
    if unknown or args.rounds < 1 or args.epochs < 2 or args.epoch_batches < 1:
        parser.error(f"unknown cases {unknown}" if unknown else "--rounds >= 1, --epochs >= 2, --epoch-batches >= 1")
    missing = [c for c in cases if not (ZOO / (c.replace("-", "_") + ".py")).is_file()]
    if missing:
        parser.error(f"no zoo script for {missing}")
    if args.dry_run:
        print(f"would run {', '.join(f'{c}: {list(ARMS[c])}' for c in cases)}, {args.rounds} rounds")
        return 0
    epochs = ("--epochs", str(args.epochs), "--epoch-batches", str(args.epoch_batches))
    write_json(args.out, [truth(case, args.rounds, epochs) for case in cases])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
