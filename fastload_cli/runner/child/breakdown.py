"""Inside the child: where a sample's loading time goes, step by step.

Every transform pipeline found in the training loader's dataset (and the datasets it wraps) is
instrumented in place: each step of a ``Compose`` (nested ones step by step; ``RandomApply`` and
``RandomChoice`` as one step each) and each plain callable gets a timer. Then a sample of items
is loaded with ``dataset[i]`` in this process, under the conditions workers run them (one torch
thread when the loader has workers), and collated in batches as the loader would, with Python's
garbage collector held off, as ``timeit`` does: a collection of the whole process (a script's
main process holds hundreds of thousands of objects; one pass took 60 ms) lands in whichever
step allocates at that moment, and read as that step's cost. What
``__getitem__`` spent outside the timed steps is its own work: reading and decoding. The
pipelines are restored before the script goes on (the breakdown's own run ends there; a
real+synthetic run goes on with its replays).

Only the stdlib is imported; torch is reached through the loader it is given.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from fastload_cli.runner.child import transforms

# Containers whose steps are timed one by one (RandomApply / RandomChoice are timed whole: their
# cost includes how often they apply).
STEP_CONTAINERS = frozenset({"Compose", "Sequential"})
GETITEM_NAME = "read and decode (rest of __getitem__)"
COLLATE_NAME = "collate"
MIN_ITEMS = 16  # samples timed before a budget may end the breakdown


@dataclass(slots=True)
class Timer:
    """A transform step with a stopwatch: calls the step and adds up the time it took."""

    step: Any
    name: str
    location: str
    ns: int = 0
    calls: int = 0
    input: tuple[str, list[int]] | None = None  # what the step was given first: its kind and shape

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.input is None and args:
            self.input = _shape_of(args[0])
        start = time.perf_counter_ns()
        try:
            return self.step(*args, **kwargs)
        finally:
            self.ns += time.perf_counter_ns() - start
            self.calls += 1

    def __getattr__(self, name: str) -> Any:  # code that inspects its transforms still works
        return getattr(self.step, name)


@dataclass(slots=True)
class Instrumented:
    timers: list[Timer] = field(default_factory=list)
    undo: list[tuple[Any, str, Any]] = field(default_factory=list)  # (object, attribute, original)

    def restore(self) -> None:
        for owner, attr, original in reversed(self.undo):
            with contextlib.suppress(Exception):  # best effort: the breakdown run ends right after
                setattr(owner, attr, original)


def instrument(dataset: Any) -> Instrumented:
    """Put timers on every transform step of ``dataset`` and the datasets inside it."""
    found = Instrumented()
    for location, owner in _datasets(dataset, "dataset", set()):
        for attr in transforms.pipeline_attrs(owner):
            pipeline = getattr(owner, attr, None)
            if pipeline is None or not callable(pipeline) or type(pipeline).__name__ == "StandardTransform":
                continue
            _time_pipeline(owner, attr, f"{location}.{attr}", found)
        _rebuild_standard_transform(owner, found)
    return found


def _time_pipeline(owner: Any, attr: str, where: str, found: Instrumented, depth: int = 0) -> None:
    """Timers on the pipeline ``owner.attr``: inside it where it is a container or holds pipelines;
    a list or dict of transforms item by item; anything else whole."""
    pipeline = getattr(owner, attr, None)
    if _time_inside(pipeline, where, found, depth):
        return
    if isinstance(pipeline, (list, dict)):
        items = pipeline.items() if isinstance(pipeline, dict) else enumerate(pipeline)
        timed = {key: _timer(step, f"{where}[{key!r}]", found) for key, step in items}
        found.undo.append((owner, attr, pipeline))
        setattr(owner, attr, timed if isinstance(pipeline, dict) else list(timed.values()))
    elif callable(pipeline):
        found.undo.append((owner, attr, pipeline))
        setattr(owner, attr, _timer(pipeline, where, found))


def _time_inside(pipeline: Any, where: str, found: Instrumented, depth: int) -> bool:
    """Timers inside ``pipeline``, which stays in place: a container's steps one by one, or the
    pipelines an object holds (a preset class), each in turn. False for anything else."""
    if depth > transforms.MAX_DEPTH:
        return False
    if _is_container(pipeline):
        _time_steps(pipeline, where, found, depth)
        return True
    if not transforms.holds_pipelines(pipeline):
        return False
    for inner in transforms.held_pipelines(pipeline):
        _time_pipeline(pipeline, inner, f"{where}.{inner}", found, depth + 1)
    return True


def _timer(step: Any, where: str, found: Instrumented) -> Timer:
    timer = Timer(step, transforms.describe(step), where)
    found.timers.append(timer)
    return timer


def _datasets(dataset: Any, location: str, seen: set[int]) -> list[tuple[str, Any]]:
    """``dataset`` and every dataset nested in it (Subset, ConcatDataset, wrappers), with where."""
    if id(dataset) in seen or len(seen) > 64:
        return []
    seen.add(id(dataset))
    found = [(location, dataset)]
    for name, inner in transforms.nested_datasets(dataset):
        found.extend(_datasets(inner, f"{location}.{name}", seen))
    return found


def _is_container(obj: Any) -> bool:
    return type(obj).__name__ in STEP_CONTAINERS and isinstance(getattr(obj, "transforms", None), list)


def _time_steps(container: Any, location: str, found: Instrumented, depth: int = 0) -> None:
    steps = container.transforms
    found.undo.append((container, "transforms", list(steps)))
    timed = []
    for i, step in enumerate(steps):
        where = f"{location}[{i}]"
        timed.append(step if _time_inside(step, where, found, depth + 1) else _timer(step, where, found))
    container.transforms = timed


def _rebuild_standard_transform(dataset: Any, found: Instrumented) -> None:
    """torchvision's VisionDataset applies ``self.transforms``, built from ``transform`` and
    ``target_transform`` at construction: rebuild it so the timed ``transform`` is the one used."""
    standard: Any = getattr(dataset, "transforms", None)
    if type(standard).__name__ != "StandardTransform":
        return
    try:
        rebuilt = type(standard)(getattr(dataset, "transform", None), getattr(dataset, "target_transform", None))
    except Exception:
        return
    found.undo.append((dataset, "transforms", standard))
    dataset.transforms = rebuilt


def measure(loader: Any, items: int, torch: Any, budget_s: float | None = None) -> dict[str, Any]:
    """Time ``items`` samples of ``loader``'s dataset, step by step; the BREAKDOWN event's fields.
    With ``budget_s``, no sample is started after that long once ``MIN_ITEMS`` are timed: the
    samples, spread over the dataset, are taken coarse first, so that those timed are too."""
    dataset = loader.dataset
    if loader._dataset_kind == 1:
        return {"unavailable": "an IterableDataset has no items to load one by one"}
    try:
        length = len(dataset)
    except TypeError:
        return {"unavailable": "the dataset has no length"}
    if length == 0:
        return {"unavailable": "the dataset is empty"}
    indices = _coarse_first(sorted({int(i * length / items) for i in range(min(items, length))}))
    threads = torch.get_num_threads()
    one_thread = loader.num_workers > 0  # workers run with one torch thread
    found = instrument(dataset)
    try:
        if one_thread:
            torch.set_num_threads(1)
        with _no_collections():
            loaded, total_ns = _load(dataset, indices, budget_s)
            collate_ns, collated = _collate(loader, loaded)
    finally:
        found.restore()
        if one_thread:
            torch.set_num_threads(threads)
    n = len(loaded)
    steps = [
        {
            "name": t.name,
            "location": t.location,
            "kind": "transform",
            "ns_per_sample": t.ns / n,
            "input_kind": t.input[0] if t.input else None,
            "input_shape": t.input[1] if t.input else [],
        }
        for t in found.timers
    ]
    inside = sum(t.ns for t in found.timers)
    rest = max(0, total_ns - inside) / n
    steps.append({"name": GETITEM_NAME, "location": "dataset.__getitem__", "kind": "getitem", "ns_per_sample": rest})
    if collated:
        per_sample = collate_ns / collated
        steps.append(
            {"name": COLLATE_NAME, "location": "loader.collate_fn", "kind": "collate", "ns_per_sample": per_sample}
        )
    return {"items": n, "threads": 1 if one_thread else threads, "steps": steps}


@contextlib.contextmanager
def _no_collections() -> Iterator[None]:
    """Python's garbage collector held off, as ``timeit`` does, after one collection untimed: no
    collection of the whole process lands in one step's time."""
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _load(dataset: Any, indices: list[int], budget_s: float | None) -> tuple[list[Any], int]:
    """The items at ``indices``, in order, and the time loading them took; with ``budget_s``, none
    started after that long once ``MIN_ITEMS`` are loaded."""
    deadline = None if budget_s is None else time.perf_counter_ns() + int(budget_s * 1e9)
    loaded: list[Any] = []
    total_ns = 0
    for index in indices:
        start = time.perf_counter_ns()
        if deadline is not None and start > deadline and len(loaded) >= MIN_ITEMS:
            break
        loaded.append(dataset[index])
        total_ns += time.perf_counter_ns() - start
    return loaded, total_ns


def _coarse_first(indices: list[int]) -> list[int]:
    """``indices`` reordered so that each prefix spreads over them all: the first, then every
    2^k-th, then those halfway between, and so on."""
    order = indices[:1]
    stride = 1 << max(0, len(indices) - 1).bit_length()
    while stride:
        order += indices[stride :: 2 * stride]
        stride //= 2
    return order


def _collate(loader: Any, loaded: list[Any]) -> tuple[int, int]:
    """Collate the loaded items in batches of the loader's size: (time, samples collated). The
    first batch is collated once untimed: what a process's first collate pays once (a thread pool
    started, memory first touched) is not what each batch costs, and it swung the figure for one
    batch of images from 0.1 to 3 ms a sample with the run's own memory layout."""
    size = loader.batch_size if loader._auto_collation else None
    if not size or not loaded:
        return 0, 0
    try:
        loader.collate_fn(loaded[:size])
    except Exception:  # items this collate cannot batch: leave collate out of the breakdown
        return 0, 0
    spent, done = 0, 0
    for start in range(0, len(loaded), size):
        chunk = loaded[start : start + size]
        began = time.perf_counter_ns()
        try:
            loader.collate_fn(chunk)
        except Exception:  # items this collate cannot batch: leave collate out of the breakdown
            return 0, 0
        spent += time.perf_counter_ns() - began
        done += len(chunk)
    return spent, done


def _shape_of(value: Any) -> tuple[str, list[int]] | None:
    """A step's input: ("image", [width, height]) for a PIL image, ("tensor", shape) for a tensor."""
    size = getattr(value, "size", None)
    if isinstance(size, tuple) and len(size) == 2 and all(isinstance(v, int) for v in size):
        return "image", list(size)  # PIL: (width, height)
    shape = getattr(value, "shape", None)
    if shape is not None:
        try:
            return "tensor", [int(d) for d in shape]
        except (TypeError, ValueError):
            return None
    return None


def workers_busy(iterator: Any) -> float | None:
    """The share of their lives that ``iterator``'s workers spent on a CPU or waiting for one
    (``/proc``: their scheduler's run and run-queue times against how long each has been alive),
    or None where it cannot be read (no workers, not Linux, a worker gone)."""
    workers = getattr(iterator, "_workers", None)
    if not workers:
        return None
    busy = lived = 0.0
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as file:
            uptime = float(file.read().split()[0])
        for worker in workers:
            with open(f"/proc/{worker.pid}/schedstat") as file:
                on_cpu_ns, waiting_ns = (int(x) for x in file.read().split()[:2])
            with open(f"/proc/{worker.pid}/stat") as file:
                started = int(file.read().rsplit(")", 1)[1].split()[19]) / ticks  # field 22: its start
            busy += (on_cpu_ns + waiting_ns) / 1e9
            lived += max(0.0, uptime - started)
    except (OSError, ValueError, IndexError, AttributeError, TypeError):
        return None
    return busy / lived if lived > 0 else None
