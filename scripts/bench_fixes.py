#!/usr/bin/env python3
"""What `fastload try` measures for each fix on the zoo, and whether the cached mode's split adds up.

    python scripts/bench_fixes.py [--repeats 3] [--only fixes|split] [--cases a,b] [--out fixes.json]

Runs each case's `fastload try SCRIPT --fix ... --json -` ``--repeats`` times and prints every
fix's measured gain, its noise and the judgement; then `diagnose --modes real,synthetic,no-aug,cached`
(cached-no-aug follows) on the augmentation example, with the split of a batch's time and how far
its three parts are from the real run's time per batch. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchlib import ROOT, fastload, write_json

ZOO = ROOT / "scripts" / "zoo"
EXAMPLES = ROOT / "fastload_cli" / "examples"

CASES = (
    ("worker-startup", ZOO / "worker_startup.py", ("persistent-workers",)),
    ("cold-reads", ZOO / "cold_reads.py", ("cache-decoded",)),
    ("augmentation", EXAMPLES / "augmentation_heavy.py", ("cache-decoded",)),
    ("augmentation", EXAMPLES / "augmentation_heavy.py", ("prefetch-factor=4", "thread-prefetch")),
    # the pathologies' fixes, where they apply and where they do not
    ("slow-samples", ZOO / "slow_samples.py", ("in-order",)),
    ("oversubscribed", ZOO / "thread_oversubscription.py", ("worker-threads=1",)),
    ("augmentation", EXAMPLES / "augmentation_heavy.py", ("in-order", "worker-threads=1")),
)


def report(*args: str) -> dict:
    ran = fastload(*args, "-q", check=True)
    assert ran.report is not None
    return ran.report


def try_cases(repeats: int, names: str | None) -> list[dict]:
    rows = []
    for name, script, fixes in CASES:
        if names and name not in names.split(","):
            continue
        found: dict[str, list[dict]] = {}
        for _ in range(repeats):
            tried = report("try", str(script), *(a for fix in fixes for a in ("--fix", fix)))
            for fix in tried["fixes"]:
                found.setdefault(fix["name"], []).append(fix)
        for fix_name, results in found.items():
            gains = [r["speedup"] for r in results if r["speedup"] is not None]
            row = {
                "case": name,
                "fix": fix_name,
                "speedups": gains,
                "spreads": [r["spread"] for r in results],
                "judgements": [r["reason"].split(":")[0].split(" 1.")[0] for r in results],
                "median": statistics.median(gains) if gains else None,
            }
            rows.append(row)
            print(f"{name:<16} {fix_name:<34} {', '.join(f'{g:.2f}x' for g in gains):<24} {row['judgements']}")
    return rows


def split_case(repeats: int) -> list[dict]:
    rows = []
    for _ in range(repeats):
        diagnosed = report(
            "diagnose", str(EXAMPLES / "augmentation_heavy.py"), "--modes", "real,synthetic,no-aug,cached"
        )
        split = diagnosed["split"]
        parts = split["storage_decode_ms"] + split["augmentation_ms"] + split["rest_ms"]
        split["parts_vs_real"] = parts / split["real_ms"]
        rows.append(split)
        print(
            f"split: real {split['real_ms']:.1f} ms = storage+decode {split['storage_decode_ms']:.1f} + augmentation "
            f"{split['augmentation_ms']:.1f} + rest {split['rest_ms']:.1f} (of which the step {split['step_ms']:.1f}; "
            f"parts {100 * split['parts_vs_real']:.0f}% of the real step; {split['method']}, "
            f"{split['turns']} turns each, turn-to-turn spread ±{100 * (split['spread'] or 0):.0f}%)"
        )
        cpu = split.get("workers_cpu")
        if cpu:
            print(
                f"  workers' CPU per batch: real {cpu['real_ms']:.1f} ms"
                f" = storage+decode {cpu['storage_decode_ms']:.1f}"
                f" + augmentation {cpu['augmentation_ms']:.1f} + rest {cpu['rest_ms']:.1f}"
                f" (not accounted {cpu['residual_ms']:.1f})"
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", choices=("fixes", "split"), help="run one of the two cases")
    parser.add_argument("--cases", help="comma-separated names of the fixes' cases (default: all)")
    args = parser.parse_args()
    rows = {
        "fixes": try_cases(args.repeats, args.cases) if args.only != "split" else [],
        "split": split_case(args.repeats) if args.only != "fixes" else [],
    }
    write_json(args.out, rows)


if __name__ == "__main__":
    main()
