"""Recommendations: each rule fires only on what was measured, and its expected speedup never
exceeds the speedup ceiling (no input-pipeline change can beat a free input pipeline).

A rule is a function ``(Facts, Verdict) -> Recommendation | None``; ``RULES`` lists them in the
order they are shown when their expected gains tie.
"""

from __future__ import annotations

from collections.abc import Callable

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.sweep import gib
from fastload_cli.analyzer.verdict import Facts, pct
from fastload_cli.records import Bottleneck, Recommendation, RunSummary, Verdict

Rule = Callable[[Facts, Verdict], "Recommendation | None"]


def bounded(gain: float | None, ceiling: float | None) -> float | None:
    """A gain capped by the ceiling; unknown without one. Not rounded here: reporters round the
    gain and the ceiling alike, so a gain equal to the ceiling is shown equal to it.

    A gain is at least 1.0x unless the ceiling itself is below 1 (the input pipeline cannot help).
    """
    if gain is None or ceiling is None:
        return None
    return min(max(1.0, gain), ceiling)


def _input_bound(v: Verdict) -> bool:
    return v.bottleneck in (Bottleneck.CPU, Bottleneck.IO)


def capped(gain: float | None, ceiling: float | None) -> float | None:
    """A measured gain, capped by the ceiling when one was measured."""
    if gain is None:
        return None
    return gain if ceiling is None else min(gain, ceiling)


def measured_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """The num_workers setting a sweep measured to be faster than the script's own."""
    s = f.sweep
    if s is None or not s.significant or s.recommended_workers is None or s.current_workers is None:
        return None
    n, now = s.recommended_workers, s.current_workers
    extra = f", {s.recommended_variant.replace(',', ', ')}" if s.recommended_variant else ""
    persistent = ", persistent_workers=True" if n > 0 else ""
    snippet = f"DataLoader(dataset, ..., num_workers={n}{persistent}{extra})"
    cost = s.memory_cost_bytes
    memory = f" It uses {gib(abs(cost))} {'more' if cost > 0 else 'less'} memory (process-tree RSS)." if cost else ""
    assert s.speedup is not None
    return Recommendation(
        id="increase-num-workers" if n > now else "reduce-num-workers",
        title=f"Use num_workers={n}{extra} (now {now}): measured {s.speedup:.2f}x faster",
        detail=(
            f"A sweep under the real training step measured {s.speedup:.2f}x the throughput of num_workers={now} "
            f"(noise ±{100 * s.noise:.0f}%).{memory} Returns end at {s.diminishing_at} workers: {s.reason}. "
            f"Change the loader to:\n    {snippet}"
        ),
        expected_speedup=capped(s.speedup, v.speedup_ceiling),
        measured=True,
        evidence=tuple(line for line in v.evidence if line.startswith("num_workers sweep")),
    )


def more_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """More DataLoader workers, when loading is the limit and there is room for them (an
    estimate: when a sweep ran, ``measured_workers`` speaks instead)."""
    workers, cores, real = f.num_workers, f.cpu_count, f.real
    if f.sweep is not None:
        return None
    if not _input_bound(v) or workers is None or real is None:
        return None
    if v.bottleneck is Bottleneck.IO:
        target = max(th.IO_WORKERS_SUGGESTED, 2 * workers)
        why = "loading waits on latency, so more loads in flight hide it; this holds past the core count"
    else:
        saturated = real.system_cpu_busy_fraction is not None and real.system_cpu_busy_fraction >= th.CPU_SATURATED
        if cores is None or saturated or workers >= cores:
            return None
        target = min(cores, th.CPU_WORKERS_CAP) if workers else max(1, min(cores - 1, th.CPU_WORKERS_CAP))
        if target <= workers:
            return None
        why = f"loading is CPU work and the {cores} cores are not all busy"
    gain = target / workers if workers else _gain_from_moving_loading(real, target)
    if gain is None:
        return None
    snippet = f"DataLoader(dataset, ..., num_workers={target}, persistent_workers=True)"
    return Recommendation(
        id="increase-num-workers",
        title=f"Use num_workers={target} (now {workers})",
        detail=f"{why[0].upper()}{why[1:]}. Change the loader to:\n    {snippet}\n"
        "The gain is an estimate (up to the speedup ceiling); `fastload sweep-workers` measures it.",
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=tuple(line for line in v.evidence if "worker" in line or "main process" in line or "CPUs" in line),
    )


def _gain_from_moving_loading(real: RunSummary, workers: int) -> float | None:
    """num_workers=0 -> N: the main thread loads during the wait; workers would load beside the
    step, so a step takes max(compute, load / N) instead of compute + load."""
    if real.throughput_batches_per_s is None or real.data_wait_fraction is None:
        return None
    step_s = 1.0 / real.throughput_batches_per_s
    load_s = real.data_wait_fraction * step_s
    if load_s * 1000 < th.WORKER_HANDOFF_MS:
        return None  # handing batches over between processes would cost more than loading them
    return step_s / max(step_s - load_s, load_s / workers)


def cheaper_augmentation(f: Facts, v: Verdict) -> Recommendation | None:
    """Make augmentation cheaper, when turning it off was measured to be much faster."""
    aug = f.aug_speedup
    if aug is None or aug < th.AUG_SPEEDUP_SIGNIFICANT or not _input_bound(v):
        return None
    names = ", ".join(dict.fromkeys(s.split("(")[0] for s in f.substituted)) or "the random transforms"
    return Recommendation(
        id="reduce-augmentation-cost",
        title=f"Make augmentation cheaper: it costs up to {aug:.1f}x throughput",
        detail=(
            f"Measured: with {names} replaced by deterministic stand-ins, throughput rose {aug:.1f}x. "
            "Apply the expensive transforms to uint8 tensors rather than PIL images or float tensors "
            "(torchvision.transforms.v2), crop before colour and blur operations, or run augmentation "
            "on the GPU (torchvision.transforms.v2 on CUDA tensors, Kornia, NVIDIA DALI)."
        ),
        expected_speedup=bounded(aug, v.speedup_ceiling),
        measured=True,
        evidence=tuple(line for line in v.evidence if "no-aug" in line),
    )


def cheaper_samples(f: Facts, v: Verdict) -> Recommendation | None:
    """When all cores are busy loading, only cheaper samples help."""
    real = f.real
    if v.bottleneck is not Bottleneck.CPU or real is None or real.system_cpu_busy_fraction is None:
        return None
    if real.system_cpu_busy_fraction < th.CPU_SATURATED:
        return None
    return Recommendation(
        id="cores-saturated",
        title="All cores are busy: make each sample cheaper to load",
        detail=(
            f"The CPUs were {pct(real.system_cpu_busy_fraction)} busy, so more workers will not help. "
            "Decode at the size you train at (pre-resize images offline), cache decoded samples in RAM "
            "when they fit, and move augmentation to the GPU."
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
        evidence=tuple(line for line in v.evidence if "busy" in line),
    )


def hide_storage_latency(f: Facts, v: Verdict) -> Recommendation | None:
    """IO-bound: move the data closer, or read it in fewer, larger pieces."""
    if v.bottleneck is not Bottleneck.IO:
        return None
    return Recommendation(
        id="faster-storage",
        title="Read from faster storage, or in fewer, larger reads",
        detail=(
            "Loading waits on storage or network latency. Copy the dataset to local disk or a RAM "
            "disk (/dev/shm) before training, cache samples in RAM when the dataset fits, or pack "
            "small files into record files (WebDataset shards, LMDB) read sequentially."
        ),
        expected_speedup=bounded(v.speedup_ceiling, v.speedup_ceiling),
        measured=False,
        evidence=tuple(line for line in v.evidence if "storage" in line or "latency" in line),
    )


def step_is_the_limit(f: Facts, v: Verdict) -> Recommendation | None:
    """Compute- or host-bound: say plainly that input work will not help."""
    if v.bottleneck not in (Bottleneck.COMPUTE, Bottleneck.HOST):
        return None
    if f.cuda_in_use:
        hints = (
            "mixed precision (torch.autocast with bfloat16), channels_last for convolutions, a larger "
            "batch, torch.compile, and CUDA graphs when kernels are small"
        )
    else:
        hints = "a smaller or cheaper model, a larger batch, torch.compile, or training on a GPU"
    return Recommendation(
        id="step-is-the-limit",
        title="The training step is the limit: faster data loading will not help",
        detail=(
            "Measured: a free input pipeline changes throughput by at most the ceiling. "
            f"What usually helps (not measured here): {hints}."
        ),
        expected_speedup=bounded(1.0, v.speedup_ceiling),
        measured=v.speedup_ceiling is not None,
        evidence=tuple(line for line in v.evidence if "synthetic" in line or "waited" in line),
    )


RULES: tuple[Rule, ...] = (
    measured_workers,
    cheaper_augmentation,
    more_workers,
    cheaper_samples,
    hide_storage_latency,
    step_is_the_limit,
)


def recommend(f: Facts, v: Verdict) -> tuple[Recommendation, ...]:
    """Every rule that fires: a num_workers setting a sweep measured first (a one-line change with a
    measured gain), then measured ones, then by expected gain."""
    found = [rec for rule in RULES if (rec := rule(f, v)) is not None]
    swept = {"increase-num-workers", "reduce-num-workers"} if f.sweep is not None else set()
    return tuple(sorted(found, key=lambda r: (r.id not in swept, not r.measured, -(r.expected_speedup or 0.0))))
