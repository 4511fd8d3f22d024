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
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import capitalised, pct, samples_rate
from fastload_cli.records import Bottleneck, Finding, FindingKind, RunSummary, Verdict


@dataclass(frozen=True, slots=True)
class Cause:
    bottleneck: Bottleneck
    label: str
    evidence: tuple[Finding, ...]
    certain: bool


def rate(summary: RunSummary) -> str:
    """A run's throughput in words: ``162 samples/s``."""
    return samples_rate(summary.throughput_samples_per_s)


def found(kind: FindingKind, sentence: str, **values: float | int | None) -> Finding:
    return Finding(kind=kind, sentence=sentence, values=values)


def _verdict(
    f: Facts, bottleneck: Bottleneck, label: str, confidence: float, findings: list[Finding], caveats: tuple[str, ...]
) -> Verdict:
    """A verdict on these facts; its evidence is the findings' sentences."""
    return Verdict(
        bottleneck=bottleneck,
        label=label,
        confidence=confidence,
        speedup_ceiling=f.ceiling,
        evidence=tuple(x.sentence for x in findings),
        caveats=caveats,
        augmentation_speedup=f.aug_speedup,
        findings=tuple(findings),
    )


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
        label = "Inconclusive: no steady-state batches were measured"
        why = caveats or ("the real run delivered too few batches to measure",)
        return _verdict(f, Bottleneck.INCONCLUSIVE, label, 0.0, [], why)
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
    evidence.append(
        found(FindingKind.MIXED, "Both the step and the input pipeline cost time: neither signal is clear-cut.")
    )
    return _input_bound(f, evidence, _partly_confidence(f), caveats, partly=True)


def _in_sentence(label: str) -> str:
    """A label continued after a colon: an ordinary first word in lower case, acronyms kept."""
    return label[0].lower() + label[1:] if label[1:2].islower() else label


def _partly_confidence(f: Facts) -> float:
    """Hedged, unless the cause is known from the loader's structure: workers handing over batches
    cheaper to build than to hand over cost time by construction, and the ceiling measured how much."""
    return th.CONFIDENCE_ONE_SIGNAL if f.cheap_batches is not None else th.CONFIDENCE_HEDGED


def _partly_line(f: Facts) -> Finding:
    assert f.ceiling is not None
    return found(
        FindingKind.PARTLY,
        f"A free input pipeline would gain {f.ceiling:.2f}x: loading and the step cost about the same, so "
        "neither is clearly the limit.",
        speedup_ceiling=f.ceiling,
    )


def _restart_bound(f: Facts, caveats: tuple[str, ...]) -> Verdict:
    """The workers start again every epoch, and that start-up is a large share of the time."""
    assert f.startup_s is not None and f.epoch_s is not None and f.restart_share is not None
    workers = "worker" if f.num_workers == 1 else f"{f.num_workers} workers"
    evidence = [
        found(
            FindingKind.WORKER_RESTARTS,
            f"Every epoch started its {workers} again (persistent_workers=False): {f.startup_s:.2f} s from iter() "
            f"to the first batch (median of {len(f.epoch_startup_s)} epochs), against {f.epoch_s:.2f} s of steps "
            f"per epoch. Start-up takes {pct(f.restart_share)} of the training time.",
            startup_s=f.startup_s,
            epoch_s=f.epoch_s,
            restart_share=f.restart_share,
        ),
        found(
            FindingKind.STEADY_STATE,
            "The steady-state figures (and the speedup ceiling) leave each epoch's start-up out.",
        ),
    ]
    busy = f.startup_busy
    bottleneck, kind, line = _startup_cause(busy)
    evidence.append(line)
    label = f"Input-bound: the DataLoader workers start again every epoch ({kind})"
    confidence = th.CONFIDENCE_STRONG if busy is not None else th.CONFIDENCE_ONE_SIGNAL
    return _verdict(f, bottleneck, label, confidence, evidence, caveats)


def _startup_cause(busy: float | None) -> tuple[Bottleneck, str, Finding]:
    """What the workers did while they started: computing (CPU) or waiting (IO)."""
    if busy is None:
        line = "The workers' CPU during start-up could not be measured, so what they wait for is not known."
        return Bottleneck.INCONCLUSIVE, "worker start-up", found(FindingKind.WORKER_RESTARTS, line)
    if busy >= th.LOADER_BUSY:
        line = (
            f"During start-up the workers were on a CPU, or waiting for one, {pct(busy)} of the time: starting "
            "them is CPU work (imports, copying the dataset, worker_init_fn)."
        )
        cpu = found(FindingKind.WORKER_RESTARTS, line, startup_busy_fraction=busy)
        return Bottleneck.CPU, "worker start-up, CPU work", cpu
    line = (
        f"During start-up the workers were on a CPU only {pct(busy)} of the time: starting them waits "
        "(worker_init_fn reading files or calling a service), rather than computing."
    )
    return (
        Bottleneck.IO,
        "worker start-up, waiting",
        found(FindingKind.WORKER_RESTARTS, line, startup_busy_fraction=busy),
    )


def _wait_line(real: RunSummary) -> Finding:
    assert real.data_wait_fraction is not None
    return found(
        FindingKind.DATA_WAIT,
        f"The training loop waited for data {pct(real.data_wait_fraction)} of the time in the real run "
        f"({real.batches} steady-state batches, {rate(real)}).",
        data_wait_fraction=real.data_wait_fraction,
        batches=real.batches,
        throughput_samples_per_s=real.throughput_samples_per_s,
    )


def _ceiling_lines(f: Facts) -> list[Finding]:
    ceiling = f.ceiling
    if ceiling is None or f.real is None or f.synthetic is None:
        return []
    rates = f"({rate(f.real)} -> {rate(f.synthetic)})"
    if ceiling < th.CEILING_COMPUTE_BOUND:
        sentence = (
            f"Replaying one cached batch (synthetic) changed throughput only {ceiling:.2f}x {rates}: "
            "a free input pipeline would not help."
        )
    else:
        sentence = (
            f"Replaying one cached batch (synthetic) raised throughput {ceiling:.1f}x {rates}: "
            "that is the most any input-pipeline fix can give."
        )
    return [found(FindingKind.CEILING, sentence, speedup_ceiling=ceiling)]


def _contention_line(f: Facts) -> Finding:
    assert f.real is not None and f.synthetic is not None and f.contention is not None
    return found(
        FindingKind.CONTENTION,
        f"Outside the data wait, a step took {f.real.compute_ms_p50:.0f} ms in the real run but "
        f"{f.synthetic.compute_ms_p50:.0f} ms with free inputs ({f.contention:.1f}x): loading takes CPU "
        "from the training step itself, so the wait alone understates its cost.",
        contention=f.contention,
    )


def _unexplained_ceiling_line(f: Facts) -> Finding:
    assert f.real is not None and f.real.data_wait_fraction is not None and f.ceiling is not None
    beside = "nothing loads beside the step" if not f.concurrent_loading else "the step did not slow beside the loaders"
    return found(
        FindingKind.CEILING_UNEXPLAINED,
        f"The {f.ceiling:.2f}x between synthetic and real is not explained by the input pipeline: the loop "
        f"waited only {pct(f.real.data_wait_fraction)} and {beside}. It is run-to-run noise.",
        speedup_ceiling=f.ceiling,
    )


def _compute_bound(f: Facts, evidence: list[Finding], confidence: float, caveats: tuple[str, ...]) -> Verdict:
    gpu = f.synthetic.gpu_util_percent if f.synthetic is not None else None
    if f.cuda_in_use and gpu is not None and gpu < th.GPU_BUSY_LOW_PERCENT:
        line = (
            f"Even with free inputs the GPU was busy only {gpu:.0f}% of the time: the loop's own Python "
            "and kernel-launch overhead is the limit."
        )
        evidence.append(found(FindingKind.GPU_IDLE, line, gpu_util_percent=gpu))
        label = "Host-bound: the training loop's own overhead starves the GPU"
        return _verdict(f, Bottleneck.HOST, label, confidence, evidence, caveats)
    where = "GPU" if f.cuda_in_use else "model's CPU compute"
    label = f"Compute-bound: the training step ({where}) is the limit"
    return _verdict(f, Bottleneck.COMPUTE, label, confidence, evidence, caveats)


def _input_bound(
    f: Facts, evidence: list[Finding], confidence: float, caveats: tuple[str, ...], *, partly: bool
) -> Verdict:
    cause = find_cause(f)
    evidence.extend(cause.evidence)
    if not cause.certain:
        confidence *= th.CONFIDENCE_CAUSE_UNCLEAR
    label = f"Partly input-bound: {_in_sentence(cause.label)}" if partly else cause.label
    return _verdict(f, cause.bottleneck, label, round(confidence, 2), evidence, caveats)


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
        evidence = (found(FindingKind.AUGMENTATION, line, augmentation_speedup=aug), *_saturation(f))
        return Cause(Bottleneck.CPU, "CPU-bound input pipeline (augmentation)", evidence, True)
    findings = [_no_aug_line(f)] if aug is not None else []
    busy = f.real.loader_busy_fraction
    if busy is None:
        return _cause_without_busy(f, findings)
    return _cause_from_busy(f, findings, busy)


def _cause_from_busy(f: Facts, evidence: list[Finding], busy: float) -> Cause:
    """The cause, from how much of the time the loading processes were on a CPU (or queued for one)."""
    assert f.real is not None
    system, who, cheap = f.real.system_cpu_busy_fraction, _loaders(f), f.cheap_batches
    if cheap is not None and busy < th.LOADER_BUSY:
        line = (
            f"{capitalised(cheap)}. {who} on a CPU only {pct(busy)} of the time: building batches is not "
            "the cost. Handing them over is: each batch is pickled into shared memory by a worker and unpickled "
            "by the main process, and the workers' processes compete with the step for the CPUs."
        )
        evidence.append(found(FindingKind.HANDOFF, line, loader_busy_fraction=busy))
        return Cause(
            Bottleneck.CPU, "Input pipeline overhead: handing batches over from workers", tuple(evidence), True
        )
    if busy > th.LOADER_IDLE and (reads := _reads_line(f, who, busy)) is not None:
        lines = (*evidence, reads, *_io_lines(f, read_rate=False))  # the reads line already quotes the rate
        return Cause(Bottleneck.IO, "IO-bound input pipeline (storage reads)", lines, True)
    if busy >= th.LOADER_BUSY or (busy > th.LOADER_IDLE and system is not None and system >= th.CPU_SATURATED):
        line = f"{who} on a CPU, or waiting for one, {pct(busy)} of the time: loading is CPU work."
        evidence.append(found(FindingKind.LOADERS_BUSY, line, loader_busy_fraction=busy))
        return Cause(Bottleneck.CPU, _cpu_label(f), (*evidence, *_saturation(f)), busy >= th.LOADER_BUSY)
    storage = f.storage_evidence
    if storage is None and (f.contended or f.cores_saturated):
        return _competing_cause(f, evidence, who, busy)
    if busy <= th.LOADER_IDLE:
        if storage is None:
            line = (
                f"{who} on a CPU only {pct(busy)} of the time, but nothing shows them waiting on storage (no reads, "
                "no iowait, little data wait): workers that keep up also sleep, with their queue full."
            )
            evidence.append(found(FindingKind.LOADERS_IDLE, line, loader_busy_fraction=busy))
            return Cause(Bottleneck.INCONCLUSIVE, CAUSE_UNKNOWN, tuple(evidence), False)
        line = f"{who} on a CPU only {pct(busy)} of the time and {storage}: loading waits on storage or other latency."
        evidence.append(found(FindingKind.LOADERS_IDLE, line, loader_busy_fraction=busy))
        return Cause(Bottleneck.IO, IO_LATENCY, (*evidence, *_io_lines(f)), True)
    line = f"{who} on a CPU {pct(busy)} of the time: partly computing, partly waiting."
    evidence.append(found(FindingKind.LOADERS_MIXED, line, loader_busy_fraction=busy))
    if busy >= (th.LOADER_BUSY + th.LOADER_IDLE) / 2 or storage is None:  # closer to busy, or no sign of storage
        return Cause(Bottleneck.CPU, _cpu_label(f), tuple(evidence), False)
    return Cause(Bottleneck.IO, IO_LATENCY, (*evidence, *_io_lines(f)), False)


IO_LATENCY = "IO-bound input pipeline (storage or latency)"
CAUSE_UNKNOWN = "Input-bound; the cause (CPU or IO) could not be measured"


def _competing_cause(f: Facts, evidence: list[Finding], who: str, busy: float) -> Cause:
    """Loaders that sleep while the cores are full or the step slows beside them: they keep up and
    wait on a full queue, and the CPU they use is taken from the step. CPU, not storage."""
    assert f.real is not None
    system = f.real.system_cpu_busy_fraction
    where = f"the CPUs were {pct(system)} busy" if f.cores_saturated and system is not None else "the step slowed"
    line = (
        f"{who} on a CPU only {pct(busy)} of the time, yet {where} and nothing was read from storage: workers that "
        "keep up sleep because their queue is full, not because they wait for storage. Loading costs the step CPU."
    )
    evidence.append(
        found(FindingKind.LOADERS_COMPETE, line, loader_busy_fraction=busy, system_cpu_busy_fraction=system)
    )
    return Cause(
        Bottleneck.CPU,
        "CPU-bound input pipeline (loading competes with the step for the cores)",
        (*evidence, *_saturation(f)),
        True,
    )


def _reads_line(f: Facts, who: str, busy: float) -> Finding | None:
    """Busy workers whose CPU time goes mostly to the kernel while the run reads from storage: the
    work is reading (system calls, copying pages), not decoding. None otherwise."""
    assert f.real is not None
    kernel, rate = f.real.loader_kernel_fraction, f.real.read_bytes_per_s
    if f.num_workers == 0 or kernel is None or kernel < th.KERNEL_READS_SHARE:
        return None
    if rate is None or rate < th.READ_RATE_NOTABLE:
        return None
    line = (
        f"{who} on a CPU, or waiting for one, {pct(busy)} of the time, but {pct(kernel)} of that CPU time was in "
        f"the kernel while the run read {rate / 1e6:,.0f} MB/s: the work is reading from storage, not decoding."
    )
    return found(
        FindingKind.KERNEL_READS, line, loader_busy_fraction=busy, loader_kernel_fraction=kernel, read_bytes_per_s=rate
    )


def _cause_without_busy(f: Facts, evidence: list[Finding]) -> Cause:
    assert f.real is not None
    iowait = f.real.iowait_fraction
    if iowait is not None and iowait >= th.IOWAIT_NOTABLE:
        line = f"The machine spent {pct(iowait)} of its CPU time in iowait: storage stalls."
        evidence.append(found(FindingKind.IOWAIT, line, iowait_fraction=iowait))
        return Cause(Bottleneck.IO, "IO-bound input pipeline (storage)", tuple(evidence), False)
    line = "The loading processes' CPU use could not be measured, so the cause is not known."
    evidence.append(found(FindingKind.CAUSE_UNMEASURED, line))
    return Cause(Bottleneck.INCONCLUSIVE, CAUSE_UNKNOWN, tuple(evidence), False)


def _no_aug_line(f: Facts) -> Finding:
    assert f.aug_speedup is not None
    line = (
        f"Turning random augmentation off (no-aug) changed throughput only {f.aug_speedup:.2f}x: "
        "it is not the main cost."
    )
    return found(FindingKind.AUGMENTATION, line, augmentation_speedup=f.aug_speedup)


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


def _saturation(f: Facts) -> tuple[Finding, ...]:
    assert f.real is not None
    system = f.real.system_cpu_busy_fraction
    if system is None:
        return ()
    cores = f" ({f.cpu_count})" if f.cpu_count else ""
    if f.cores_saturated:
        line = (
            f"All cores{cores} were busy ({pct(system)} of CPU time): more workers cannot help; "
            "each sample must get cheaper."
        )
        return (found(FindingKind.CORES_SATURATED, line, system_cpu_busy_fraction=system),)
    line = f"The CPUs{cores} were {pct(system)} busy: there is room for more parallel loading."
    return (found(FindingKind.CORES_FREE, line, system_cpu_busy_fraction=system),)


def _io_lines(f: Facts, *, read_rate: bool = True) -> tuple[Finding, ...]:
    assert f.real is not None
    lines = []
    system, iowait, rate = f.real.system_cpu_busy_fraction, f.real.iowait_fraction, f.real.read_bytes_per_s
    if system is not None:
        only = "only " if system < th.CPU_SATURATED else ""
        line = f"The machine's CPUs were {only}{pct(system)} busy."
        lines.append(found(FindingKind.MACHINE_CPU, line, system_cpu_busy_fraction=system))
    if iowait is not None and iowait >= th.IOWAIT_NOTABLE:
        line = f"{pct(iowait)} of CPU time was iowait: storage stalls."
        lines.append(found(FindingKind.IOWAIT, line, iowait_fraction=iowait))
    if read_rate and rate is not None and rate >= th.READ_RATE_NOTABLE:
        lines.append(
            found(FindingKind.READ_RATE, f"The run read {rate / 1e6:.1f} MB/s from storage.", read_bytes_per_s=rate)
        )
    return tuple(lines)
