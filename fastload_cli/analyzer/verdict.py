"""The verdict: is the input pipeline the limit, and if so, why. Pure functions of ``Facts``.

1. Input-bound when the real run's data wait is high or the speedup ceiling is large;
   compute-bound when both are small; a hedged verdict when the ceiling lands in between.
   Workers started again every epoch for a large share of the time decide it before that: the
   steady-state numbers leave start-up out.
2. Why: see ``cause``.
3. Compute-bound on CUDA with the GPU mostly idle even with free inputs means the host loop.

Every evidence line quotes the number it rests on.
"""

from __future__ import annotations

from dataclasses import replace

from fastload_cli.analyzer import epoch_cost
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.cause import find_cause, found, rate
from fastload_cli.analyzer.facts import Facts, boundaries_alone, speedup
from fastload_cli.formatting import capitalised, pct, samples_rate, size
from fastload_cli.records import Bottleneck, Finding, FindingKind, RunSummary, Verdict

__all__ = ["Facts", "decide"]


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


def decide(f: Facts, caveats: tuple[str, ...] = ()) -> Verdict:
    broken = broken_comparison(f)
    if broken is not None and not f.restarts_dominate:
        label = "Inconclusive: the comparison with free inputs was broken"
        verdict = _verdict(f, Bottleneck.INCONCLUSIVE, label, 0.0, [broken], (*caveats, broken.sentence))
        return replace(verdict, speedup_ceiling=None)  # a ceiling below 1 is no measurement
    # Worker start-up, which the steady windows leave out, decides without the ceiling: that
    # verdict stands, a broken comparison said beside it.
    verdict = _decide(f, caveats if broken is None else (*caveats, broken.sentence))
    if broken is not None:
        verdict = replace(verdict, speedup_ceiling=None)
    if f.disturbed:
        return replace(verdict, confidence=round(verdict.confidence * th.CONFIDENCE_DISTURBED, 2))
    return verdict


def broken_comparison(f: Facts) -> Finding | None:
    """Free inputs cannot slow training: a synthetic run slower than the real one beyond the runs'
    noise measured something else, most often other processes on the machine; the runs' ratio,
    before the workers' start-up is counted (``Facts.restart_gain``). None when the comparison
    holds."""
    ceiling = f.steady_ceiling
    if ceiling is None or ceiling >= 1 / (1 + f.ceiling_noise):
        return None
    rough = any(r is None or r.batches < th.MIN_STEADY_BATCHES for r in (f.real, f.synthetic))
    if not f.disturbed and (ceiling >= th.CEILING_BROKEN or rough):
        return None  # slower on a quiet machine, but not by much or on a few batches: read as compute-bound
    why = (
        "other processes took a large share of the CPU during a compared run, even after running it again"
        if f.disturbed
        else "something other than the input pipeline changed between the runs"
    )
    return found(
        FindingKind.CEILING,
        f"With free inputs (synthetic) training ran {ceiling:.2f}x as fast as the real run: a free input pipeline "
        f"cannot slow training, so the comparison is broken ({why}). Run fastload again on a quieter machine.",
        speedup_ceiling=ceiling,
        noise=f.ceiling_noise,
    )


def _decide(f: Facts, caveats: tuple[str, ...]) -> Verdict:
    real = f.real
    if real is None or real.data_wait_fraction is None or real.throughput_samples_per_s is None:
        label = "Inconclusive: no steady-state batches were measured"
        why = caveats or ("the real run delivered too few batches to measure",)
        return _verdict(f, Bottleneck.INCONCLUSIVE, label, 0.0, [], why)
    if f.restarts_dominate:
        return _verdict(f, *epoch_cost.restarts(f), caveats)
    wait, ceiling = real.data_wait_fraction, f.ceiling
    evidence = [_wait_line(real), *_ceiling_lines(f), *epoch_cost.boundary_lines(f)]
    if f.transfer_bound:
        return _transfer_bound(f, evidence, caveats)
    wait_high, wait_low = wait >= th.WAIT_INPUT_BOUND, wait < th.WAIT_COMPUTE_BOUND
    ceiling_high = ceiling is not None and ceiling >= th.CEILING_INPUT_BOUND
    ceiling_low = ceiling is not None and ceiling < th.CEILING_COMPUTE_BOUND
    if f.contended and not ceiling_low:
        evidence.append(_contention_line(f))
    if f.sweep_confirms_input and not (wait_low and ceiling_low):
        return _input_bound(f, evidence, th.CONFIDENCE_STRONG, caveats, partly=False)
    floor = _sweep_floor_line(f) if wait_low and ceiling_low else None
    if floor is not None:  # both signals say compute, but the sweep measured a faster loader
        return _input_bound(f, [*evidence, floor], _partly_confidence(f), caveats, partly=True)
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
        if ceiling_high and wait < th.WAIT_CLEARLY_INPUT:  # the ceiling decides: how far above its line?
            between = "partly and clearly input-bound"
            eased_to = _partly_confidence(f)
            confidence = _eased(f, confidence, th.CEILING_INPUT_BOUND, (between, evidence), floor=eased_to)
        return _input_bound(f, evidence, confidence, caveats, partly=False)
    if wait_low and ceiling is None and f.concurrent_loading:
        return _wait_alone(f, evidence, caveats)
    if wait_low and (ceiling is None or ceiling_low or not f.loaders_cost_the_step):
        return _compute_bound(f, evidence, _step_confidence(f, evidence), caveats)
    return _mixed(f, evidence, caveats)


def _step_confidence(f: Facts, evidence: list[Finding]) -> float:
    """A compute-bound verdict's confidence where the loop hardly waited: full where the ceiling is
    under the line, eased toward the reading across it near the line, and one signal's where the
    ceiling reads in between, which the input pipeline does not explain (a line added to
    ``evidence``). Where the verdict reads compute-bound across the line too
    (``Facts.compute_either_side``), it eases toward that reading's one signal, and no finding
    says another run may turn it."""
    ceiling = f.ceiling
    if ceiling is None:
        return th.CONFIDENCE_ONE_SIGNAL
    if ceiling >= th.CEILING_COMPUTE_BOUND:
        evidence.append(_unexplained_ceiling_line(f))
        return th.CONFIDENCE_ONE_SIGNAL
    if f.step_slowed or f.wait_caps_ceiling:
        return th.CONFIDENCE_STRONG
    if f.compute_either_side:
        return _eased(f, th.CONFIDENCE_STRONG, th.CEILING_COMPUTE_BOUND, None, floor=th.CONFIDENCE_ONE_SIGNAL)
    between = "compute-bound and partly input-bound"  # how far below "partly input-bound"?
    return _eased(f, th.CONFIDENCE_STRONG, th.CEILING_COMPUTE_BOUND, (between, evidence))


def _mixed(f: Facts, evidence: list[Finding], caveats: tuple[str, ...]) -> Verdict:
    """Neither the wait nor the ceiling decides: partly input-bound, its cause known where the step
    was measured slower beside the loaders (the contention line then says how)."""
    if not f.contended:
        evidence.append(
            found(FindingKind.MIXED, "Both the step and the input pipeline cost time: neither signal is clear-cut.")
        )
    return _input_bound(f, evidence, _partly_confidence(f), caveats, partly=True)


def _eased(
    f: Facts,
    confidence: float,
    line: float,
    said: tuple[str, list[Finding]] | None,
    floor: float = th.CONFIDENCE_HEDGED,
) -> float:
    """A confidence that moves smoothly across a line the verdict draws on the ceiling: ``floor``
    on the line (the confidence of the reading just across it), the full one a whole noise (the
    runs' spreads) away from it, linear in between, and, where ``said`` gives what the line is
    between and the evidence, a finding that says so while the ceiling is that close."""
    assert f.ceiling is not None
    noise = f.ceiling_noise
    margin = min(1.0, abs(f.ceiling / line - 1) / noise)
    if margin < 1.0 and said is not None:
        between, evidence = said
        evidence.append(
            found(
                FindingKind.NEAR_THRESHOLD,
                f"The ceiling, {f.ceiling:.2f}x, is within the runs' noise (±{100 * noise:.0f}%) of {line:.2f}x, the "
                f"line between {between}: another run may land on the other side.",
                speedup_ceiling=f.ceiling,
                noise=noise,
            )
        )
    if confidence <= floor:
        return confidence
    return floor + (confidence - floor) * margin


def _wait_alone(f: Facts, evidence: list[Finding], caveats: tuple[str, ...]) -> Verdict:
    """A short wait without a run with free inputs: loading beside the step can slow the step
    without making the loop wait, so the wait alone cannot call the step the limit."""
    line = (
        "Loading runs beside the step (DataLoader workers or a pin-memory thread) and can slow it without making "
        "the loop wait; without a run with free inputs (synthetic) the step's own share is not measured."
    )
    evidence.append(found(FindingKind.FREE_INPUTS_UNMEASURED, line))
    label = "Inconclusive: the loop rarely waits for data, but the step's own share was not measured"
    hint = "`fastload diagnose` (or `synthetic-compare`) runs the comparison with free inputs that decides it"
    return _verdict(f, Bottleneck.INCONCLUSIVE, label, 0.0, evidence, (*caveats, hint))


def _in_sentence(label: str) -> str:
    """A label continued after a colon: an ordinary first word in lower case, acronyms kept."""
    return label[0].lower() + label[1:] if label[1:2].islower() else label


def _partly_confidence(f: Facts) -> float:
    """Hedged, unless how loading costs the step is known, and the ceiling measured how much: the
    step measured slower beside the loaders than with free inputs (they take its cores), or workers
    handing over batches cheaper to build than to hand over (they cost time by construction)."""
    return th.CONFIDENCE_ONE_SIGNAL if f.contended or f.cheap_batches is not None else th.CONFIDENCE_HEDGED


def _partly_line(f: Facts) -> Finding:
    assert f.ceiling is not None
    return found(
        FindingKind.PARTLY,
        f"A free input pipeline would gain {f.ceiling:.2f}x: loading and the step cost about the same, so "
        "neither is clearly the limit.",
        speedup_ceiling=f.ceiling,
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
    rates = f"{rate(f.real)} -> {rate(f.synthetic)}"
    if boundaries_alone(f.real, f.synthetic):
        rates = f"{samples_rate(f.real.steps_samples_per_s)} over the real run's steps alone -> {rate(f.synthetic)}"
    if f.pairs:  # measured again: the pairs decide, the rates are pooled
        each = ", ".join(f"{c:.2f}x" for c in f.pair_ceilings)
        rates = f"over {len(f.pairs)} pairs of runs side by side, {each}; {rates} pooled"
    rates += epoch_cost.restart_clause(f)
    if ceiling < th.CEILING_COMPUTE_BOUND:
        sentence = (
            f"Replaying one cached batch (synthetic) changed throughput only {ceiling:.2f}x ({rates}): "
            "a free input pipeline would not help."
        )
    else:
        sentence = (
            f"Replaying one cached batch (synthetic) raised throughput {ceiling:.1f}x ({rates}): "
            "that is the most any input-pipeline fix can give."
        )
    return [found(FindingKind.CEILING, sentence, speedup_ceiling=ceiling)]


def _sweep_floor_line(f: Facts) -> Finding | None:
    """A loader setting measured faster than the script's own beyond the noise and the line to
    "partly input-bound", or None. Where the other signals read the step as the limit the
    measurements disagree, and the one that changed only the loader says loading costs time."""
    gain = f.sweep_gain
    if f.sweep is None or gain is None or gain < th.CEILING_COMPUTE_BOUND:
        return None
    resolved = f" (the comparison with free inputs resolved {f.ceiling:.2f}x)" if f.ceiling is not None else ""
    return found(
        FindingKind.PARTLY,
        f"num_workers={f.sweep.recommended_workers} ran {gain:.2f}x as fast as the script's own setting: the input "
        f"pipeline costs at least that much{resolved}, though the loop rarely waits.",
        sweep_speedup=gain,
        speedup_ceiling=f.ceiling,
    )


def _contention_line(f: Facts) -> Finding:
    assert f.real is not None and f.synthetic is not None and f.contention is not None
    paired = ", pair by pair" if f.pairs else ""
    step = (
        f"outside the data wait, a step took {f.real.compute_ms_p50:.0f} ms in the real run but "
        f"{f.synthetic.compute_ms_p50:.0f} ms with free inputs ({f.contention:.1f}x{paired})"
    )
    if f.step_starved and not f.step_slowed and f.cpu_regained is not None:  # the CPU shares decided it
        assert f.real.main_cpu_percent is not None and f.synthetic.main_cpu_percent is not None
        step = (
            f"every core was busy, and the training process had {f.real.main_cpu_percent:.0f}% of a CPU beside "
            f"the loaders but {f.synthetic.main_cpu_percent:.0f}% with free inputs ({f.cpu_regained:.2f}x); {step}"
        )
    return found(
        FindingKind.CONTENTION,
        f"{capitalised(step)}: loading takes CPU from the training step itself, so the wait alone understates its "
        "cost.",
        contention=f.contention,
        cpu_regained=f.cpu_regained,
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


def _transfer_bound(f: Facts, evidence: list[Finding], caveats: tuple[str, ...]) -> Verdict:
    """The step ran much faster with its batch already on the GPU than copied there from host
    memory, and the copies cost more than the rest of the input pipeline."""
    gain = f.transfer_gain
    assert gain is not None
    evidence.append(_transfer_line(f))
    if gain >= th.CEILING_INPUT_BOUND:
        label, confidence = "Input-bound: copying the batches to the GPU is the limit", th.CONFIDENCE_STRONG
    else:
        label, confidence = "Partly input-bound: copying the batches to the GPU costs time", th.CONFIDENCE_ONE_SIGNAL
    verdict = _verdict(f, Bottleneck.TRANSFER, label, confidence, evidence, caveats)
    return replace(verdict, speedup_ceiling=speedup(f.device_replay, f.real) or f.ceiling)


def _transfer_line(f: Facts) -> Finding:
    """What the copies cost a step, from the two replays, and what the bytes say they could cost."""
    host, device, gain = f.synthetic, f.device_replay, f.transfer_gain
    assert host is not None and device is not None and gain is not None
    assert host.compute_ms_p50 is not None and device.compute_ms_p50 is not None
    copy_ms = host.compute_ms_p50 - device.compute_ms_p50
    batch = f.batch
    nbytes = batch.bytes_per_batch if batch is not None and batch.bytes_per_batch else None
    pinned = batch.pinned if batch is not None else None
    memory = "host" if pinned is None else "pinned" if pinned else "pageable"
    moved = ""
    if nbytes is not None:
        floor_ms = 1e3 * nbytes / th.PCIE_PINNED_BYTES_PER_S
        moved = (
            f" The {size(nbytes)} of a batch crossed at {nbytes / copy_ms / 1e6:.1f} GB/s from {memory} memory; "
            f"pinned memory over PCIe Gen5 moves them in about {floor_ms:.1f} ms."
        )
    return found(
        FindingKind.TRANSFER,
        f"With its batch already on the GPU (synthetic-device) a step took {device.compute_ms_p50:.1f} ms, against "
        f"{host.compute_ms_p50:.1f} ms copied there from host memory (synthetic): the copies cost "
        f"{copy_ms:.1f} ms a step ({gain:.2f}x).{moved}",
        transfer_gain=gain,
        copy_ms=copy_ms,
        bytes_per_batch=nbytes,
        noise=f.transfer_noise,
    )


def _compute_bound(f: Facts, evidence: list[Finding], confidence: float, caveats: tuple[str, ...]) -> Verdict:
    free = f.device_replay or f.synthetic  # free inputs, already on the GPU where that was measured
    gpu = free.gpu_util_percent if free is not None else None
    if f.cuda_in_use and gpu is not None and gpu < th.GPU_BUSY_LOW_PERCENT:
        where = "free inputs already on the GPU (synthetic-device)" if f.device_replay else "free inputs"
        line = (
            f"Even with {where} the GPU was busy only {gpu:.0f}% of the time: the loop's own Python "
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
