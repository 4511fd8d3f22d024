#!/usr/bin/env python3
"""Wall time and verdict of `fastload diagnose` on each bundled example, repeated.

    python scripts/bench_diagnose.py [--repeats 3] [--max-batches 30] [--out results.json]

Prints one row per example: the planted verdict, the verdict of each repeat, agreement, and the
median wall time of the whole command (all modes, start-up included). Exit status 1 when any
repeat disagrees with the planted verdict.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastload_cli.examples import EXAMPLES  # noqa: E402


def diagnose(path: Path, max_batches: int) -> tuple[dict, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "fastload_cli", "diagnose", str(path), "--max-batches", str(max_batches), "--json", "-"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"fastload failed on {path.name}:\n{done.stderr}")
    return json.loads(done.stdout), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-batches", type=int, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    rows, all_agree = [], True
    print(f"{'example':<22}{'planted':<10}{'verdicts':<28}{'agree':<8}{'ceiling (median)':<18}wall s (median)")
    for example in EXAMPLES:
        runs = [diagnose(example.path, args.max_batches) for _ in range(args.repeats)]
        verdicts = [r["verdict"]["bottleneck"] for r, _ in runs]
        ceilings = [r["verdict"]["speedup_ceiling"] for r, _ in runs if r["verdict"]["speedup_ceiling"]]
        walls = [w for _, w in runs]
        agree = sum(v == example.expected for v in verdicts)
        all_agree &= agree == len(runs)
        row = {
            "example": example.name,
            "planted": example.expected,
            "verdicts": verdicts,
            "labels": [r["verdict"]["label"] for r, _ in runs],
            "confidences": [r["verdict"]["confidence"] for r, _ in runs],
            "agreement": f"{agree}/{len(runs)}",
            "ceilings": ceilings,
            "wall_s": walls,
            "wall_s_median": statistics.median(walls),
        }
        rows.append(row)
        ceiling = f"{statistics.median(ceilings):.2f}x" if ceilings else "-"
        print(
            f"{example.name:<22}{example.expected:<10}{','.join(verdicts):<28}{row['agreement']:<8}"
            f"{ceiling:<18}{row['wall_s_median']:.1f}"
        )
    if args.out:
        args.out.write_text(json.dumps({"max_batches": args.max_batches, "rows": rows}, indent=2) + "\n")
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
