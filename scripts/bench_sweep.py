#!/usr/bin/env python3
"""The adaptive num_workers search against an exhaustive grid, on the bundled examples and on
two of them with short epochs.

    python scripts/bench_sweep.py [--grid-repeats 3] [--rematch 3] [--max-batches 30] [--cases a,b]
                                  [--out results.json] [--grid-from earlier.json]

For each case, `fastload sweep-workers` runs once with its adaptive search (as a user runs it)
and `--grid-repeats` times with `--workers GRID`; each grid setting's throughput is the median
of its repeats. The grid is every count from 0 to 12 for the examples as they are; the
short-epoch cases (25 batches per epoch) reach further, where the search may go. A row shows
the setting the search chose, its grid throughput relative to the grid's best, whether that
difference is inside the grid's own run-to-run range (the lowest and highest repeat of each
setting), the settings each measured (the adaptive search's besides the script's own), its runs
and wall times. The target: within 5% of the grid's best on every case, at most 3 settings
besides the script's own on median.

The grid's best is the highest of a dozen noisy medians, so its own median overstates it (by
about as much as one setting's repeats differ here, 5-10%, when the settings are alike). Where
the search chose another setting, the two meet again in a rematch: ``--rematch`` rounds of
``sweep-workers --workers CHOSEN,BEST``, in alternating order, fresh runs measured as the grid
measured them. The target is judged on the rematch's medians; the row keeps both ratios.

A setting whose epoch leaves no steady window is measured over whole epochs by both.
``--grid-from`` reuses the grid of an earlier run (the slow part) to measure a changed search
against it; the rematch runs again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from benchlib import ROOT, fastload, write_json

sys.path.insert(0, str(ROOT))

from fastload_cli.examples import EXAMPLES

TARGET = 0.95
MAX_SETTINGS = 3  # besides the script's own, on median
GRID = ",".join(str(n) for n in range(13))
SHORT = ("--epochs", "40")
EXAMPLE = {e.name: e.path for e in EXAMPLES}  # enough epochs for every setting's whole-epoch window


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    args: tuple[str, ...] = ()
    grid: str = GRID


CASES = (
    *(Case(e.name, e.path) for e in EXAMPLES),
    # 1,024 samples in batches of 40: 25 batches per epoch
    Case(
        "storage-latency-short",
        EXAMPLE["storage-latency"],
        ("--batch-size", "40", *SHORT),
        "0,1,2,3,4,6,8,10,12,14,16,20,24",
    ),
    # 2,000 images in batches of 80: 25 batches per epoch
    Case("main-decode-short", EXAMPLE["main-process-decode"], ("--batch-size", "80", *SHORT), "0,1,2,3,4,5,6,8"),
)


def sweep(case: Case, max_batches: int, grid: str | None) -> tuple[dict, float]:
    given = ["--workers", grid] if grid else []
    ran = fastload("sweep-workers", str(case.path), "--max-batches", str(max_batches), *given, script_args=case.args)
    if ran.report is None:
        raise SystemExit(f"fastload failed on {case.name}:\n{ran.stderr}")
    return ran.report, ran.wall_s


def rates(report: dict) -> dict[int, float]:
    return {
        p["workers"]: p["throughput_samples_per_s"]
        for p in report["sweep"]["points"]
        if p["variant"] is None and p["throughput_samples_per_s"]
    }


def rematch(case: Case, chosen: int, best: int, rounds: int, max_batches: int) -> dict[int, list[float]]:
    """The chosen setting and the grid's best measured again, together, in alternating order."""
    found: dict[int, list[float]] = {chosen: [], best: []}
    for n in range(rounds):
        pair = (chosen, best) if n % 2 == 0 else (best, chosen)
        report, _ = sweep(case, max_batches, ",".join(map(str, pair)))
        for workers, rate in rates(report).items():
            if workers in found:
                found[workers].append(rate)
    return found


def compare(
    case: Case, adaptive: dict, adaptive_wall: float, repeats: dict[int, list[float]], grid_wall: float, grid_runs: int
) -> dict:
    """One row: the adaptive search's choice against the grid's medians (``rematch`` is added by
    the caller)."""
    grid_rates = {w: statistics.median(v) for w, v in sorted(repeats.items())}
    pick = adaptive["sweep"]["recommended_workers"]
    best = max(grid_rates, key=grid_rates.__getitem__)
    ratio = grid_rates[pick] / grid_rates[best] if pick in grid_rates else None
    own = adaptive["sweep"]["current_workers"]
    besides = len([w for w in rates(adaptive) if w != own])
    return {
        "case": case.name,
        "args": case.args,
        "chosen": pick,
        "adaptive_throughputs": rates(adaptive),
        "predicted_best": adaptive["sweep"].get("predicted_best"),
        "prediction_error": adaptive["sweep"].get("prediction_error"),
        "grid_best": best,
        "grid_throughputs": grid_rates,
        "grid_repeats": repeats,
        "chosen_over_grid_best": ratio,
        "adaptive_noise": adaptive["sweep"]["noise"],
        "adaptive_settings_besides_own": besides,
        "grid_settings": len(grid_rates),
        "adaptive_runs": len(adaptive["runs"]),
        "grid_runs": grid_runs,
        "adaptive_wall_s": round(adaptive_wall, 1),
        "grid_wall_s": round(grid_wall, 1),
        "within_grid_run_to_run_range": pick in repeats and max(repeats[pick]) >= min(repeats[best]),
    }


def again_ratio(again: dict[int, list[float]], chosen: int, best: int) -> float | None:
    """The chosen setting's median over the grid's best's, in the rematch."""
    if not again.get(chosen) or not again.get(best):
        return None
    return statistics.median(again[chosen]) / statistics.median(again[best])


def grid_of(case: Case, args: argparse.Namespace, earlier: dict | None, pick: int) -> tuple[dict, float, int]:
    """Each grid setting's throughputs, the grid's wall time and runs: from an earlier run of this
    benchmark, or measured ``--grid-repeats`` times with the chosen setting added where missing."""
    if earlier is not None:
        row = next(r for r in earlier["rows"] if r["case"] == case.name)
        return {int(w): v for w, v in row["grid_repeats"].items()}, row["grid_wall_s"], row["grid_runs"]
    grid = ",".join(str(n) for n in sorted({*map(int, case.grid.split(",")), pick}))
    grids = [sweep(case, args.max_batches, grid) for _ in range(args.grid_repeats)]
    repeats: dict[int, list[float]] = {}
    for report, _ in grids:
        for workers, rate in rates(report).items():
            repeats.setdefault(workers, []).append(rate)
    return repeats, sum(wall for _, wall in grids), sum(len(report["runs"]) for report, _ in grids)


def measure(case: Case, args: argparse.Namespace, earlier: dict | None) -> dict:
    """The search on ``case`` against the grid, with a rematch where they disagree: one row."""
    adaptive, adaptive_wall = sweep(case, args.max_batches, None)
    pick = adaptive["sweep"]["recommended_workers"]
    repeats, grid_wall, grid_runs = grid_of(case, args, earlier, pick)
    row = compare(case, adaptive, adaptive_wall, repeats, grid_wall, grid_runs)
    best = row["grid_best"]
    wanted = args.rematch > 0 and pick is not None and pick != best
    again = rematch(case, pick, best, args.rematch, args.max_batches) if wanted else {}
    final = again_ratio(again, pick, best) if again else row["chosen_over_grid_best"]
    row.update(rematch=again, rematch_ratio=final if again else None, target_met=final is not None and final >= TARGET)
    ratio = row["chosen_over_grid_best"]
    shown = "n/a (not in grid)" if ratio is None else f"{ratio:.3f}"
    shown += f" ({final:.3f})" if again and final is not None else ""
    print(
        f"{case.name:<24}{pick:>7}{row['grid_best']:>10}{shown:>20}{100 * adaptive['sweep']['noise']:>6.0f}%"
        f"{row['adaptive_settings_besides_own']:>7}/{row['grid_settings']:<6}"
        f"{row['adaptive_runs']:>5}/{row['grid_runs']:<4}"
        f"{adaptive_wall:>7.0f}/{grid_wall:<5.0f}{'yes' if row['within_grid_run_to_run_range'] else 'no':>15}",
        flush=True,
    )
    return row


def search_only(case: Case, args: argparse.Namespace) -> dict:
    """The search alone on ``case``: the setting it chooses, those it measured, the prediction's best."""
    report, wall = sweep(case, args.max_batches, None)
    found = report["sweep"]
    measured, predicted = sorted(rates(report)), found.get("predicted_best")
    tried = ",".join(map(str, measured))
    line = f"{case.name:<24}{found['recommended_workers']:>7}  {tried:<24}{wall:>7.0f}  predicted {predicted}"
    print(line, flush=True)
    return {
        "case": case.name,
        "chosen": found["recommended_workers"],
        "measured": measured,
        "predicted_best": predicted,
        "wall_s": round(wall, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid-repeats", type=int, default=3)
    parser.add_argument("--rematch", type=int, default=3, help="rounds of the chosen setting against the grid's best")
    parser.add_argument("--max-batches", type=int, default=30)
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--grid-from", type=Path, help="reuse the grid measured by an earlier run (its --out file)")
    parser.add_argument("--search-only", action="store_true", help="only the search's choice per case; no grid")
    args = parser.parse_args()
    earlier = json.loads(args.grid_from.read_text()) if args.grid_from else None
    chosen = [c for c in CASES if not args.cases or c.name in args.cases.split(",")]
    if args.search_only:
        print(f"{'case':<24}{'chosen':>7}  {'settings measured':<24}{'wall s':>7}")
        write_json(args.out, {"max_batches": args.max_batches, "rows": [search_only(c, args) for c in chosen]})
        return 0
    print(
        f"{'case':<24}{'chosen':>7}{'grid best':>10}{'chosen/best (again)':>20}{'noise':>7}"
        f"{'settings a/g':>14}{'runs a/g':>10}{'wall s a/g':>13}{'in grid range':>15}"
    )
    rows = [measure(case, args, earlier) for case in chosen]
    besides = statistics.median(r["adaptive_settings_besides_own"] for r in rows) if rows else 0
    print(f"settings measured besides the script's own, median: {besides} (target: at most {MAX_SETTINGS})")
    setup = {"grid_repeats": args.grid_repeats, "rematch": args.rematch, "max_batches": args.max_batches}
    write_json(args.out, {**setup, "rows": rows})
    return 0 if all(r["target_met"] for r in rows) and besides <= MAX_SETTINGS else 1


if __name__ == "__main__":
    raise SystemExit(main())
