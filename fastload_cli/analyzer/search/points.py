"""Measured settings (``SweepPoint``): one from a run's summary, several runs of one setting as
one, and when one setting beats another beyond the noise."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.records import RunStatus, RunSummary, SweepPoint


def point(summary: RunSummary) -> SweepPoint:
    """A measured setting, from its run's summary; without a throughput where its run measured no
    batch or the script failed in it: the batches before an error are no setting's rate, and a
    setting the script fails with is none to advise."""
    ran = summary.status is not RunStatus.FAILED and summary.batches > 0
    ok = ran and summary.throughput_samples_per_s is not None
    return SweepPoint(
        workers=summary.num_workers or 0,
        mode=summary.mode,
        throughput_samples_per_s=summary.throughput_samples_per_s if ok else None,
        spread=summary.throughput_spread,
        data_wait_fraction=summary.data_wait_fraction,
        system_cpu_busy_fraction=summary.system_cpu_busy_fraction,
        loader_busy_fraction=summary.loader_busy_fraction,
        rss_bytes=summary.rss_bytes,
        startup_s=summary.startup_s,
        variant=summary.variant,
        batches=summary.batches,
    )


def usable(points: Iterable[SweepPoint]) -> list[SweepPoint]:
    """The points whose runs measured a throughput."""
    return [p for p in points if p.throughput_samples_per_s is not None]


def throughput(p: SweepPoint) -> float:
    return p.throughput_samples_per_s or 0.0


def fewest_near_best(points: Iterable[SweepPoint]) -> SweepPoint:
    """Of ``points`` (each with a throughput; at least one), the one with the fewest workers
    within ``SWEEP_PREFER_FEWER_WITHIN`` of the fastest: what the sweep would name."""
    found = list(points)
    best = max(found, key=throughput)
    near = (p for p in found if throughput(p) >= throughput(best) * (1 - th.SWEEP_PREFER_FEWER_WITHIN))
    return min(near, key=lambda p: p.workers)


def swings(p: SweepPoint) -> bool:
    """``p``'s run varied across its own window by more than ``SWEEP_CONFIRM_SPREAD`` (a stall
    every few batches): one run can land far from the setting's rate in training."""
    return (p.spread or 0.0) > th.SWEEP_CONFIRM_SPREAD


def saturated(p: SweepPoint) -> bool:
    """The cores were ``CPU_SATURATED`` busy at ``p``'s setting: more workers only share them with
    the step and with each other. Where returns end (``outcome.why_returns_end``), and where a
    guided search stops climbing (``guided._around``)."""
    busy = p.system_cpu_busy_fraction
    return busy is not None and busy >= th.CPU_SATURATED


def faster(a: SweepPoint, b: SweepPoint) -> bool:
    """a's throughput beats b's by more than the noise of either run."""
    if a.throughput_samples_per_s is None or b.throughput_samples_per_s is None:
        return False
    return a.throughput_samples_per_s > b.throughput_samples_per_s * (1 + noise.between_settings(a, b))


def between(measured: dict[int, SweepPoint], a: SweepPoint, b: SweepPoint) -> list[SweepPoint]:
    """The settings measured strictly between ``a``'s and ``b``'s worker counts, with a throughput."""
    low, high = sorted((a.workers, b.workers))
    return usable(p for w, p in measured.items() if low < w < high)


def path_noise(measured: dict[int, SweepPoint], a: SweepPoint, b: SweepPoint) -> float:
    """The noise of ``a`` against ``b`` and of every setting measured between them: a curve whose
    runs vary that much along the way cannot tell its ends apart by less. Once both ends were
    measured again, their pooled runs say how far apart runs of those settings land, the
    difference between the runs included: the settings between them are not what is compared."""
    if a.runs > 1 and b.runs > 1:
        return noise.between_settings(a, b)
    return max([noise.between_settings(a, b), *(p.spread or 0.0 for p in between(measured, a, b))])


def dip(measured: dict[int, SweepPoint], top: SweepPoint, base: SweepPoint) -> SweepPoint | None:
    """A setting between ``base`` and a faster ``top`` that measured slower than ``base``: the gain
    appears only after a worse neighbour, which a real trend does not do and noise does."""
    slower = [p for p in between(measured, top, base) if throughput(p) < throughput(base)]
    return min(slower, key=throughput, default=None)


def beats(measured: dict[int, SweepPoint], top: SweepPoint, base: SweepPoint) -> bool:
    """``top`` is faster than ``base`` by more than the noise measured from one to the other, and
    not only after a slower setting between them unless both were measured again."""
    if top.throughput_samples_per_s is None or base.throughput_samples_per_s is None:
        return False
    if throughput(top) <= throughput(base) * (1 + path_noise(measured, top, base)):
        return False
    return unconfirmed_dip(measured, top, base) is None


def unconfirmed_dip(measured: dict[int, SweepPoint], top: SweepPoint, base: SweepPoint) -> SweepPoint | None:
    """``dip``, unless both ends were measured again (their runs pooled): then the gain stands."""
    return None if top.runs > 1 and base.runs > 1 else dip(measured, top, base)


def per_setting(points: Iterable[SweepPoint]) -> list[SweepPoint]:
    """One point per setting: a setting measured more than once gets its runs' mean throughput,
    each run weighed by the batches it measured (a longer window says more of the setting's rate),
    and a spread that covers the difference between the runs as well as within each. A setting
    one of whose runs measured no throughput (the script failed in it) has none: a setting the
    script fails with is none to advise, nor to measure again (many_tensors.py, out of file
    descriptors at 6 workers in a second run, was asked for 6 again after each failure)."""
    groups: dict[tuple[int, str | None], list[SweepPoint]] = {}
    for p in points:
        groups.setdefault((p.workers, p.variant), []).append(p)
    found = []
    for group in groups.values():
        ok = usable(group)
        failed = [p for p in group if p.throughput_samples_per_s is None]
        if len(group) == 1 or failed:
            found.append(failed[-1] if failed else group[-1])
            continue
        rates = [throughput(p) for p in ok]
        weights = [max(p.batches, 1) for p in ok]
        mean = sum(r * w for r, w in zip(rates, weights, strict=True)) / sum(weights)
        within = max((p.spread for p in ok if p.spread is not None), default=0.0)
        found.append(
            replace(
                ok[-1],
                throughput_samples_per_s=mean,
                spread=noise.pooled_spread(rates, mean, within),
                runs=len(ok),
                batches=sum(p.batches for p in ok),
            )
        )
    return found


def plain(points: Iterable[SweepPoint]) -> dict[int, SweepPoint]:
    """Points without prefetch_factor / pin_memory overrides, one per worker count."""
    return {p.workers: p for p in per_setting(points) if p.variant is None}
