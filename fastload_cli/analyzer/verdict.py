"""The verdict: is the input pipeline the limit, and if so, why. Pure functions of ``Facts``.

1. Input-bound when the real run's data wait is high or the speedup ceiling is large;
   compute-bound when both are small; a hedged verdict when the ceiling lands in between.
   Workers started again every epoch for a large share of the time decide it before that: the
   steady-state numbers leave start-up out.
2. Why: augmentation when turning it off (``no-aug``) is much faster; otherwise the loading
   processes' CPU use: busy on (or queued for) a CPU means CPU work, mostly asleep while the loop
   waits means storage or latency.
3. Compute-bound on CUDA with the GPU mostly idle even with free inputs means the host loop.

Every evidence line quotes the number it rests on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.formatting import capitalised, pct, samples_rate
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
    startup_busy: float | None = None  # real run: the workers' CPU share during those start-ups
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
    def loaders_cost_the_step(self) -> bool:
        """The loaders measurably slow the step, or are known to: workers handing over batches
        cheaper to build than to hand over cost the step CPU by construction."""
        return self.contended or (self.cheap_batches is not None and self.concurrent_loading)

    @property
    def sweep_confirms_input(self) -> bool:
        """A sweep measured a num_workers setting much faster than the script's own."""
        found = self.sweep
        return (
            found is not None
            and found.significant
            and found.speedup is not None
            and found.speedup >= th.SWEEP_CONFIRMS_INPUT
        )

    @property
    def num_workers(self) -> int | None:
        return self.loader.num_workers if self.loader is not None else None

    @property
    def startup_s(self) -> float | None:
        """The median epoch's start-up, when the workers start again every epoch."""
        loader, starts = self.loader, sorted(self.epoch_startup_s)
        if loader is None or loader.num_workers == 0 or loader.persistent_workers or not starts:
            return None
        return starts[len(starts) // 2]

    @property
    def epoch_s(self) -> float | None:
        """One epoch's steps at the real run's steady throughput, start-up left out."""
        loader, real = self.loader, self.real
        if loader is None or real is None or loader.dataset_len is None or not loader.batch_size:
            return None
        rate = real.throughput_batches_per_s
        return (loader.dataset_len / loader.batch_size) / rate if rate else None

    @property
    def restart_share(self) -> float | None:
        """The share of training time spent starting the workers again, every epoch."""
        startup, epoch = self.startup_s, self.epoch_s
        return startup / (startup + epoch) if startup is not None and epoch is not None else None

    @property
    def restarts_dominate(self) -> bool:
        """Worker start-up, measured in more than one epoch, takes an input-bound share of the time."""
        share = self.restart_share
        return (
            share is not None and share >= th.RESTART_INPUT_BOUND and len(self.epoch_startup_s) >= th.RESTART_MIN_EPOCHS
        )

    @property
    def cheap_batches(self) -> str | None:
        """Why the workers' batches cost less to build than to hand over, or None.

        A dataset of tensors already in memory, or a batch the breakdown timed under the handoff's
        cost: a worker only adds pickling, shared memory and unpickling to it.
        """
        loader = self.loader
        if loader is None or loader.num_workers == 0:
            return None
        if loader.dataset_type in th.IN_MEMORY_DATASETS:
            return f"the dataset is a {loader.dataset_type}: its items are slices of tensors already in memory"
        breakdown = self.breakdown
        if breakdown is not None and breakdown.ms_per_sample is not None and loader.batch_size:
            per_batch_ms = breakdown.ms_per_sample * loader.batch_size
            if per_batch_ms < th.WORKER_HANDOFF_MS:
                return (
                    f"a batch takes {per_batch_ms:.2f} ms to load (measured), less than handing it over from a worker"
                )
        return None


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


def _rate(summary: RunSummary) -> str:
    return samples_rate(summary.throughput_samples_per_s)


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
    if f.restarts_dominate:
        return _restart_bound(f, caveats)
    wait, ceiling = real.data_wait_fraction, f.ceiling
    evidence = [_wait_line(real), *_ceiling_lines(f)]
    wait_high, wait_low = wait >= th.WAIT_INPUT_BOUND, wait < th.WAIT_COMPUTE_BOUND
    ceiling_high = ceiling is not None and ceiling >= th.CEILING_INPUT_BOUND
    ceiling_low = ceiling is not None and ceiling < th.CEILING_COMPUTE_BOUND
    if f.contended and ceiling_high:
        evidence.append(_contention_line(f))
    if f.sweep_confirms_input and not (wait_low and ceiling_low):
        return _input_bound(f, evidence, th.CONFIDENCE_STRONG, caveats, partly=False)
    in_between = ceiling is not None and not ceiling_high and not ceiling_low
    if in_between and not wait_low and wait < th.WAIT_CLEARLY_INPUT:
        # The counterfactual was run and lands in between, and the loop waited less than a 1.5x
        # ceiling implies: loading costs some of the time and the step the rest.
        evidence.append(_partly_line(f))
        return _input_bound(f, evidence, _partly_confidence(f), caveats, partly=True)
    if wait_high or ceiling_high:
        agree = ceiling_high and (wait_high or f.contended)
        contradicted = (wait_high and ceiling_low) or (ceiling_high and wait_low and not f.contended)
        confidence = (
            th.CONFIDENCE_HEDGED if contradicted else th.CONFIDENCE_STRONG if agree else th.CONFIDENCE_ONE_SIGNAL
        )
        return _input_bound(f, evidence, confidence, caveats, partly=False)
    if wait_low and (ceiling is None or ceiling_low or not f.loaders_cost_the_step):
        if ceiling is not None and not ceiling_low:
            evidence.append(_unexplained_ceiling_line(f))
        confidence = th.CONFIDENCE_STRONG if ceiling_low else th.CONFIDENCE_ONE_SIGNAL
        return _compute_bound(f, evidence, confidence, caveats)
    evidence.append("Both the step and the input pipeline cost time: neither signal is clear-cut.")
    return _input_bound(f, evidence, _partly_confidence(f), caveats, partly=True)


def _in_sentence(label: str) -> str:
    """A label continued after a colon: an ordinary first word in lower case, acronyms kept."""
    return label[0].lower() + label[1:] if label[1:2].islower() else label


def _partly_confidence(f: Facts) -> float:
    """Hedged, unless the cause is known from the loader's structure: workers handing over batches
    cheaper to build than to hand over cost time by construction, and the ceiling measured how much."""
    return th.CONFIDENCE_ONE_SIGNAL if f.cheap_batches is not None else th.CONFIDENCE_HEDGED


def _partly_line(f: Facts) -> str:
    assert f.ceiling is not None
    return (
        f"A free input pipeline would gain {f.ceiling:.2f}x: loading and the step cost about the same, so "
        "neither is clearly the limit."
    )


def _restart_bound(f: Facts, caveats: tuple[str, ...]) -> Verdict:
    """The workers start again every epoch, and that start-up is a large share of the time."""
    assert f.startup_s is not None and f.epoch_s is not None and f.restart_share is not None
    workers = "worker" if f.num_workers == 1 else f"{f.num_workers} workers"
    evidence = [
        f"Every epoch started its {workers} again (persistent_workers=False): {f.startup_s:.2f} s from iter() "
        f"to the first batch (median of {len(f.epoch_startup_s)} epochs), against {f.epoch_s:.2f} s of steps "
        f"per epoch. Start-up takes {pct(f.restart_share)} of the training time.",
        "The steady-state figures (and the speedup ceiling) leave each epoch's start-up out.",
    ]
    busy = f.startup_busy
    if busy is None:
        evidence.append("The workers' CPU during start-up could not be measured, so what they wait for is not known.")
        bottleneck, kind = Bottleneck.INCONCLUSIVE, "worker start-up"
    elif busy >= th.LOADER_BUSY:
        evidence.append(
            f"During start-up the workers were on a CPU, or waiting for one, {pct(busy)} of the time: starting "
            "them is CPU work (imports, copying the dataset, worker_init_fn)."
        )
        bottleneck, kind = Bottleneck.CPU, "worker start-up, CPU work"
    else:
        evidence.append(
            f"During start-up the workers were on a CPU only {pct(busy)} of the time: starting them waits "
            "(worker_init_fn reading files or calling a service), rather than computing."
        )
        bottleneck, kind = Bottleneck.IO, "worker start-up, waiting"
    return Verdict(
        bottleneck=bottleneck,
        label=f"Input-bound: the DataLoader workers start again every epoch ({kind})",
        confidence=th.CONFIDENCE_STRONG if busy is not None else th.CONFIDENCE_ONE_SIGNAL,
        speedup_ceiling=f.ceiling,
        evidence=tuple(evidence),
        caveats=caveats,
        augmentation_speedup=f.aug_speedup,
    )


def _wait_line(real: RunSummary) -> str:
    assert real.data_wait_fraction is not None
    return (
        f"The training loop waited for data {pct(real.data_wait_fraction)} of the time in the real run "
        f"({real.batches} steady-state batches, {_rate(real)})."
    )


def _ceiling_lines(f: Facts) -> list[str]:
    ceiling = f.ceiling
    if ceiling is None or f.real is None or f.synthetic is None:
        return []
    if ceiling < th.CEILING_COMPUTE_BOUND:
        return [
            f"Replaying one cached batch (synthetic) changed throughput only {ceiling:.2f}x "
            f"({_rate(f.real)} -> {_rate(f.synthetic)}): a free input pipeline would not help."
        ]
    return [
        f"Replaying one cached batch (synthetic) raised throughput {ceiling:.1f}x "
        f"({_rate(f.real)} -> {_rate(f.synthetic)}): that is the most any input-pipeline fix can give."
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
    label = f"Partly input-bound: {_in_sentence(cause.label)}" if partly else cause.label
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
            f"{aug:.1f}x ({_rate(f.real)} -> {_rate(f.no_aug)})."
        )
        return Cause(Bottleneck.CPU, "CPU-bound input pipeline (augmentation)", (line, *_saturation(f)), True)
    evidence = [_no_aug_line(f)] if aug is not None else []
    busy = f.real.loader_busy_fraction
    system = f.real.system_cpu_busy_fraction
    who = _loaders(f)
    if busy is None:
        return _cause_without_busy(f, evidence)
    cheap = f.cheap_batches
    if cheap is not None and busy < th.LOADER_BUSY:
        evidence.append(
            f"{capitalised(cheap)}. {who} on a CPU only {pct(busy)} of the time: building batches is not "
            "the cost. Handing them over is: each batch is pickled into shared memory by a worker and unpickled "
            "by the main process, and the workers' processes compete with the step for the CPUs."
        )
        label = "Input pipeline overhead: handing batches over from workers"
        return Cause(Bottleneck.CPU, label, tuple(evidence), True)
    if busy > th.LOADER_IDLE and (reads := _reads_line(f, who, busy)) is not None:
        evidence.append(reads)
        lines = (*evidence, *_io_lines(f, read_rate=False))  # the reads line already quotes the rate
        return Cause(Bottleneck.IO, "IO-bound input pipeline (storage reads)", lines, True)
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


def _reads_line(f: Facts, who: str, busy: float) -> str | None:
    """Busy workers whose CPU time goes mostly to the kernel while the run reads from storage: the
    work is reading (system calls, copying pages), not decoding. None otherwise."""
    assert f.real is not None
    kernel, rate = f.real.loader_kernel_fraction, f.real.read_bytes_per_s
    if f.num_workers == 0 or kernel is None or kernel < th.KERNEL_READS_SHARE:
        return None
    if rate is None or rate < th.READ_RATE_NOTABLE:
        return None
    return (
        f"{who} on a CPU, or waiting for one, {pct(busy)} of the time, but {pct(kernel)} of that CPU time was in "
        f"the kernel while the run read {rate / 1e6:,.0f} MB/s: the work is reading from storage, not decoding."
    )


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


def _io_lines(f: Facts, *, read_rate: bool = True) -> tuple[str, ...]:
    assert f.real is not None
    lines = []
    system = f.real.system_cpu_busy_fraction
    if system is not None:
        only = "only " if system < th.CPU_SATURATED else ""
        lines.append(f"The machine's CPUs were {only}{pct(system)} busy.")
    if f.real.iowait_fraction is not None and f.real.iowait_fraction >= th.IOWAIT_NOTABLE:
        lines.append(f"{pct(f.real.iowait_fraction)} of CPU time was iowait: storage stalls.")
    if read_rate and f.real.read_bytes_per_s is not None and f.real.read_bytes_per_s >= th.READ_RATE_NOTABLE:
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
    rates = f"({_rate(real)} real, {_rate(synthetic)} with one cached batch replayed)"
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
            f" Without random augmentation it runs {aug:.2f}x faster ({_rate(no_aug)}): augmentation accounts for "
            f"about {pct(max(0.0, min(1.0, share)))} of that gap, and reading, decoding and collating for the rest."
        )
    if v.confidence < th.CONFIDENCE_ONE_SIGNAL:
        text += " The runs disagree in part; see the caveats before acting on this."
    return text
