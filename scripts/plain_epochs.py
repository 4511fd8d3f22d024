#!/usr/bin/env python3
"""What training pays per epoch, without fastload's measuring: a script run as it is, with every
DataLoader's ``num_workers`` set to W (``own``: as the script sets it), each epoch of its busiest
loader timed from ``iter()`` to the next ``iter()`` (the last one to the script's end), so its
start-up, its last step and the shutdown of its workers all count.

    python scripts/plain_epochs.py [--set NAME=VALUE ...] [--apply cache-decoded|no-aug|worker-threads] [--epochs N]
                                   [--epoch-batches B] W SCRIPT [ARGS...]

``--set`` gives every DataLoader that argument (``persistent_workers=True``), as editing the
script would. ``--apply`` follows advice that changes the dataset, the way a user adopts it:
``cache-decoded`` wraps each loader's dataset in ``fastload_cli.fixes.DecodedCache`` (as ``fastload
try --fix cache-decoded`` does) and fills it before the loader starts; ``no-aug`` puts fastload's
deterministic stand-ins in place of the random transforms (augmentation made free: the most a
cheaper augmentation can give); ``worker-threads`` gives each loader ``worker_init_fn=
fastload_cli.fixes.WorkerThreads(1)`` (its own init function run after it). Nothing of fastload
measures or runs beside the script.
``--epochs N`` ends the script when its busiest loader starts epoch N + 1, and ``--epoch-batches
B`` ends each epoch after B batches (scripts that train longer than a comparison needs).

Prints one line to stderr: W, then samples/s of each epoch, then their harmonic mean over all
epochs ("all") and over the epochs after the first ("warm"), then the seconds spent filling caches.
This is the ground truth a window of whole epochs is checked against (docs/benchmarks.md).
"""

from __future__ import annotations

import ast
import atexit
import os
import runpy
import sys
import time
from collections import defaultdict
from pathlib import Path

from torch.utils.data import DataLoader


def options(argv: list[str]) -> tuple[dict[str, object], dict[str, str], list[str]]:
    """The leading ``--set`` options (DataLoader arguments), the others (``--apply``, ``--epochs``,
    ``--epoch-batches``) by name, and the rest (W, SCRIPT, ARGS)."""
    sets: dict[str, object] = {}
    named: dict[str, str] = {}
    while argv and argv[0] in ("--set", "--apply", "--epochs", "--epoch-batches"):
        flag, value, argv = argv[0], argv[1], argv[2:]
        if flag == "--set":
            name, _, text = value.partition("=")
            sets[name] = ast.literal_eval(text)
        else:
            named[flag] = value
    return sets, named, argv


SETS, NAMED, REST = options(sys.argv[1:])
APPLY = NAMED.get("--apply")
EPOCHS = int(NAMED["--epochs"]) if "--epochs" in NAMED else None
EPOCH_BATCHES = int(NAMED["--epoch-batches"]) if "--epoch-batches" in NAMED else None
WORKERS = None if REST[0] == "own" else int(REST[0])
SCRIPT = REST[1]
starts: dict[int, list[tuple[float, int]]] = defaultdict(list)  # loader -> (iter() time, samples an epoch)
built_init, built_iter = DataLoader.__init__, DataLoader.__iter__
changed: dict[int, object] = {}  # id(dataset) -> the dataset as the advice changed it
filling_s = [0.0]
derandomized = [0]  # random transforms replaced by --apply no-aug, over every loader


def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    if WORKERS is not None:
        kwargs["num_workers"] = WORKERS
    kwargs.update(SETS)
    if kwargs.get("num_workers", 0) == 0:  # the settings that need workers, back to neutral
        kwargs.pop("prefetch_factor", None)
        kwargs["persistent_workers"] = False
    if APPLY == "worker-threads":
        sys.path.append(str(Path(__file__).resolve().parent.parent))  # this checkout's fastload, installed or not
        from fastload_cli.fixes import WorkerThreads

        kwargs["worker_init_fn"] = WorkerThreads(1, then=kwargs.get("worker_init_fn"))
    elif APPLY is not None:
        args, kwargs = with_dataset(args, kwargs)
    built_init(self, *args, **kwargs)


def with_dataset(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The loader's arguments with its dataset changed as ``--apply`` says (once per dataset)."""
    dataset = args[0] if args else kwargs["dataset"]
    if any(dataset is done for done in changed.values()):  # a loader rebuilt from a changed one (accelerate)
        return args, kwargs
    if id(dataset) not in changed:
        changed[id(dataset)] = applied(dataset)
    new = changed[id(dataset)]
    return ((new, *args[1:]), kwargs) if args else ((), {**kwargs, "dataset": new})


def applied(dataset: object) -> object:
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # this checkout's fastload, installed or not
    if APPLY == "no-aug":
        from fastload_cli.runner.child.transforms import derandomize

        walk = derandomize(dataset, frozenset(), frozenset())
        derandomized[0] += len(walk.found)  # a loader without random transforms (evaluation) stays as it is
        return dataset
    from fastload_cli.runner.child.fixing import cache_view

    started = time.perf_counter()
    view, what = cache_view(dataset, 0)  # as try's cached-decode builds it, checked on the first sample
    if view is None:
        raise SystemExit(f"cache-decoded: {what}")
    view.fill(len(view))
    filling_s[0] += time.perf_counter() - started
    return view


def start(self):  # type: ignore[no-untyped-def]
    if EPOCHS is not None and len(starts[id(self)]) == EPOCHS:
        raise SystemExit(0)  # enough epochs: the report is made at exit, the last epoch ending now
    samples = len(self.dataset)  # type: ignore[arg-type]
    if EPOCH_BATCHES is not None and self.batch_size is not None:
        samples = min(samples, EPOCH_BATCHES * self.batch_size)
    starts[id(self)].append((time.perf_counter(), samples))  # samples an epoch
    return built_iter(self) if EPOCH_BATCHES is None else cut(built_iter(self), EPOCH_BATCHES)


def cut(batches, count: int):  # type: ignore[no-untyped-def]
    """The epoch's first ``count`` batches: the script's loop then ends the epoch."""
    for i, batch in enumerate(batches):
        if i == count:
            return
        yield batch


def report() -> None:
    if APPLY == "no-aug" and not derandomized[0]:
        print("no-aug: no random transform found in any loader's dataset", file=sys.stderr)
        return  # no rate: what was measured is not what was asked
    end = time.perf_counter()
    epochs = max(starts.values(), key=len, default=[])
    marks = [t for t, _ in epochs] + [end]
    rates = [n / (b - a) for (a, n), b in zip(epochs, marks[1:], strict=True)]
    print("W", "own" if WORKERS is None else WORKERS, [round(r) for r in rates], "all", round(harmonic(rates)),
          "warm", round(harmonic(rates[1:])), "filling", round(filling_s[0], 2), file=sys.stderr)  # fmt: skip


def harmonic(rates: list[float]) -> float:
    return len(rates) / sum(1 / r for r in rates) if rates else 0.0


DataLoader.__init__ = init  # type: ignore[method-assign]
DataLoader.__iter__ = start  # type: ignore[method-assign]
atexit.register(report)
sys.argv = [SCRIPT, *REST[2:]]
sys.path.insert(0, os.path.dirname(os.path.abspath(SCRIPT)))  # as python SCRIPT would
runpy.run_path(SCRIPT, run_name="__main__")
