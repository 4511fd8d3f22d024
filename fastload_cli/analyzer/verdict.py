"""The verdict: is the input pipeline the limit, and if so, why. Pure functions of ``Facts``.

1. Input-bound when the real run's data wait is high or the speedup ceiling is large;
   compute-bound when both are small; in between, a hedged verdict.
2. Why: augmentation when turning it off (``no-aug``) is much faster; otherwise the loading
   processes' CPU use: busy on (or queued for) a CPU means CPU work, mostly asleep while the loop
   waits means storage or latency.
3. Compute-bound on CUDA with the GPU mostly idle even with free inputs means the host loop.

Every evidence line quotes the number it rests on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.records import BatchInfo, Bottleneck, Breakdown, LoaderInfo, RunSummary, SweepResult, Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What the verdict and the recommendations are decided from."""

    real: RunSummary | None
    synthetic: RunSummary | None = None
    no_aug: RunSummary | None = None
    loader: LoaderInfo | None = None  # the training loader, as the real run saw it
    cpu_count: int | None = None
    cuda_in_use: bool = False
    augmentations: tuple[str, ...] = ()
    substituted: tuple[str, ...] = ()  # what no-aug actually replaced
    disturbed: bool = False  # other processes took a large share of the CPU during a compared run
    sweep: SweepResult | None = None  # a num_workers sweep, when one ran
    breakdown: Breakdown | None = None  # where a sample's loading time goes, when it was timed
    batch: BatchInfo | None = None  # the training loader's first batch
    epoch_startup_s: tuple[float, ...] = ()  # real run: iter() to first batch, for each epoch
    wait_ms_p50: float | None = None  # real run: the loop's wait per step, median
    wait_ms_p90: float | None = None
    memory_available_bytes: int | None = None  # free memory when the real run started

    @property
    def ceiling(self) -> float | None:
        return speedup(self.synthetic, self.real)

    @property
    def aug_speedup(self) -> float | None:
        return speedup(self.no_aug, self.real)

    @property
    def contention(self) -> float | None:
        """How much slower the step itself ran beside the real input pipeline than with free inputs."""
        if self.real is None or self.synthetic is None:
            return None
        a, b = self.real.compute_ms_p50, self.synthetic.compute_ms_p50
        return a / b if a is not None and b else None

    @property
    def concurrent_loading(self) -> bool:
        """Loading runs beside the step (workers, a pin-memory thread), so it can slow the step.

        Without it (num_workers=0, no pinning) loading happens only inside the wait, and a slower
        step in the real run cannot be the input pipeline's doing.
        """
        return self.loader is not None and (self.loader.num_workers > 0 or self.loader.pin_memory)

    @property
    def contended(self) -> bool:
        c = self.contention
        return self.concurrent_loading and c is not None and c >= th.CONTENTION_SIGNIFICANT

    @property
    def num_workers(self) -> int | None:
        return self.loader.num_workers if self.loader is not None else None


@dataclass(frozen=True, slots=True)
class Cause:
    bottleneck: Bottleneck
    label: str
    evidence: tuple[str, ...]
    certain: bool


def speedup(faster: RunSummary | None, base: RunSummary | None) -> float | None:
    if faster is None or base is None:
        return None
    a, b = faster.throughput_samples_per_s, base.throughput_samples_per_s
    return a / b if a is not None and b else None


def pct(fraction: float) -> str:
    return f"{100 * fraction:.0f}%"


def rate(summary: RunSummary) -> str:
    value = summary.throughput_samples_per_s
    return "n/a" if value is None else f"{value:,.0f} samples/s" if value >= 100 else f"{value:.1f} samples/s"


# --------------------------------------------------------------------------------------------
# Step 1: input-bound or not
# --------------------------------------------------------------------------------------------


def decide(f: Facts, caveats: tuple[str, ...] = ()) -> Verdict:
    verdict = _decide(f, caveats)
    if f.disturbed:
        return replace(verdict, confidence=round(verdict.confidence * th.CONFIDENCE_DISTURBED, 2))
    return verdict


def _decide(f: Facts, caveats: tuple[str, ...]) -> Verdict:
    real = f.real
    if real is None or real.data_wait_fraction is None or real.throughput_samples_per_s is None:
        return Verdict(
            bottleneck=Bottleneck.INCONCLUSIVE,
            label="Inconclusive: no steady-state batches were measured",
            confidence=0.0,
            speedup_ceiling=f.ceiling,
            evidence=(),
            caveats=caveats or ("the real run delivered too few batches to measure",),
        )
    wait, ceiling = real.data_wait_fraction, f.ceiling
    evidence = [_wait_line(real), *_ceiling_lines(f)]
    wait_high, wait_low = wait >= th.WAIT_INPUT_BOUND, wait < th.WAIT_COMPUTE_BOUND
    ceiling_high = ceiling is not None and ceiling >= th.CEILING_INPUT_BOUND
    ceiling_low = ceiling is not None and ceiling < th.CEILING_COMPUTE_BOUND
    if f.contended and ceiling_high:
        evidence.append(_contention_line(f))
    if wait_high or ceiling_high:
        agree = ceiling_high and (wait_high or f.contended)
        contradicted = (wait_high and ceiling_low) or (ceiling_high and wait_low and not f.contended)
        confidence = (
            th.CONFIDENCE_HEDGED if contradicted else th.CONFIDENCE_STRONG if agree else th.CONFIDENCE_ONE_SIGNAL
        )
        return _input_bound(f, evidence, confidence, caveats, partly=False)
    if wait_low and (ceiling is None or ceiling_low or not f.contended):
        if ceiling is not None and not ceiling_low:
            evidence.append(_unexplained_ceiling_line(f))
        confidence = th.CONFIDENCE_STRONG if ceiling_low else th.CONFIDENCE_ONE_SIGNAL
        return _compute_bound(f, evidence, confidence, caveats)
    evidence.append("Both the step and the input pipeline cost time: neither signal is clear-cut.")
    return _input_bound(f, evidence, th.CONFIDENCE_HEDGED, caveats, partly=True)


def _wait_line(real: RunSummary) -> str:
    assert real.data_wait_fraction is not None
    return (
        f"The training loop waited for data {pct(real.data_wait_fraction)} of the time in the real run "
        f"({real.batches} steady-state batches, {rate(real)})."
    )


def _ceiling_lines(f: Facts) -> list[str]:
    ceiling = f.ceiling
    if ceiling is None or f.real is None or f.synthetic is None:
        return []
    if ceiling < th.CEILING_COMPUTE_BOUND:
        return [
            f"Replaying one cached batch (synthetic) changed throughput only {ceiling:.2f}x "
            f"({rate(f.real)} -> {rate(f.synthetic)}): a free input pipeline would not help."
        ]
    return [
        f"Replaying one cached batch (synthetic) raised throughput {ceiling:.1f}x "
        f"({rate(f.real)} -> {rate(f.synthetic)}): that is the most any input-pipeline fix can give."
    ]


def _contention_line(f: Facts) -> str:
    assert f.real is not None and f.synthetic is not None and f.contention is not None
    return (
        f"Outside the data wait, a step took {f.real.compute_ms_p50:.0f} ms in the real run but "
        f"{f.synthetic.compute_ms_p50:.0f} ms with free inputs ({f.contention:.1f}x): loading takes CPU "
        "from the training step itself, so the wait alone understates its cost."
    )


def _unexplained_ceiling_line(f: Facts) -> str:
    assert f.real is not None and f.real.data_wait_fraction is not None and f.ceiling is not None
    beside = "nothing loads beside the step" if not f.concurrent_loading else "the step did not slow beside the loaders"
    return (
        f"The {f.ceiling:.2f}x between synthetic and real is not explained by the input pipeline: the loop "
        f"waited only {pct(f.real.data_wait_fraction)} and {beside}. It is run-to-run noise."
    )


def _compute_bound(f: Facts, evidence: list[str], confidence: float, caveats: tuple[str, ...]) -> Verdict:
    gpu = f.synthetic.gpu_util_percent if f.synthetic is not None else None
    if f.cuda_in_use and gpu is not None and gpu < th.GPU_BUSY_LOW_PERCENT:
        evidence.append(
            f"Even with free inputs the GPU was busy only {gpu:.0f}% of the time: the loop's own Python "
            "and kernel-launch overhead is the limit."
        )
        return Verdict(
            bottleneck=Bottleneck.HOST,
            label="Host-bound: the training loop's own overhead starves the GPU",
            confidence=confidence,
            speedup_ceiling=f.ceiling,
            evidence=tuple(evidence),
            caveats=caveats,
            augmentation_speedup=f.aug_speedup,
        )
    where = "GPU" if f.cuda_in_use else "model's CPU compute"
    label = f"Compute-bound: the training step ({where}) is the limit"
    return Verdict(
        bottleneck=Bottleneck.COMPUTE,
        label=label,
        confidence=confidence,
        speedup_ceiling=f.ceiling,
        evidence=tuple(evidence),
        caveats=caveats,
        augmentation_speedup=f.aug_speedup,
    )


def _input_bound(
    f: Facts, evidence: list[str], confidence: float, caveats: tuple[str, ...], *, partly: bool
) -> Verdict:
    cause = find_cause(f)
    evidence.extend(cause.evidence)
    if not cause.certain:
        confidence *= th.CONFIDENCE_CAUSE_UNCLEAR
    label = f"Partly input-bound: {cause.label}" if partly else cause.label
    return Verdict(
        bottleneck=cause.bottleneck,
        label=label,
        confidence=round(confidence, 2),
        speedup_ceiling=f.ceiling,
        evidence=tuple(evidence),
        caveats=caveats,
        augmentation_speedup=f.aug_speedup,
    )


# --------------------------------------------------------------------------------------------
# Step 2: why
# --------------------------------------------------------------------------------------------


def find_cause(f: Facts) -> Cause:
    assert f.real is not None
    aug = f.aug_speedup
    if aug is not None and aug >= th.AUG_SPEEDUP_SIGNIFICANT and f.no_aug is not None:
        line = (
            f"With random augmentation replaced by deterministic stand-ins (no-aug), throughput rose "
            f"{aug:.1f}x ({rate(f.real)} -> {rate(f.no_aug)})."
        )
        return Cause(Bottleneck.CPU, "CPU-bound input pipeline (augmentation)", (line, *_saturation(f)), True)
    evidence = [_no_aug_line(f)] if aug is not None else []
    busy = f.real.loader_busy_fraction
    system = f.real.system_cpu_busy_fraction
    who = _loaders(f)
    if busy is None:
        return _cause_without_busy(f, evidence)
    if busy >= th.LOADER_BUSY or (busy > th.LOADER_IDLE and system is not None and system >= th.CPU_SATURATED):
        evidence.append(f"{who} on a CPU, or waiting for one, {pct(busy)} of the time: loading is CPU work.")
        return Cause(Bottleneck.CPU, _cpu_label(f), (*evidence, *_saturation(f)), busy >= th.LOADER_BUSY)
    if busy <= th.LOADER_IDLE:
        evidence.append(
            f"{who} on a CPU only {pct(busy)} of the time: loading waits on storage or other latency, not computation."
        )
        return Cause(Bottleneck.IO, "IO-bound input pipeline (storage or latency)", (*evidence, *_io_lines(f)), True)
    evidence.append(f"{who} on a CPU {pct(busy)} of the time: partly computing, partly waiting.")
    closer_to_busy = busy >= (th.LOADER_BUSY + th.LOADER_IDLE) / 2
    if closer_to_busy:
        return Cause(Bottleneck.CPU, _cpu_label(f), tuple(evidence), False)
    return Cause(Bottleneck.IO, "IO-bound input pipeline (storage or latency)", (*evidence, *_io_lines(f)), False)


def _cause_without_busy(f: Facts, evidence: list[str]) -> Cause:
    assert f.real is not None
    iowait = f.real.iowait_fraction
    if iowait is not None and iowait >= th.IOWAIT_NOTABLE:
        evidence.append(f"The machine spent {pct(iowait)} of its CPU time in iowait: storage stalls.")
        return Cause(Bottleneck.IO, "IO-bound input pipeline (storage)", tuple(evidence), False)
    evidence.append("The loading processes' CPU use could not be measured, so the cause is not known.")
    return Cause(
        Bottleneck.INCONCLUSIVE, "Input-bound; the cause (CPU or IO) could not be measured", tuple(evidence), False
    )


def _no_aug_line(f: Facts) -> str:
    assert f.aug_speedup is not None
    return (
        f"Turning random augmentation off (no-aug) changed throughput only {f.aug_speedup:.2f}x: "
        "it is not the main cost."
    )


def _loaders(f: Facts) -> str:
    """The loading processes as the subject of a sentence, with its verb."""
    workers = f.num_workers
    if workers == 0:
        return "Loading batches itself (num_workers=0), the main process was"
    if workers is None:
        return "The loading processes were"
    if workers == 1:
        return "The DataLoader worker was"
    return f"The {workers} DataLoader workers were"


def _cpu_label(f: Facts) -> str:
    if f.num_workers == 0:
        return "CPU-bound input pipeline (loading in the main process)"
    return "CPU-bound input pipeline (decode/collate)"


def _saturation(f: Facts) -> tuple[str, ...]:
    assert f.real is not None
    system = f.real.system_cpu_busy_fraction
    if system is None:
        return ()
    cores = f" ({f.cpu_count})" if f.cpu_count else ""
    if system >= th.CPU_SATURATED:
        return (
            f"All cores{cores} were busy ({pct(system)} of CPU time): more workers cannot help; "
            "each sample must get cheaper.",
        )
    return (f"The CPUs{cores} were {pct(system)} busy: there is room for more parallel loading.",)


def _io_lines(f: Facts) -> tuple[str, ...]:
    assert f.real is not None
    lines = []
    if f.real.system_cpu_busy_fraction is not None:
        lines.append(f"The machine's CPUs were only {pct(f.real.system_cpu_busy_fraction)} busy.")
    if f.real.iowait_fraction is not None and f.real.iowait_fraction >= th.IOWAIT_NOTABLE:
        lines.append(f"{pct(f.real.iowait_fraction)} of CPU time was iowait: storage stalls.")
    if f.real.read_bytes_per_s is not None and f.real.read_bytes_per_s >= th.READ_RATE_NOTABLE:
        lines.append(f"The run read {f.real.read_bytes_per_s / 1e6:.1f} MB/s from storage.")
    return tuple(lines)


# --------------------------------------------------------------------------------------------
# The ceiling, read in a paragraph
# --------------------------------------------------------------------------------------------


def read_ceiling(f: Facts, v: Verdict) -> str:
    """One paragraph on what the real/synthetic (and no-aug) comparison says."""
    ceiling, real, synthetic = f.ceiling, f.real, f.synthetic
    if ceiling is None or real is None or synthetic is None:
        return (
            "The speedup ceiling could not be measured (see the caveats), so this comparison cannot say "
            "how much a faster input pipeline would help."
        )
    rates = f"({rate(real)} real, {rate(synthetic)} with one cached batch replayed)"
    if ceiling >= th.CEILING_INPUT_BOUND:
        text = (
            f"A free input pipeline would make training {ceiling:.1f}x faster {rates}: the input pipeline "
            "is the bottleneck."
        )
    elif ceiling < th.CEILING_COMPUTE_BOUND:
        text = (
            f"Within noise: a free input pipeline changes throughput {ceiling:.2f}x {rates}. The step is the "
            "bottleneck; faster loading will not help."
        )
    else:
        text = (
            f"A free input pipeline would make training {ceiling:.2f}x faster {rates}: loading costs some time, "
            "but most of each step is the step itself."
        )
    aug, no_aug = f.aug_speedup, f.no_aug
    if aug is not None and no_aug is not None and ceiling > 1 and real.throughput_samples_per_s:
        share = (aug - 1) / (ceiling - 1)
        text += (
            f" Without random augmentation it runs {aug:.2f}x faster ({rate(no_aug)}): augmentation accounts for "
            f"about {pct(max(0.0, min(1.0, share)))} of that gap, and reading, decoding and collating for the rest."
        )
    if v.confidence < th.CONFIDENCE_ONE_SIGNAL:
        text += " The runs disagree in part; see the caveats before acting on this."
    return text
