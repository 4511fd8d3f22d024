"""Made-up measurements for the search's tests: a measured setting (``pt``), throughput models,
and the climb run to its end against a model."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fastload_cli.analyzer.search import climb
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.records import SweepPoint

GIB = 2**30


Model = Callable[[int], float]


def pt(
    workers: int,
    throughput: float | None,
    *,
    spread: float | None = 0.01,
    wait: float = 0.4,
    busy: float = 0.5,
    loaders: float = 0.9,
    rss: int | None = None,
    variant: str | None = None,
) -> SweepPoint:
    return SweepPoint(
        workers=workers,
        mode=f"workers={workers}",
        throughput_samples_per_s=throughput,
        spread=spread,
        data_wait_fraction=wait,
        system_cpu_busy_fraction=busy,
        loader_busy_fraction=loaders,
        rss_bytes=rss,
        variant=variant,
    )


def search(
    model: Model, limits: Limits, current: int | None, *, confirm: bool = False, **point_args: object
) -> list[SweepPoint]:
    """Run the planner to the end against a throughput model; the points in measuring order
    (without the confirming second runs unless ``confirm``)."""
    limits = dataclasses.replace(limits, confirm=confirm)
    points: list[SweepPoint] = []
    for _ in range(50):
        nxt = climb.plan(points, limits, current).workers
        if nxt is None:
            return points
        points.append(pt(nxt, model(nxt), **point_args))  # type: ignore[arg-type]
    raise AssertionError("the search did not end")


def order(points: list[SweepPoint]) -> list[int]:
    return [p.workers for p in points]


def cpu_bound(w: int) -> float:
    """Two cores: one worker loads beside the step, two fill the machine, more only share it."""
    return {0: 50.0, 1: 90.0, 2: 120.0, 3: 121.0}.get(w, 119.0)


def latency_bound(w: int) -> float:
    """Each worker hides one read's latency: throughput grows with workers until the step limits it."""
    return 15.0 if w == 0 else min(20.0 * w, 300.0)
