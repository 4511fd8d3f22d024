#!/usr/bin/env python3
"""Whether fastload's measured advice comes true when a user follows it.

    python scripts/bench_advice.py [--cases a,b] [--rounds 3] [--epochs 4] [--epoch-batches 400]
                                   [--out advice.json]

For every case of the zoo (``bench_accuracy.py``'s), ``fastload diagnose`` with its default
settings, then each measured recommendation followed in plain training of the script (no
fastload measuring: ``plain_epochs.py``), alternated with the script as written, ``--rounds``
rounds:

- a num_workers sweep's ``increase-num-workers`` / ``reduce-num-workers``: ``num_workers`` set
  where the DataLoader is built, as editing the script would, with the rest of the snippet
  (``persistent_workers=True`` where there are workers, a variant's settings); the rate over
  whole epochs, as training pays it;
- ``persistent-workers``: ``persistent_workers=True`` given to the DataLoader;
- ``cache-decoded-samples`` and ``faster-storage`` (whose figure is storage and decoding that cost
  nothing): the dataset wrapped in ``fastload_cli.fixes.DecodedCache``, filled before training;
- ``reduce-augmentation-cost`` (a cost "up to"): the random transforms replaced by fastload's
  deterministic stand-ins, augmentation made free;
- a pathology's fix, where diagnose verified it: ``deliver-out-of-order``, ``in_order=False``
  given to the DataLoader; ``one-thread-per-worker``, ``worker_init_fn=WorkerThreads(1)``.

With ``--patches``, what is followed is ``fastload fix``'s patch itself, as a user adopts it: the
case's folder copied, ``fastload fix SCRIPT --patch`` run there, the diff applied with ``patch
-p1`` to a second copy, and the patched script against the script as written in alternated plain
runs, twice: shaped as ``fix``'s own plain runs (3 epochs of at most 50 batches), where its gain
must fall within the interval ``fix`` reported (the slowest to the fastest round, widened by the
noise), and as the benchmark trains (``--epochs``, ``--epoch-batches``), where it must realize at
least that interval's low end over (1 + noise). The patch comes true when both hold.

Each plain run trains ``--epochs`` epochs of the script (its busiest loader's), each cut at
``--epoch-batches`` batches where the script's epochs are longer. Caching and no-aug
promise a steady state, so both arms are timed over the epochs after the first (the one-off
filling of a cache happens before the first). Realized gain: the median of the per-round
ratios; noise: half the range of those ratios. A recommendation comes true when it realizes at
least its promised gain divided by (1 + noise) and does not slow training beyond the noise.
Exit status 1 when a recommendation applied here does not come true.
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

from bench_accuracy import Case, chosen_cases, diagnose, jpegs
from benchlib import ROOT, alternated, write_json

WORKER_ADVICE = ("increase-num-workers", "reduce-num-workers")
# How a user follows each recommendation applied here: plain_epochs.py's options, and the rate compared
# ("all" epochs, or "warm": those after the first, for advice whose figure is a steady state).
FOLLOWED = {
    "persistent-workers": (("--set", "persistent_workers=True"), "warm"),
    "cache-decoded-samples": (("--apply", "cache-decoded"), "warm"),
    "faster-storage": (("--apply", "cache-decoded"), "warm"),
    "reduce-augmentation-cost": (("--apply", "no-aug"), "warm"),
    "deliver-out-of-order": (("--set", "in_order=False"), "all"),
    "one-thread-per-worker": (("--apply", "worker-threads"), "all"),
}
RATE = re.compile(r"^W (\w+) .* all (\d+) warm (\d+) filling ([\d.]+)$", re.MULTILINE)  # plain_epochs.py's line


EPOCHS = ["--epochs", "4", "--epoch-batches", "400"]  # plain_epochs.py's, as the options set them


def plain_rate(
    case: Case,
    workers: str,
    options: tuple[str, ...],
    which: str,
    script_args: list[str],
    path: Path | None = None,
    epochs: list[str] | None = None,
) -> float:
    """Samples/s of one plain run of ``case`` (``workers``: a setting, or "own"), over all its epochs
    or the warm ones, with ``options`` given to plain_epochs.py; ``path``: a copy of its script;
    ``epochs``: plain_epochs.py's epochs options, where not the benchmark's."""
    script = [sys.executable, str(ROOT / "scripts" / "plain_epochs.py"), *(epochs or EPOCHS), *options]
    command = [*script, workers, str(path or case.script)]
    # in the case's own environment (a smaller /dev/shm, fewer open files), as its user runs it
    done = subprocess.run([*case.prefix, *command, *script_args], cwd=ROOT, capture_output=True, text=True, check=False)
    found = RATE.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise Unfollowed(f"plain run of {case.name} ({' '.join(options) or workers}) failed: {done.stderr[-600:]}")
    rates = {"all": float(found[-1][1]), "warm": float(found[-1][2])}
    return rates[which] or rates["all"]


class Arms(NamedTuple):
    """The script as written and as advised: each one's num_workers ("own": the script's) and
    plain_epochs.py options, and the epochs compared ("all" or "warm")."""

    own: tuple[str, tuple[str, ...]]
    advised: tuple[str, tuple[str, ...]]
    epochs: str


class Unfollowed(Exception):
    """A plain run with the advice applied failed: the advice could not be followed this way."""


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
            arms = swept_arms(report["sweep"])
        elif rec["id"] in FOLLOWED:
            options, which = FOLLOWED[rec["id"]]
            arms = Arms(("own", ()), ("own", options), which)
        else:
            rows.append({**row, "applied": False, "why": "no plain way to apply it here"})
            continue
        try:
            rows.append({**row, **realized(case, arms, row["promised"], rounds)})
        except Unfollowed as exc:
            rows.append({**row, "applied": False, "why": str(exc)})
    return rows


def swept_arms(sweep: dict) -> Arms:
    """A sweep's setting followed as its snippet says: num_workers, the variant's settings, and
    ``persistent_workers=True`` where there are workers."""
    advised = sweep["recommended_workers"]
    variant = [item for item in (sweep.get("recommended_variant") or "").split(",") if item]
    settings = [*(["persistent_workers=True"] if advised > 0 else []), *variant]
    options = tuple(arg for setting in settings for arg in ("--set", setting))
    return Arms((str(sweep["current_workers"]), ()), (str(advised), options), "all")


def realized(case: Case, arms: Arms, promised: float, rounds: int) -> dict:
    """The advised arm against the script as written, in alternated plain runs."""
    (own, own_options), (advised, advised_options), which = arms
    script_args = [a.replace("{jpegs}", str(jpegs())) for a in case.args]
    found = alternated(
        {
            "as written": functools.partial(plain_rate, case, own, own_options, which, script_args),
            "advised": functools.partial(plain_rate, case, advised, advised_options, which, script_args),
        },
        rounds,
    )
    ratios = [a / b for a, b in zip(found["advised"], found["as written"], strict=True)]
    gain = statistics.median(ratios)
    noise = (max(ratios) - min(ratios)) / 2 / gain if gain else 0.0
    true = gain >= promised / (1 + noise) and gain >= 1 / (1 + noise)
    return {"applied": True, "realized": round(gain, 3), "noise": round(noise, 3), "comes_true": true,
            "epochs": which, "rates": found}  # fmt: skip


KEPT = re.compile(r"^  (\S+)\s+([\d.]+)x \(([\d.]+)x-([\d.]+)x over \d+ rounds\)\s+kept$", re.MULTILINE)


def follow_patch(case: Case, rounds: int) -> list[dict]:
    """``fastload fix``'s patch of ``case``, applied with ``patch -p1`` to a copy of its folder and
    followed in plain runs against the script as written; no row where fix kept no change."""
    script_args = [a.replace("{jpegs}", str(jpegs())) for a in case.args]
    with tempfile.TemporaryDirectory(prefix="bench-fix-") as folder:
        written, patched = Path(folder) / "written", Path(folder) / "patched"
        for copy in (written, patched):
            shutil.copytree(case.script.parent, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        command = [*case.prefix, sys.executable, "-m", "fastload_cli", "fix", case.script.name, "--patch", "fix.diff"]
        done = subprocess.run([*command, "--", *script_args], cwd=written, capture_output=True, text=True, check=False)
        kept = KEPT.search(done.stdout)
        if done.returncode != 0 or kept is None:
            why = done.stderr[-600:] if done.returncode else "no change kept"
            return [{"case": case.name, "recommendation": "fix", "promised": 0.0, "applied": False, "why": why}]
        diff = (written / "fix.diff").read_text()
        subprocess.run(["patch", "-p1", "--quiet"], input=diff, text=True, cwd=patched, check=True)
        name, gain, low, high = kept.group(1), *(float(kept.group(i)) for i in (2, 3, 4))
        row = {"case": case.name, "recommendation": f"fix:{name}", "promised": gain, "interval": [low, high]}
        # as fix measured it (3 epochs of at most 50 batches), then as the benchmark trains
        again, again_noise = _gain(case, script_args, rounds, written, patched, FIX_EPOCHS)
        realized, noise = _gain(case, script_args, rounds, written, patched, None)
    within = low / (1 + again_noise) <= again <= high * (1 + again_noise)
    true = within and realized >= low / (1 + noise) and realized >= 1 / (1 + noise)
    return [{**row, "applied": True, "again": round(again, 3), "again_noise": round(again_noise, 3),
             "within_interval": within, "realized": round(realized, 3), "noise": round(noise, 3),
             "comes_true": true, "epochs": "all", "diff": diff}]  # fmt: skip


FIX_EPOCHS = ["--epochs", "3", "--epoch-batches", "50"]  # fastload fix's plain runs, by default


def _gain(
    case: Case, script_args: list[str], rounds: int, written: Path, patched: Path, epochs: list[str] | None
) -> tuple[float, float]:
    """The patched copy's plain-run gain over the script as written (the median round) and its noise."""
    arm = functools.partial(plain_rate, case, "own", (), "all", script_args, epochs=epochs)
    found = alternated(
        {"as written": lambda: arm(written / case.script.name), "patched": lambda: arm(patched / case.script.name)},
        rounds,
    )
    ratios = [a / b for a, b in zip(found["patched"], found["as written"], strict=True)]
    realized = statistics.median(ratios)
    return realized, (max(ratios) - min(ratios)) / 2 / realized if realized else 0.0


def printed(row: dict) -> str:
    head = f"{row['case']:<24}{row['recommendation']:<28}x{row['promised']:<8.2f} "
    if not row["applied"]:
        return f"{head}not applied: {row['why']}"
    verdict = "comes true" if row["comes_true"] else "DOES NOT come true"
    if "again" in row:  # a patch: its gain again as fix measured it, against fix's interval
        low, high = row["interval"]
        inside = "within" if row["within_interval"] else "OUTSIDE"
        verdict += f"   (as fix ran it: x{row['again']:.2f}, {inside} {low:.2f}-{high:.2f})"
    return f"{head}x{row['realized']:<8.2f}±{100 * row['noise']:.0f}%   {verdict}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", help="comma-separated case names (default: every CPU case)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=4, help="epochs of each plain run")
    parser.add_argument("--epoch-batches", type=int, default=400, help="batches of each epoch at most")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--patches", action="store_true", help="follow fastload fix's patches themselves")
    args = parser.parse_args()
    EPOCHS[1], EPOCHS[3] = str(args.epochs), str(args.epoch_batches)
    print(f"{'case':<24}{'recommendation':<28}{'promised':<10}{'realized':<9}noise", flush=True)
    rows = []
    for case in chosen_cases(args.cases, gpu=False):
        if args.patches:
            found = follow_patch(case, args.rounds)
        else:
            report, _ = diagnose(case, [])
            found = follow(case, report, args.rounds) if "failed" not in report else []
        if not found:
            print(f"{case.name:<24}(no measured recommendation to follow)", flush=True)
        for row in found:
            print(printed(row), flush=True)
        rows += found
    write_json(args.out, {"rounds": args.rounds, "rows": rows})
    applied = [r for r in rows if r["applied"]]
    print(f"applied {len(applied)}, came true {sum(r['comes_true'] for r in applied)}")
    return 0 if all(r["comes_true"] for r in applied) else 1


if __name__ == "__main__":
    raise SystemExit(main())
