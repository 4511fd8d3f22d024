#!/usr/bin/env python3
"""What training pays per epoch, without fastload: a script run as it is, with every DataLoader's
``num_workers`` set to W, each epoch of its busiest loader timed from ``iter()`` to the next
``iter()`` (the last one to the script's end), so its start-up, its last step and the shutdown of
its workers all count.

    python scripts/plain_epochs.py W SCRIPT [ARGS...]

Prints one line to stderr: W, then samples/s of each epoch, then their harmonic mean (the rate
over all the epochs). This is the ground truth a window of whole epochs is checked against
(docs/benchmarks.md). Only the torch import is patched; no fastload code runs.
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
import time
from collections import defaultdict

from torch.utils.data import DataLoader

WORKERS = int(sys.argv[1])
SCRIPT = sys.argv[2]
starts: dict[int, list[tuple[float, int]]] = defaultdict(list)  # loader -> (iter() time, samples an epoch)
built_init, built_iter = DataLoader.__init__, DataLoader.__iter__


def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    kwargs["num_workers"] = WORKERS
    if WORKERS == 0:  # the settings that need workers, back to neutral
        kwargs.pop("prefetch_factor", None)
        kwargs["persistent_workers"] = False
    built_init(self, *args, **kwargs)


def start(self):  # type: ignore[no-untyped-def]
    starts[id(self)].append((time.perf_counter(), len(self.dataset)))  # type: ignore[arg-type]  # samples an epoch
    return built_iter(self)


def report() -> None:
    end = time.perf_counter()
    epochs = max(starts.values(), key=len, default=[])
    marks = [t for t, _ in epochs] + [end]
    rates = [n / (b - a) for (a, n), b in zip(epochs, marks[1:], strict=True)]
    mean = len(rates) / sum(1 / r for r in rates) if rates else 0.0
    print("W", WORKERS, [round(r) for r in rates], "all", round(mean), file=sys.stderr)


DataLoader.__init__ = init  # type: ignore[method-assign]
DataLoader.__iter__ = start  # type: ignore[method-assign]
atexit.register(report)
sys.argv = [SCRIPT, *sys.argv[3:]]
sys.path.insert(0, os.path.dirname(os.path.abspath(SCRIPT)))  # as python SCRIPT would
runpy.run_path(SCRIPT, run_name="__main__")
