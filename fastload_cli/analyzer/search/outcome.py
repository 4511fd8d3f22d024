"""What a num_workers search's measured settings say: the setting to use, its measured speedup
over the script's own, where returns end and why, and the sentences that say so (the evidence,
the report and the advice quote them). Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.search import epochs, parts
from fastload_cli.analyzer.search.climb import climb
from fastload_cli.analyzer.search.guided import most_workers, starved
from fastload_cli.analyzer.search.limits import Limits, capped
from fastload_cli.analyzer.search.points import (
    beats,
    faster,
    fewest_near_best,
    path_noise,
    per_setting,
    plain,
    saturated,
    throughput,
    unconfirmed_dip,
    usable,
)
from fastload_cli.analyzer.search.predict import Curve, error
from fastload_cli.formatting import capitalised, pct, size
from fastload_cli.records import SweepPoint, SweepResult


def conclude(
    points: Sequence[SweepPoint], current: int | None, limits: Limits, cpu_count: int | None, curve: Curve | None = None
) -> SweepResult | None:
    """The setting to use, its measured speedup over the script's own, and where returns end;
    with the prediction the search started from (``curve``), and how far off it was."""
    measured = plain(points)
    ok = usable(measured.values())
    if not ok:
        return None
    best = max(ok, key=throughput)
    chosen = worth_its_memory(ok, fewest_near_best(ok), best, limits)
    base = _own(measured, current)
    variant = _better_variant(points, chosen)
    top = variant or chosen
    significant = base is not None and beats(measured, top, base)
    spread = path_noise(measured, top, base) if base is not None else th.SWEEP_NOISE_FLOOR  # what top is held to
    held_back = _after_a_dip(measured, top, base)  # before top falls back to the script's own setting
    gain = throughput(top) / throughput(base) if base is not None and throughput(base) > 0 else None
    whole = epochs.decided(points, current) if base is not None else None
    guess = epochs.estimated(base, top, limits) if base is not None and top.workers > base.workers else None
    # whole epochs decide fewer workers, and more where they measured them: start-ups included
    if whole is not None and (not significant or top.workers < (current or 0) or whole.workers == top.workers):
        picked, significant = measured[whole.workers], whole.told_apart
        chosen, variant, top, gain, spread, held_back, guess = picked, None, picked, whole.gain, whole.noise, (), None
    gain = guess.gain if guess is not None else gain  # more workers on short epochs: their start-ups taken off
    significant = significant and gain is not None and gain / (1 + spread) >= th.SWEEP_MIN_PROMISE
    significant = significant and (limits.fewer or top.workers >= (current or 0))
    if base is not None and not significant:
        chosen, variant, top, gain, guess = base, None, base, 1.0, None  # nothing measurably beats the own setting
    stopped = _stopped(points, limits, curve, current)
    diminishing_at, reason = _where_returns_end(measured, best, stopped, limits, cpu_count)
    result = SweepResult(
        points=tuple(sorted(per_setting(points), key=lambda p: (p.workers, p.variant or ""))),
        current_workers=current,
        best_workers=best.workers,
        recommended_workers=chosen.workers,
        recommended_variant=variant.variant if variant else None,
        speedup=gain,
        noise=spread,
        significant=significant,
        memory_cost_bytes=_memory_cost(top, base),
        diminishing_at=diminishing_at,
        reason=reason,
        stopped=stopped,
        caveats=(*across_epochs(measured, limits), *parts.apart(measured), *held_back),
        estimated_over_epochs=guess is not None,
        **_predicted(curve, measured, current),
    )
    return replace(result, conclusion=conclusion(result), returns=returns(result))


def _own(measured: dict[int, SweepPoint], current: int | None) -> SweepPoint | None:
    """The script's own setting, where it was measured and delivered batches."""
    base = measured.get(current) if current is not None else None
    return base if base is not None and base.throughput_samples_per_s is not None else None


def _memory_cost(top: SweepPoint, base: SweepPoint | None) -> int | None:
    """Process-tree RSS of ``top`` over ``base`` (the script's own setting, or the knee)."""
    return top.rss_bytes - base.rss_bytes if base is not None and top.rss_bytes and base.rss_bytes else None


def _where_returns_end(
    measured: dict[int, SweepPoint], best: SweepPoint, stopped: str | None, limits: Limits, cpu_count: int | None
) -> tuple[int | None, str]:
    """The setting past which more workers did not help, and why; none where a limit cut the search
    while the most workers measured were as fast as any (returns had not ended)."""
    ok = usable(measured.values())
    highest = measured[max(measured)]
    if stopped is not None and limits.grid is None and highest in ok and not faster(best, highest):
        return None, still_rising(highest, stopped)
    knee, above = _knee(ok, best)
    return knee.workers, why_returns_end(knee, cpu_count, limits, above)


def worth_its_memory(ok: Sequence[SweepPoint], chosen: SweepPoint, best: SweepPoint, limits: Limits) -> SweepPoint:
    """``chosen``, unless it lies past where returns end (``_knee``), gains less than
    ``SWEEP_WEIGHED_GAIN`` over that setting and needs ``SWEEP_KNEE_MEMORY_SHARE`` of the memory
    a setting may use more: then the knee, as fast within the runs' noise. long_epochs.py
    --latency-ms 4 on two cores measured 32 workers 1.14x 12 (±16%), 8.3 GiB apart of 18 GiB;
    plain runs train at the same pace with either."""
    knee, _ = _knee(ok, best)
    budget, more = limits.memory_budget_bytes, _memory_cost(chosen, knee)
    if knee.workers >= chosen.workers or more is None or not budget:
        return chosen
    if throughput(chosen) >= throughput(knee) * th.SWEEP_WEIGHED_GAIN:
        return chosen
    return knee if more >= th.SWEEP_KNEE_MEMORY_SHARE * budget else chosen


def _knee(ok: Sequence[SweepPoint], best: SweepPoint) -> tuple[SweepPoint, SweepPoint | None]:
    """Where returns end: the fewest workers that ``best`` does not beat beyond the noise; and the
    next setting measured past it, which says how far past it the runs could tell."""
    knee = min((p for p in ok if not faster(best, p)), key=lambda p: p.workers)
    return knee, min((p for p in ok if p.workers > knee.workers), key=lambda p: p.workers, default=None)


def _stopped(points: Sequence[SweepPoint], limits: Limits, curve: Curve | None, current: int | None) -> str | None:
    """Why the search ended before returns were seen to end, when a limit ended it: memory,
    ``max_workers``, an epoch's batches at the fastest setting (``guided.most_workers``), or the
    settings a guided sweep allows while the loop still waited at the most workers measured beside
    idle cores."""
    if limits.grid is not None:
        return None
    if curve is None:
        return climb(points, limits)[1]
    why = capped(curve.best, points, limits)[1]
    measured = plain(points)
    highest = measured[max(measured)] if measured else None
    tried = [w for w in measured if w != current]
    if why is not None or highest is None or not starved(highest):
        return why
    fastest = max(usable(measured.values()), key=throughput, default=None)
    if highest is fastest and highest.workers >= most_workers(limits) < limits.max_workers:
        return (
            f"at {highest.workers} workers each of an epoch's {limits.epoch_batches} batches has a worker of its own, "
            "and more workers would never get one"
        )
    if len(tried) >= th.PREDICT_MAX_SETTINGS:
        return (
            f"it measured the {th.PREDICT_MAX_SETTINGS} settings a sweep allows, and at {highest.workers} workers the "
            f"loop still waited {pct(highest.data_wait_fraction)} of the time beside idle cores"
        )
    return None


def _predicted(curve: Curve | None, measured: dict[int, SweepPoint], current: int | None) -> dict[str, Any]:
    """The prediction's curve and best setting, and its error at the settings measured to verify it."""
    if curve is None:
        return {}
    verified = [(w, throughput(p)) for w, p in measured.items() if w != current and p.throughput_samples_per_s]
    return {"predicted": curve.points, "predicted_best": curve.best, "prediction_error": error(curve, verified)}


def conclusion(result: SweepResult) -> str:
    """What the sweep says to do, in one sentence: the evidence, the report and the advice quote it."""
    if result.significant and result.speedup is not None:
        setting = f"num_workers={result.recommended_workers}"
        if result.recommended_variant:
            setting += f", {result.recommended_variant}"
        cost = result.memory_cost_bytes
        memory = f", {size(abs(cost))} {'more' if cost > 0 else 'less'} memory" if cost else ""
        whole = any(
            p.variant == epochs.EPOCHS_VARIANT and p.workers == result.recommended_workers for p in result.points
        )
        how = "as measured over whole epochs, each one's worker start-up included" if whole else "as measured"
        if result.estimated_over_epochs:
            how = "over whole epochs, as its steady window and each epoch's measured worker start-up make them"
        return (
            f"Use {setting}: {promised(result):.2f}x the script's own setting {how}, less its runs' "
            f"noise (±{100 * result.noise:.0f}%){memory}."
        )
    if result.speedup is not None:
        own = result.current_workers or 0
        more = sorted({p.workers for p in result.points if p.variant == epochs.EPOCHS_VARIANT and p.workers > own})
        if more:  # steady windows found more workers faster; whole epochs, start-ups included, did not
            return (
                f"Keep num_workers={result.current_workers}: num_workers={more[-1]} was faster in steady windows, but "
                f"not by {th.SWEEP_MIN_PROMISE:.2f}x over whole epochs once the runs' noise is taken off, each "
                "epoch's worker start-up included (persistent_workers=True starts them once)."
            )
        return (
            f"Keep num_workers={result.current_workers}: no setting measurably faster (none beats it by "
            f"{th.SWEEP_MIN_PROMISE:.2f}x once the runs' noise is taken off)."
        )
    return f"The highest throughput was measured at {result.best_workers} workers."


def promised(result: SweepResult) -> float:
    """What the advised setting promises: its measured speedup less its runs' noise, the one
    figure the conclusion and the advice quote."""
    return (result.speedup or 1.0) / (1 + result.noise)


def returns(result: SweepResult) -> str:
    """Where returns end and why, in one sentence."""
    if result.diminishing_at is None:
        return f"{capitalised(result.reason)}."
    return f"Returns end at {result.diminishing_at} workers: {result.reason}."


def _after_a_dip(measured: dict[int, SweepPoint], top: SweepPoint, base: SweepPoint | None) -> tuple[str, ...]:
    """The caveat of the setting the sweep would advise, whose gain appears only after a slower
    one and was not measured again (``points.unconfirmed_dip``)."""
    slower = unconfirmed_dip(measured, top, base) if base is not None and top is not base else None
    if slower is None or base is None or not throughput(base):
        return ()
    return (
        f"num_workers={top.workers} measured {throughput(top) / throughput(base):.2f}x the script's own setting, "
        f"but num_workers={slower.workers} between them measured {throughput(slower) / throughput(base):.2f}x: a gain "
        "after a slower setting is what noise does, so it is not advised without measuring both again",
    )


def _better_variant(points: Sequence[SweepPoint], plain: SweepPoint) -> SweepPoint | None:
    """A prefetch_factor / pin_memory variant of ``plain`` that was measurably faster than it."""
    variants = usable(
        p for p in per_setting(points) if p.variant not in (None, epochs.EPOCHS_VARIANT) and p.workers == plain.workers
    )
    winner = max(variants, key=throughput, default=None)
    return winner if winner is not None and faster(winner, plain) else None


def across_epochs(measured: dict[int, SweepPoint], limits: Limits) -> tuple[str, ...]:
    """Settings asked for on the command line whose epoch leaves no steady window: their window
    spans epoch boundaries, so their figures include start-ups and drains, unlike the others'."""
    if limits.grid is None:
        return ()
    return tuple(
        f"workers={w}: {why}; measured as asked, its window spans epochs, their start-ups and drains "
        "included, so it is not a steady-state rate like the other settings'"
        for w in sorted(measured)
        if w in limits.grid and (why := limits.too_many(w))
    )


def still_rising(highest: SweepPoint, stopped: str) -> str:
    return f"returns had not ended at {highest.workers} workers, the most the search could try: {stopped}"


def why_returns_end(
    knee: SweepPoint, cpu_count: int | None, limits: Limits | None = None, above: SweepPoint | None = None
) -> str:
    """Why more workers than ``knee`` did not help, from what was measured at the knee (and at
    ``above``, the next setting measured past it)."""
    n = knee.workers
    busy, wait, loaders = knee.system_cpu_busy_fraction, knee.data_wait_fraction, knee.loader_busy_fraction
    if limits is not None and not limits.persistent_workers and limits.too_many(n) and knee.startup_s:
        return (
            f"epochs restart the workers: at {n} workers an epoch of {limits.epoch_batches} batches has no steady "
            f"state, and each one starts with {knee.startup_s:.2f} s of worker start-up before its first batch, "
            "which more workers lengthen (persistent_workers=True starts them once)"
        )
    if saturated(knee):
        cores = f"the {cpu_count} CPUs" if cpu_count else "the CPUs"
        return f"cores saturated: {cores} were {pct(busy)} busy at {n} workers, so more workers only share them"
    if wait is not None and wait < th.WAIT_COMPUTE_BOUND:
        if n and loaders is not None and loaders <= th.LOADER_IDLE:
            return (
                f"IO latency hidden: {n} workers keep enough reads in flight (each busy only {pct(loaders)} "
                f"of the time) that the loop waits for data {pct(wait)} of the time; the step is now the limit"
            )
        return f"step-bound: at {n} workers the loop waits for data {pct(wait)} of the time; the step is the limit"
    detail = ", ".join(
        text
        for text in (
            f"the loop still waited {pct(wait)} of the time" if wait is not None else "",
            f"the CPUs were {pct(busy)} busy" if busy is not None else "",
        )
        if text
    )
    detail = detail or "no CPU or wait figures"
    past = ""
    if above is not None and knee.throughput_samples_per_s:
        gain = throughput(above) / knee.throughput_samples_per_s
        told = "slower beyond" if faster(knee, above) else "inside"
        spread = pct(noise.between_settings(above, knee))
        past = f": {above.workers} workers measured {gain:.2f}x that, {told} the runs' noise (±{spread})"
    return f"throughput stopped rising at {n} workers ({detail}){past}; the cause was not measured"
