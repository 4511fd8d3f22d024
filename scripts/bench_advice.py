#!/usr/bin/env python3
"""Whether fastload's measured advice comes true when a user follows it.

    python scripts/bench_advice.py [--cases a,b] [--rounds 3] [--out advice.json]

For every case of the zoo (``bench_accuracy.py``'s), ``fastload diagnose`` with its default
settings, then, for each measured recommendation a user applies with a setting (a num_workers
sweep's ``increase-num-workers`` / ``reduce-num-workers``), plain training of the script (no
fastload: ``plain_epochs.py`` sets ``num_workers`` where the DataLoader is built, as editing the
script would) with the recommended setting alternated with the script as written, ``--rounds``
rounds. Realized gain: the median of the per-round ratios of the rate over whole epochs (each
epoch's worker start-up included, as training pays it); noise: half the range of those ratios.
A recommendation comes true when it realizes at least its promised gain divided by (1 + noise)
and does not slow training beyond the noise. Measured recommendations applied in code (caching,
persistent workers, ...) are listed as not applied here; ``try`` measures those inside the script.
Exit status 1 when a recommendation applied here does not come true.
"""

from __future__ import annotations

import argparse
import functools
import re
import statistics
import subprocess
import sys
from pathlib import Path

from bench_accuracy import Case, chosen_cases, diagnose, jpegs
from benchlib import ROOT, alternated, write_json

WORKER_ADVICE = ("increase-num-workers", "reduce-num-workers")
RATE = re.compile(r"^W (\d+) .* all (\d+)$", re.MULTILINE)  # plain_epochs.py's line


def plain_rate(case: Case, workers: int, script_args: list[str]) -> float:
    """Samples/s over whole epochs of one plain run of ``case`` with every DataLoader on ``workers``."""
    command = [sys.executable, str(ROOT / "scripts" / "plain_epochs.py"), str(workers), str(case.script), *script_args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    found = RATE.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"plain run of {case.name} with {workers} workers failed:\n{done.stderr[-2000:]}")
    return float(found[-1][1])


def follow(case: Case, report: dict, rounds: int) -> list[dict]:
    """Each measured recommendation of ``report``: applied and measured, or why not."""
    rows = []
    for rec in report["recommendations"]:
        if not rec["measured"] or rec["expected_speedup"] is None or rec["id"] == "step-is-the-limit":
            continue
        row = {
            "case": case.name,
            "recommendation": rec["id"],
            "title": rec["title"],
            "promised": rec["expected_speedup"],
        }
        if rec["id"] in WORKER_ADVICE:
            rows.append({**row, **realized(case, report["sweep"], row["promised"], rounds)})
        else:
            rows.append({**row, "applied": False, "why": "applied in code: `fastload try` measures it in the script"})
    return rows


def realized(case: Case, sweep: dict, promised: float, rounds: int) -> dict:
    """The sweep's setting against the script's own, in alternated plain runs."""
    script_args = [a.replace("{jpegs}", str(jpegs())) for a in case.args]
    own, advised = sweep["current_workers"], sweep["recommended_workers"]
    arms = {
        "as written": functools.partial(plain_rate, case, own, script_args),
        "advised": functools.partial(plain_rate, case, advised, script_args),
    }
    found = alternated(arms, rounds)
    ratios = [a / b for a, b in zip(found["advised"], found["as written"], strict=True)]
    gain = statistics.median(ratios)
    noise = (max(ratios) - min(ratios)) / 2 / gain if gain else 0.0
    true = gain >= promised / (1 + noise) and gain >= 1 / (1 + noise)
    return {"applied": True, "realized": round(gain, 3), "noise": round(noise, 3), "comes_true": true, "rates": found}


def printed(row: dict) -> str:
    head = f"{row['case']:<22}{row['recommendation']:<24}x{row['promised']:<8.2f}"
    if not row["applied"]:
        return f"{head}not applied: {row['why']}"
    verdict = "comes true" if row["comes_true"] else "DOES NOT come true"
    return f"{head}x{row['realized']:<8.2f}±{100 * row['noise']:.0f}%   {verdict}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated case names (default: every CPU case)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    print(f"{'case':<22}{'recommendation':<24}{'promised':<9}{'realized':<9}noise", flush=True)
    rows = []
    for case in chosen_cases(args.cases, gpu=False):
        report, _ = diagnose(case, [])
        found = follow(case, report, args.rounds) if "failed" not in report else []
        if not found:
            print(f"{case.name:<22}(no measured recommendation to follow)", flush=True)
        for row in found:
            print(printed(row), flush=True)
        rows += found
    write_json(args.out, {"rounds": args.rounds, "rows": rows})
    applied = [r for r in rows if r["applied"]]
    print(f"applied {len(applied)}, came true {sum(r['comes_true'] for r in applied)}")
    return 0 if all(r["comes_true"] for r in applied) else 1


if __name__ == "__main__":
    raise SystemExit(main())
