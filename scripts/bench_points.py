#!/usr/bin/env python3
"""num_workers settings measured in turn in one run of the script against one run each.

    python scripts/bench_points.py [--repeats 3] [--cases a,b] [--out results.json]

For each case, `fastload sweep-workers --workers GRID` runs `--repeats` times each way,
interleaved: with `--in-process` (after the first setting, which shows fastload the loader, the
settings take turns in one run of the script, new workers taking over mid-epoch) and as it is
(the script afresh for every setting). A row per setting gives the median throughput each way
and their ratio beside the range of the separate runs themselves; a row per case the median wall
time of the whole command each way. In-process settings are trusted where their ratio to
separate runs lies inside the separate runs' own run-to-run range.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from benchlib import ROOT, fastload, write_json

sys.path.insert(0, str(ROOT))

from fastload_cli.examples import EXAMPLES

EXAMPLE = {e.name: e.path for e in EXAMPLES}
ZOO = ROOT / "scripts" / "zoo"


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    grid: str
    args: tuple[str, ...] = ()


CASES = (
    Case("storage-latency", EXAMPLE["storage-latency"], "1,2,3,4,6"),
    Case("main-process-decode", EXAMPLE["main-process-decode"], "0,1,2,3"),
    Case("augmentation", EXAMPLE["augmentation"], "1,2,3", ("--epochs", "4")),
    # builds a 100 MB TensorDataset at start-up: what one run for every setting pays each time
    Case("in-memory-tensors", ZOO / "in_memory_tensors.py", "0,1,2,4"),
)


def sweep(case: Case, separate: bool) -> tuple[dict[int, float], float]:
    together = [] if separate else ["--in-process"]
    ran = fastload("sweep-workers", str(case.path), "--workers", case.grid, *together, script_args=case.args)
    if ran.report is None:
        raise SystemExit(f"fastload failed on {case.name}:\n{ran.stderr}")
    points = ran.report["sweep"]["points"]
    return {p["workers"]: p["throughput_samples_per_s"] for p in points if p["variant"] is None}, ran.wall_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(c.name for c in CASES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    chosen = [c for c in CASES if c.name in args.cases.split(",")]
    results = []
    print(f"{'case':22} {'workers':>7} {'one run':>9} {'separate':>9} {'ratio':>6} {'separate range':>16}")
    for case in chosen:
        found: dict[bool, list[tuple[dict[int, float], float]]] = {True: [], False: []}
        for _ in range(args.repeats):
            for separate in (False, True):
                found[separate].append(sweep(case, separate))
        rows = []
        for workers in sorted(found[True][0][0]):
            inside = [r[workers] for r, _ in found[False] if r.get(workers)]
            apart = [r[workers] for r, _ in found[True] if r.get(workers)]
            if not inside or not apart:
                continue
            one, many = statistics.median(inside), statistics.median(apart)
            low, high = min(apart) / many, max(apart) / many
            rows.append({"workers": workers, "in_process": inside, "separate": apart, "ratio": one / many})
            span = f"{low:.2f}-{high:.2f}"
            print(f"{case.name:22} {workers:>7} {one:>9.0f} {many:>9.0f} {one / many:>6.2f} {span:>16}")
        walls = {way: statistics.median(w for _, w in found[way]) for way in (False, True)}
        print(f"{case.name:22} {'wall s':>7} {walls[False]:>9.1f} {walls[True]:>9.1f}")
        wall_s = {"in_process": walls[False], "separate": walls[True]}
        results.append({"case": case.name, "grid": case.grid, "settings": rows, "wall_s": wall_s})
    write_json(args.out, results)


if __name__ == "__main__":
    main()
