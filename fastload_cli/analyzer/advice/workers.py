"""How many workers, and how they hand batches over: the setting a sweep measured, more
workers where they are busy and cores are free, none for a dataset already in memory, whole
batches indexed at once, workers kept across epochs, a deeper prefetch."""

from __future__ import annotations

from fastload_cli.analyzer import noise, search
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice.shared import (
    LOADER_ACTIVITY,
    WHERE,
    bounded,
    capped,
    cited,
    input_bound,
    loader_change,
    pipeline_bound,
    variant_settings,
)
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import capitalised, pct, size
from fastload_cli.records import Bottleneck, FindingKind, Recommendation, RunSummary, Verdict


def measured_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """The num_workers setting a sweep measured to be faster than the script's own."""
    s = f.sweep
    if s is None or not s.significant or s.recommended_workers is None or s.current_workers is None:
        return None
    if s.speedup is None:
        return None
    n, now = s.recommended_workers, s.current_workers
    extra = f", {s.recommended_variant.replace(',', ', ')}" if s.recommended_variant else ""
    cost = s.memory_cost_bytes
    weighed = f", for {size(cost)} more memory" if cost is not None and cost >= th.SWEEP_WEIGHED_MEMORY else ""
    persistent = [("persistent_workers", True)] if n > 0 else []
    snippet = loader_change(f.loader, [("num_workers", n), *persistent, *variant_settings(s.recommended_variant)])
    promised = max(1.0, search.promised(s))
    gain = capped(promised, v.speedup_ceiling)
    held = (
        f" Held to the speedup ceiling, the gain given is {gain:.2f}x: free inputs (synthetic) trained only that "
        "much faster than the real run."
        if gain is not None and round(gain, 2) < round(promised, 2)
        else ""
    )
    return Recommendation(
        id="increase-num-workers" if n > now else "reduce-num-workers",
        title=f"Use num_workers={n}{extra} (now {now}){weighed}",
        detail=(
            f"{search.conclusion(s)}{held} A sweep under the real training step measured it (memory as "
            f"process-tree RSS). {search.returns(s)} Change it to:\n    {snippet}"
        ),
        expected_speedup=gain,
        measured=True,
        evidence=cited(v, FindingKind.SWEEP),
        num_workers=n,
    )


def more_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """More DataLoader workers, when loading is the limit and there is room for them (an
    estimate: when a sweep ran, ``measured_workers`` speaks instead)."""
    workers, cores, real = f.num_workers, f.cores_per_rank, f.real
    if f.sweep is not None:
        return None
    if not pipeline_bound(f, v) or workers is None or real is None or f.cores_saturated:
        return None  # with every core busy, more workers only share them (the notes say so too)
    if v.bottleneck is Bottleneck.IO:
        target = max(th.IO_WORKERS_SUGGESTED, 2 * workers)
        why = "loading waits on latency, so more loads in flight hide it; this holds past the core count"
    else:
        if cores is None or workers >= cores:
            return None
        target = min(cores, th.CPU_WORKERS_CAP) if workers else max(1, min(cores - 1, th.CPU_WORKERS_CAP))
        if target <= workers:
            return None
        why = f"loading is CPU work and the {cores} cores are not all busy"
        if f.ranks_per_node > 1:
            why = (
                f"loading is CPU work and the node's cores are not all busy; its {f.cpu_count} cores are shared by "
                f"{f.ranks_per_node} ranks, so each rank's loaders have {cores}"
            )
    gain = target / workers if workers else _gain_from_moving_loading(real, target)
    if gain is None:
        return None
    snippet = loader_change(f.loader, [("num_workers", target), ("persistent_workers", True)])
    return Recommendation(
        id="increase-num-workers",
        title=f"Use num_workers={target} (now {workers})",
        detail=f"{capitalised(why)}. Change it to:\n    {snippet}\n"
        "The gain is an estimate (up to the speedup ceiling); `fastload sweep-workers` measures it.",
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=cited(v, *LOADER_ACTIVITY, FindingKind.CORES_FREE, FindingKind.MACHINE_CPU),
        num_workers=target,
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


def in_memory_without_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """Workers for batches cheaper to build than to hand over: every batch crosses processes for
    nothing."""
    loader, why = f.loader, f.cheap_batches
    if loader is None or why is None or f.sweep is not None:
        return None
    return Recommendation(
        id="workers-are-overhead",
        title=f"Load in the main process: num_workers=0 (now {loader.num_workers})",
        detail=(
            f"{capitalised(why)}. Each worker batch is pickled, passed through shared memory and "
            "unpickled, which costs more than building it. Change it to:\n"
            f"    {loader_change(loader, [('num_workers', 0)])}\n"
            "`fastload sweep-workers` measures both settings under your training step."
        ),
        expected_speedup=None,
        measured=False,
        evidence=(f"Dataset type: {loader.dataset_type}; num_workers={loader.num_workers}.",),
    )


def whole_batches(f: Facts, v: Verdict) -> Recommendation | None:
    """A TensorDataset indexed a sample at a time: each batch is built by one lookup per sample and
    a stack, where one indexing with the batch's indices gives the same batch. Whatever num_workers
    the sweep chose, the per-sample work stays; this removes it."""
    loader = f.loader
    if loader is None or loader.dataset_type != "TensorDataset" or not input_bound(v) or not loader.batch_size:
        return None
    if loader.framework in ("transformers", "timm"):
        return None  # the framework builds the loader; its own options decide how batches are drawn
    sampler = f"BatchSampler(RandomSampler(dataset), batch_size={loader.batch_size}, drop_last=False)"
    return Recommendation(
        id="index-whole-batches",
        title="Index whole batches of the in-memory tensors, not one sample at a time",
        detail=(
            f"The dataset is a TensorDataset: each batch of {loader.batch_size} is built by "
            f"{loader.batch_size} separate lookups and a torch.stack, where indexing the tensors with the "
            "batch's indices gives the same batch in one operation, in the main process. Change it to:\n"
            f"    DataLoader(dataset, batch_size=None, sampler={sampler}, num_workers=0)"
            f"{WHERE.get(loader.framework or '', '')}\n"
            "(SequentialSampler in place of RandomSampler when the loader does not shuffle). The gain is "
            "an estimate, up to the speedup ceiling."
        ),
        # A ceiling inside the noise says nothing of this cost (the verdict rests on the handoff, which
        # the comparison with free inputs barely resolves): the gain is then unknown, not none.
        expected_speedup=v.speedup_ceiling if noise.beyond(v.speedup_ceiling, f.noise) else None,
        measured=False,
        evidence=(f"Dataset type: TensorDataset; batch_size={loader.batch_size}.", *cited(v, FindingKind.CEILING)),
    )


def persistent_workers(f: Facts, v: Verdict) -> Recommendation | None:
    """Workers restarted every epoch, at a measurable cost; not where a sweep's setting is advised
    (``measured_workers``): its change sets persistent_workers=True (or needs no workers), and a
    second change of the same loader, at the script's own num_workers, would contradict it."""
    if measured_workers(f, v) is not None:
        return None
    startup, epoch_s, overhead = f.startup_s, f.epoch_s, f.epoch_overhead_s
    if f.loader is None or startup is None or epoch_s is None or startup < th.STARTUP_NOTABLE_SHARE * epoch_s:
        return None
    assert overhead is not None  # the start-up at least
    # Where the start-up is the verdict's cause, its finding (the evidence) gives these figures already.
    cost = (
        "Without persistent workers every epoch pays its workers' start-up again."
        if f.restarts_dominate
        else f"Starting the {f.loader.num_workers} workers took {startup:.2f} s per epoch (measured), "
        f"{pct(startup / epoch_s)} of an epoch's {epoch_s:.2f} s of steps; without persistent workers every "
        "epoch pays it again."
    )
    return Recommendation(
        id="persistent-workers",
        title="Keep the workers between epochs: persistent_workers=True",
        detail=(
            f"{cost} Change it to:\n"
            f"    {loader_change(f.loader, [('num_workers', f.loader.num_workers), ('persistent_workers', True)])}"
        ),
        # Not capped by the speedup ceiling: the steady-state runs it comes from leave start-up out.
        # What an epoch costs besides its start-up and steps (its drain, the script's work between
        # epochs) stays.
        expected_speedup=(epoch_s + overhead) / (epoch_s + max(0.0, overhead - startup)),
        measured=False,
        evidence=(f"Worker start-up per epoch: {startup:.2f} s over {len(f.epoch_startup_s)} epoch(s).",),
    )


def larger_prefetch(f: Facts, v: Verdict) -> Recommendation | None:
    """Spiky waits while the workers idle: a deeper queue smooths them. Not where the spikes recur
    once a round of the workers' batches (``waits_in_lockstep``): workers that wait on latency
    together and fall short of the step every round never get ahead to fill a deeper queue; more
    of them do. Nor where a sweep's setting is advised (``measured_workers``): its change sets
    num_workers, and a deeper queue at the script's own would contradict it."""
    loader, real, p50, p90 = f.loader, f.real, f.wait_ms_p50, f.wait_ms_p90
    if loader is None or loader.num_workers == 0 or real is None or p50 is None or p90 is None:
        return None
    if measured_workers(f, v) is not None:
        return None
    if f.waits_in_lockstep:
        return None
    busy = real.loader_busy_fraction
    if busy is None or busy > th.LOADER_IDLE or p90 < th.WAIT_SPIKE_MIN_MS or p90 < th.WAIT_SPIKY_RATIO * max(p50, 0.1):
        return None
    if not real.throughput_batches_per_s or real.data_wait_fraction is None:
        return None
    step_ms = 1000 / real.throughput_batches_per_s
    if p90 - p50 < th.WAIT_SPIKE_STEP_SHARE * step_ms:
        return None  # spikes of a few ms beside a step of a second are noise, however spiky they look
    factor = 2 * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR)
    spikes_ms = max(0.0, real.data_wait_fraction * step_ms - p50)
    gain = step_ms / (step_ms - spikes_ms) if spikes_ms < step_ms else None
    return Recommendation(
        id="larger-prefetch-factor",
        title=f"Prefetch deeper: prefetch_factor={factor}",
        detail=(
            f"Waits are spiky (median {p50:.1f} ms, 90th percentile {p90:.1f} ms) while the workers are busy only "
            f"{pct(busy)} of the time: they can keep more batches ready. Change it to:\n"
            f"    {loader_change(loader, [('num_workers', loader.num_workers), ('prefetch_factor', factor)])}\n"
            "`fastload sweep-workers --prefetch-factor 2,4,8` measures it."
        ),
        expected_speedup=bounded(gain, v.speedup_ceiling),
        measured=False,
        evidence=(f"Wait per step: median {p50:.1f} ms, p90 {p90:.1f} ms; workers busy {pct(busy)}.",),
    )
