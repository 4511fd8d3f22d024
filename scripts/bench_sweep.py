#!/usr/bin/env python3
"""The adaptive num_workers search against an exhaustive grid, on the bundled examples.

    python scripts/bench_sweep.py [--grid 0,1,...,12] [--grid-repeats 3] [--max-batches 30]
                                  [--examples a,b] [--out results.json] [--grid-from earlier.json]

For each example, `fastload sweep-workers` runs once with its adaptive search (as a user runs
it) and `--grid-repeats` times with `--workers GRID`; each grid setting's throughput is the
median of its repeats; the default grid is exhaustive, every count from 0 to 12. A row shows the
setting the search chose, its grid throughput relative to the grid's best, whether that
difference is inside the grid's own run-to-run range (the lowest and highest repeat of each
setting), the settings (and runs) each needed, and their wall times. The target: within 5% of
the grid's best while measuring fewer settings. Settings an epoch is too short to measure are
left out of both (the reports say so). `--grid-from` reuses the grid of an earlier run (the
slow part) to measure a changed search against it.
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

TARGET = 0.95


def sweep(path: Path, max_batches: int, grid: str | None) -> tuple[dict, float]:
    command = [sys.executable, "-m", "fastload_cli", "sweep-workers", str(path), "--max-batches", str(max_batches)]
    command += ["--workers", grid] if grid else []
    started = time.monotonic()
    done = subprocess.run([*command, "--json", "-"], cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"fastload failed on {path.name}:\n{done.stderr}")
    return json.loads(done.stdout), wall


def rates(report: dict) -> dict[int, float]:
    return {
        p["workers"]: p["throughput_samples_per_s"]
        for p in report["sweep"]["points"]
        if p["variant"] is None and p["throughput_samples_per_s"]
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", default=",".join(str(n) for n in range(13)))
    parser.add_argument("--grid-repeats", type=int, default=3)
    parser.add_argument("--max-batches", type=int, default=30)
    parser.add_argument("--examples", help="comma-separated example names (default: all)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--grid-from", type=Path, help="reuse the grid measured by an earlier run (its --out file)")
    args = parser.parse_args()
    earlier = json.loads(args.grid_from.read_text()) if args.grid_from else None
    chosen_examples = [e for e in EXAMPLES if not args.examples or e.name in args.examples.split(",")]

    rows, all_met = [], True
    print(
        f"{'example':<22}{'chosen':>7}{'grid best':>10}{'chosen/best':>12}{'noise':>7}"
        f"{'settings a/g':>14}{'runs a/g':>10}{'wall s a/g':>13}{'in grid range':>15}"
    )
    for example in chosen_examples:
        adaptive, adaptive_wall = sweep(example.path, args.max_batches, None)
        repeats: dict[int, list[float]] = {}
        if earlier is not None:  # the grid of an earlier run of this benchmark
            row = next(r for r in earlier["rows"] if r["example"] == example.name)
            repeats = {int(w): v for w, v in row["grid_repeats"].items()}
            grid_wall, grid_runs = row["grid_wall_s"], row["grid_runs"]
        else:
            grids = [sweep(example.path, args.max_batches, args.grid) for _ in range(args.grid_repeats)]
            grid_wall, grid_runs = sum(wall for _, wall in grids), sum(len(report["runs"]) for report, _ in grids)
            for report, _ in grids:
                for workers, rate in rates(report).items():
                    repeats.setdefault(workers, []).append(rate)
        grid_rates = {w: statistics.median(v) for w, v in sorted(repeats.items())}
        chosen = adaptive["sweep"]["recommended_workers"]
        best = max(grid_rates, key=grid_rates.__getitem__)
        ratio = grid_rates[chosen] / grid_rates[best] if chosen in grid_rates else None
        overlap = chosen in repeats and max(repeats[chosen]) >= min(repeats[best])
        met = ratio is not None and ratio >= TARGET and len(rates(adaptive)) < len(grid_rates)
        all_met &= met
        row = {
            "example": example.name,
            "chosen": chosen,
            "adaptive_throughputs": rates(adaptive),
            "grid_best": best,
            "grid_throughputs": grid_rates,
            "grid_repeats": repeats,
            "chosen_over_grid_best": ratio,
            "adaptive_noise": adaptive["sweep"]["noise"],
            "adaptive_settings": len(rates(adaptive)),
            "grid_settings": len(grid_rates),
            "adaptive_runs": len(adaptive["runs"]),
            "grid_runs": grid_runs,
            "adaptive_wall_s": round(adaptive_wall, 1),
            "grid_wall_s": round(grid_wall, 1),
            "target_met": met,
            "within_grid_run_to_run_range": overlap,
        }
        rows.append(row)
        shown = "n/a (not in grid)" if ratio is None else f"{ratio:.3f}"
        print(
            f"{example.name:<22}{chosen:>7}{best:>10}{shown:>12}{100 * adaptive['sweep']['noise']:>6.0f}%"
            f"{row['adaptive_settings']:>7}/{row['grid_settings']:<6}{row['adaptive_runs']:>5}/{row['grid_runs']:<4}"
            f"{adaptive_wall:>7.0f}/{grid_wall:<5.0f}{'yes' if overlap else 'no':>15}"
        )
    if args.out:
        setup = {"grid": args.grid, "grid_repeats": args.grid_repeats, "max_batches": args.max_batches}
        args.out.write_text(json.dumps({**setup, "rows": rows}, indent=2))
    return 0 if all_met else 1


if __name__ == "__main__":
    raise SystemExit(main())
