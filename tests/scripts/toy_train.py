"""A small training script for fastload's own tests; every behaviour is chosen by a flag."""

import argparse
import json
import os
import signal
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset, default_collate

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=0)
parser.add_argument("--load-ms", type=float, default=1.0, help="sleep per sample (storage latency)")
parser.add_argument("--step-ms", type=float, default=2.0, help="busy compute per step")
parser.add_argument("--size", type=int, default=4096, help="samples per epoch")
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: no limit)")
parser.add_argument("--pause-s", type=float, default=0.0, help="sleep after each epoch (an evaluation, say)")
parser.add_argument("--marker", help="create this file after --marker-after steps")
parser.add_argument("--marker-after", type=int, default=5)
parser.add_argument("--fail-at", type=int, default=-1, help="raise at this step (0: before the first batch)")
parser.add_argument("--kill-at", type=int, default=-1, help="SIGKILL itself at this step")
parser.add_argument("--no-loader", action="store_true", help="train without a DataLoader")
parser.add_argument("--swallow", action="store_true", help="catch every exception a step raises, and go on")
parser.add_argument("--view", help="write what the script sees (argv, path, cwd, __name__) here")
parser.add_argument("--started", help="append a line to this file each time the script starts")
parser.add_argument(
    "--unpicklable-at", type=int, default=-1, help="a worker's Nth batch holds a lock: it cannot be sent"
)
args = parser.parse_args()

if args.started:
    with open(args.started, "a") as handle:
        handle.write(f"{os.getpid()}\n")

if args.view:
    with open(args.view, "w") as handle:
        seen = {"name": __name__, "argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(), "file": __file__}
        seen["signals"] = {s.name: str(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
        json.dump(seen, handle)


class Latency(Dataset):
    def __len__(self):
        return args.size

    def __getitem__(self, index):
        if args.load_ms:
            time.sleep(args.load_ms / 1000)
        return torch.full((8,), float(index % 7)), index % 3


def busy(ms):
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


if args.fail_at == 0:
    raise RuntimeError("failing before the first batch, as asked")
if args.no_loader:
    for _ in range(20):
        busy(args.step_ms)
    sys.exit(0)

made = 0


def collate(items):
    """As the default, but the batch a worker makes --unpicklable-at holds a lock, which its result
    queue cannot pickle: Python prints the error and drops the batch, and the loop waits for it."""
    global made
    made += 1
    batch = default_collate(items)
    return [*batch, threading.Lock()] if made == args.unpicklable_at else batch


loader = DataLoader(
    Latency(),
    batch_size=4,
    shuffle=False,
    num_workers=args.workers,
    collate_fn=collate if args.unpicklable_at >= 0 else None,
)
step = 0
for _epoch in range(args.epochs):
    for _x, _y in loader:
        try:
            busy(args.step_ms)
        except BaseException:  # a careless script: what it swallows is lost
            if not args.swallow:
                raise
        step += 1
        if args.marker and step == args.marker_after:
            open(args.marker, "w").close()
        if step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == args.fail_at:
            raise ValueError(f"failing at step {step}, as asked")
        if step == args.steps:
            sys.exit(0)
    time.sleep(args.pause_s)
