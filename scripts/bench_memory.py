#!/usr/bin/env python3
"""fastload's own memory over a long run: how much its resident memory grows per hour of measuring.

    python scripts/bench_memory.py [--minutes 10] [--out results.json]

Runs `fastload diagnose LOOP --modes real --fixed-batches` on a training loop that never ends by
itself (a small model on in-memory tensors, two workers: a hundred batches a second and more on
two cores, each batch a record fastload keeps), stopped by `--timeout` after `--minutes`. The
fastload process's resident memory (RSS; the script's processes left out) is read every two
seconds. After the first minute (imports, the script's start, the first epochs) what fastload
keeps of a run fills its bounds (batch records, host samples) and then stays; a line fitted to the
readings of the run's second half gives the growth that goes on, and an hour of measuring adds
what was added since the first minute plus that growth over the rest of the hour. Prints the
readings' ends, the batches a second the loop ran at (from the child's own count of its steps),
the late growth per hour and what an hour adds; writes them as JSON.
"""

from __future__ import annotations

import argparse
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from benchlib import ROOT, write_json

LOOP = """
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(8192, 64), torch.randint(0, 10, (8192,)))
loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2)
model = torch.nn.Linear(64, 10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
steps = 0
while True:
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        steps += 1
        if steps % 1000 == 0:
            print(f"steps {steps} at {__import__('time').monotonic():.3f}", flush=True)
"""
SETTLING_S = 60.0  # readings before this are the start: imports, the script's start, the first epochs
EVERY_S = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    seconds = 60.0 * args.minutes
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "endless_loop.py"
        script.write_text(LOOP)
        readings, steps = measure(script, seconds)
    late = [(t, rss) for t, rss in readings if t >= SETTLING_S]
    second_half = [(t, rss) for t, rss in late if t >= seconds / 2]
    if len(second_half) < 3:
        raise SystemExit(f"too few readings after the first {SETTLING_S:.0f} s: run for more --minutes")
    slope = statistics.linear_regression([t for t, _ in second_half], [rss for _, rss in second_half]).slope
    end_s, added = late[-1][0], late[-1][1] - late[0][1]
    rate = (steps[-1][0] - steps[0][0]) / (steps[-1][1] - steps[0][1]) if len(steps) > 1 else None
    found = {
        "minutes": args.minutes,
        "rss_start_mb": round(late[0][1] / 2**20, 1),
        "rss_end_mb": round(late[-1][1] / 2**20, 1),
        "late_growth_mb_per_hour": round(slope * 3600 / 2**20, 1),
        "hour_adds_mb": round((added + max(0.0, slope) * max(0.0, 3600 - end_s)) / 2**20, 1),
        "batches_per_s": round(rate, 1) if rate is not None else None,
        "readings": [(round(t, 1), rss) for t, rss in readings],
    }
    print(
        f"fastload's RSS {found['rss_start_mb']} MB at {SETTLING_S:.0f} s, {found['rss_end_mb']} MB at "
        f"{end_s:.0f} s; over the second half {found['late_growth_mb_per_hour']} MB an hour; an hour of "
        f"measuring adds {found['hour_adds_mb']} MB; the loop at {found['batches_per_s']} batches/s"
    )
    if args.out:
        write_json(args.out, found)


def measure(script: Path, seconds: float) -> tuple[list[tuple[float, int]], list[tuple[int, float]]]:
    """fastload diagnosing ``script`` until its timeout: its RSS every ``EVERY_S`` (seconds since
    its start, bytes), and the loop's own step counts (steps, the script's clock) from its output."""
    command = [sys.executable, "-m", "fastload_cli", "diagnose", str(script), "--modes", "real", "--fixed-batches"]
    command += ["--max-batches", "1000000000", "--timeout", str(seconds), "--show-output", "-q"]
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watched = psutil.Process(proc.pid)
    readings: list[tuple[float, int]] = []
    steps: list[tuple[int, float]] = []
    assert proc.stdout is not None
    next_at = 0.0
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    while proc.poll() is None:
        now = time.monotonic() - started
        if now >= next_at and now < seconds:
            try:
                readings.append((now, watched.memory_info().rss))
            except psutil.Error:
                break
            next_at = now + EVERY_S
        for _ in selector.select(timeout=0.2):
            line = proc.stdout.readline()
            if line.startswith("steps "):
                count, _, at = line.split()[1:4]
                steps.append((int(count), float(at)))
    proc.wait()
    return readings, steps


if __name__ == "__main__":
    main()
