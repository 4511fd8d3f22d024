"""Recommendations: each rule fires only on what was measured, and its expected speedup never
exceeds the speedup ceiling (no input-pipeline change can beat a free input pipeline).

A rule is a function ``(Facts, Verdict) -> Recommendation | None``; ``RULES`` lists them in the
order they are shown when their expected gains tie. Each family of advice has its home:

- ``workers``: how many workers, and how they hand batches over.
- ``samples``: what each sample costs to make (augmentation, decoding, resizing).
- ``storage``: reading the samples (storage latency, RAM caching).
- ``transfer``: the copy to the GPU.
- ``step``: the step is the limit; a data-parallel job's straggler.
- ``shared``: what every rule shares (the evidence it cites, the bounds on its gain).
- ``promises``: what a recommendation promises, held against what was measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice.promises import (
    changes_the_data,
    held,
    inside_noise,
    no_gain,
    read_faster,
    tried_on_other_data,
    tried_without_gain,
    verified,
)
from fastload_cli.analyzer.advice.samples import (
    augmentation_to_gpu,
    cheaper_augmentation,
    cheaper_samples,
    decode_on_gpu,
    resize_offline,
)
from fastload_cli.analyzer.advice.step import step_is_the_limit, straggler_input, straggler_step
from fastload_cli.analyzer.advice.storage import cache_in_ram, hide_storage_latency
from fastload_cli.analyzer.advice.transfer import pin_memory, uint8_transfer
from fastload_cli.analyzer.advice.workers import (
    in_memory_without_workers,
    larger_prefetch,
    measured_workers,
    more_workers,
    persistent_workers,
    whole_batches,
)
from fastload_cli.analyzer.facts import Facts
from fastload_cli.records import Finding, Recommendation, Verdict

Rule = Callable[[Facts, Verdict], "Recommendation | None"]

RULES: tuple[Rule, ...] = (
    measured_workers,
    cheaper_augmentation,
    more_workers,
    in_memory_without_workers,
    whole_batches,
    cheaper_samples,
    decode_on_gpu,
    augmentation_to_gpu,
    cache_in_ram,
    resize_offline,
    persistent_workers,
    larger_prefetch,
    pin_memory,
    uint8_transfer,
    hide_storage_latency,
    step_is_the_limit,
    straggler_input,
    straggler_step,
)


def advise(
    f: Facts, v: Verdict, more: Sequence[Recommendation] = ()
) -> tuple[tuple[Recommendation, ...], tuple[Finding, ...]]:
    """Every rule that fires, and ``more`` (a pathology's fix): a num_workers setting a sweep
    measured first (a one-line change with a measured gain), then measured ones, then by expected
    gain; and, as evidence, those whose runs measured no gain beyond their noise (``no_gain``),
    except a pathology's fix that its run read faster: the pathology advises it (``held``); and
    those whose runs fed training other batches (``changes_the_data``), never advice."""
    fired = [rec for rule in RULES if (rec := rule(f, v)) is not None]
    unsafe = [rec for rec in (*fired, *more) if changes_the_data(rec, f)]
    named = {rec.id for rec in more if read_faster(rec, f)}  # a pathology's fix its run read faster
    unsafe_ids = {rec.id for rec in unsafe}
    safe = (rec for rec in (*fired, *more) if rec.id not in unsafe_ids)
    found = [held(fix) if fix.id in named else fix for fix in (verified(rec, f) for rec in safe)]
    kept = [rec for rec in found if not inside_noise(rec, f) and (rec.id in named or not no_gain(rec))]
    swept = {"increase-num-workers", "reduce-num-workers"} if f.sweep is not None and not _a_trade(f) else set()
    ranked = tuple(sorted(kept, key=lambda r: (r.id not in swept, not r.measured, -_gain(r))))
    said = [tried_without_gain(rec) for rec in found if rec.id not in named and no_gain(rec)]
    return ranked, (*said, *(tried_on_other_data(rec, f) for rec in unsafe))


def _a_trade(f: Facts) -> bool:
    """The sweep's setting gains little (under ``SWEEP_WEIGHED_GAIN``) for much more memory: it is
    ranked by its gain like any other measured advice, not put first."""
    s = f.sweep
    cost = s.memory_cost_bytes if s is not None else None
    gain = s.speedup if s is not None else None
    return cost is not None and cost >= th.SWEEP_WEIGHED_MEMORY and gain is not None and gain < th.SWEEP_WEIGHED_GAIN


def _gain(rec: Recommendation) -> float:
    return rec.expected_speedup or 0.0
