"""The noise rules, in one place: how far apart two figures must be before fastload tells them apart.

A run's window has a spread (``RunSummary.throughput_spread``, a setting's ``SweepPoint.spread``:
half the range of its throughput across blocks of the window, relative). Two runs' figures are
told apart only beyond their spreads, and never by less than ``SWEEP_NOISE_FLOOR``, what paired runs
of one setting differ by on a quiet machine. Runs measured again, or in pairs, bound a gain by
Student's t on how far the runs differ (``gain_noise``, ``paired``). A promise to the user clears
what one script's runs differ by from run to run (``promised``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fastload_cli.analyzer import thresholds as th
from fastload_cli.records import RunSummary, SweepPoint

# One-sided quantiles of Student's t by degrees of freedom (runs of both settings less 2), then the
# normal's beyond the table: at 90%, for one setting with fewer workers compared; at 95%, for the
# best of two (the 10% shared between them).
T_ONE_SIDED = {
    1: ((3.078, 1.886, 1.638, 1.533, 1.476, 1.440, 1.415, 1.397, 1.383, 1.372), 1.282),
    2: ((6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812), 1.645),
}


def floored(spread: float) -> float:
    """``spread``, never below ``SWEEP_NOISE_FLOOR``."""
    return max(th.SWEEP_NOISE_FLOOR, spread)


def of_run(s: RunSummary | None) -> float:
    """The relative throughput difference a run cannot tell from noise: its measured spread, floored."""
    return floored((s.throughput_spread if s is not None else None) or 0.0)


def between_runs(a: RunSummary | None, b: RunSummary | None) -> float:
    """The relative noise of a speedup between two runs: their throughput spreads added, floored."""
    return floored(sum(s.throughput_spread or 0.0 for s in (a, b) if s is not None))


def between_settings(a: SweepPoint, b: SweepPoint) -> float:
    """The relative difference below which two measured settings cannot be told apart: the larger
    of their spreads, floored."""
    return max(th.SWEEP_NOISE_FLOOR, a.spread or 0.0, b.spread or 0.0)


def over_pairs(ceilings: Sequence[float], ceiling: float, each: Sequence[float]) -> float:
    """The relative noise of a ceiling read from pairs of runs measured again: the larger of how far
    the pairs' ceilings differ (half their range, as a share of the ceiling) and each pair's own
    noise (``each``) over the square root of their number, the drift between the pairs left out."""
    between = (max(ceilings) - min(ceilings)) / 2 / ceiling
    within = sum(each) / len(each) ** 1.5
    return max(th.SWEEP_NOISE_FLOOR, between, within)


def pooled_spread(rates: Sequence[float], rate: float, within: float) -> float:
    """The spread of runs read as one (pooled) at ``rate``: at least half the range of their rates,
    relative to it, and at least the largest spread ``within`` one of them."""
    between = (max(rates) - min(rates)) / 2 / rate if rate > 0 else 0.0
    return max(between, within)


def promised(spreads: float) -> float:
    """The noise of a gain promised to the user from two runs measured once each: their windows'
    spreads (``between_runs``), never less than what one script's runs differ by from run to run
    (``PROMISE_RUN_NOISE``), which a window's own spread does not show."""
    return max(th.PROMISE_RUN_NOISE, spreads)


def beyond(gain: float | None, noise: float) -> bool:
    """``gain`` is measured beyond ``noise``: it is at least 1 + noise."""
    return gain is not None and gain >= 1 + noise


def paired(runs: Sequence[SweepPoint], own: int, other: int, *, compared: int = 1) -> tuple[float, float] | None:
    """The gain of ``other`` over ``own`` and how far above it chance alone could put it, where
    their runs came in pairs (``_order`` measures them so: an epoch of each in one run of the
    script, or runs back to back), the pair's order reversed in the next: None with fewer than
    three such pairs, or all in one order.

    Within a pair both settings share the machine's state, so the drift between pairs leaves the
    comparison. What a pair's order adds (the second epoch of a pair pays the first's workers
    shutting down, say) lifts the pairs of one order and lowers the other's alike: the gain is
    the mean of the two orders' mean log-ratios, and the bound a one-sided Student's t on it
    (``quantile``: ``other`` the best of ``compared`` settings), from how far the pairs differ from
    their order's mean."""
    orders: dict[bool, list[float]] = {True: [], False: []}  # own first; other first
    for first, second in zip(runs[::2], runs[1::2], strict=False):
        rates = {p.workers: p.throughput_samples_per_s or 0.0 for p in (first, second)}
        if rates.keys() == {own, other} and rates[own] > 0 and rates[other] > 0:
            orders[first.workers == own].append(math.log(rates[other] / rates[own]))
    a, b = orders[True], orders[False]
    freedom = len(a) + len(b) - 2
    if not a or not b or freedom < 1:
        return None
    mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
    squares = sum((x - mean_a) ** 2 for x in a) + sum((x - mean_b) ** 2 for x in b)
    error = (squares / freedom) ** 0.5 / 2 * (1 / len(a) + 1 / len(b)) ** 0.5
    return math.exp((mean_a + mean_b) / 2), math.expm1(quantile(freedom, compared) * error)


def gain_noise(own: Sequence[float], other: Sequence[float], *, compared: int = 1) -> float | None:
    """How far above 1 the ratio of ``other``'s mean rate to ``own``'s must be before it is more
    than chance: a one-sided bound on the difference of the means (Student's t, ``quantile``, from
    how far each setting's runs differ from their mean, pooled), as a share of ``own``'s mean. None
    with fewer than three runs in all (nothing to tell the runs' spread from)."""
    freedom = len(own) + len(other) - 2
    if freedom < 1 or not own or not other:
        return None
    mean_own, mean_other = sum(own) / len(own), sum(other) / len(other)
    if mean_own <= 0:
        return None
    squares = sum((r - mean_own) ** 2 for r in own) + sum((r - mean_other) ** 2 for r in other)
    error = (squares / freedom * (1 / len(own) + 1 / len(other))) ** 0.5
    return quantile(freedom, compared) * error / mean_own


def quantile(freedom: int, compared: int) -> float:
    """Student's t that chance exceeds 10% of the time shared among ``compared`` settings (at most
    two: ``candidates`` measures the fastest with fewer workers and 0), at ``freedom`` degrees."""
    table, normal = T_ONE_SIDED[min(max(compared, 1), 2)]
    return table[freedom - 1] if freedom <= len(table) else normal
