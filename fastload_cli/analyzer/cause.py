"""Why the input pipeline is the limit: augmentation, CPU work, storage, or the handoff from
workers. Pure functions of ``Facts``; every finding quotes the number it rests on.

1. Augmentation when turning it off (``no-aug``) is much faster.
2. Otherwise the loading processes' CPU use: busy on (or queued for) a CPU means CPU work. Asleep
   means storage or latency only with storage evidence (reads, iowait, or a loop that waits while
   they sleep); asleep on saturated cores, or beside a step that slows, they keep up and take CPU
   from the step.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def find_cause(f: Facts) -> Cause:
    assert f.real is not None
    aug = f.aug_speedup
    if aug is not None and aug >= th.AUG_SPEEDUP_SIGNIFICANT and f.no_aug is not None:
        line = (
            f"With random augmentation replaced by deterministic stand-ins (no-aug), throughput rose "
            f"{aug:.1f}x ({rate(f.real)} -> {rate(f.no_aug)})."
        )
        evidence = (found(FindingKind.AUGMENTATION, line, augmentation_speedup=aug), *_saturation(f), *capacity(f))
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
        lines = (*evidence, *_saturation(f), *capacity(f))
        return Cause(Bottleneck.CPU, _cpu_label(f), lines, busy >= th.LOADER_BUSY)
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
        return Cause(Bottleneck.IO, IO_LATENCY, (*evidence, *_io_lines(f, read_rate=not f.reads_are_evidence)), True)
    line = f"{who} on a CPU {pct(busy)} of the time: partly computing, partly waiting."
    evidence.append(found(FindingKind.LOADERS_MIXED, line, loader_busy_fraction=busy))
    if busy >= (th.LOADER_BUSY + th.LOADER_IDLE) / 2 or storage is None:  # closer to busy, or no sign of storage
        return Cause(Bottleneck.CPU, _cpu_label(f), tuple(evidence), False)
    return Cause(Bottleneck.IO, IO_LATENCY, (*evidence, *_io_lines(f, read_rate=not f.reads_are_evidence)), False)


def capacity(f: Facts) -> list[Finding]:
    """Training on CUDA with CPU-bound loading: the cores that would feed the step at the rate it
    takes with free inputs (the workers' CPU per sample, times that rate), against the cores this
    process may use."""
    needed, cores, free = f.loading_cores_needed, f.cores_per_rank, f.synthetic
    if not f.cuda_in_use or needed is None or not cores or free is None or not free.throughput_samples_per_s:
        return []
    per_sample_ms = 1000 * needed / free.throughput_samples_per_s
    enough = "more workers can get there" if needed <= cores else "no num_workers setting can get there"
    line = (
        f"Feeding the GPU at its free-input rate ({free.throughput_samples_per_s:,.0f} samples/s) takes "
        f"{needed:.1f} cores of loading ({per_sample_ms:.1f} ms of CPU per sample, as the real run's workers spent "
        f"it), and this process may use {cores}: {enough}."
    )
    return [found(FindingKind.CAPACITY, line, cores_needed=needed, cores=cores)]


IO_LATENCY = "IO-bound input pipeline (storage or latency)"
CAUSE_UNKNOWN = "Input-bound; the cause (CPU or IO) could not be measured"


def asleep_unexplained(verdict: Verdict) -> bool:
    """Loading costs the time, or part of it, and its loaders slept with nothing to show why
    (``LOADERS_IDLE``, cause unknown): workers that wait on latency, or that keep up and sleep on
    a full queue while something else costs the time. More workers tell them apart: more reads in
    flight train faster (``Facts.storage_evidence``), a fuller queue does not."""
    return verdict.bottleneck is Bottleneck.INCONCLUSIVE and bool(verdict.of(FindingKind.LOADERS_IDLE))


def _competing_cause(f: Facts, evidence: list[Finding], who: str, busy: float) -> Cause:
    """Loaders that sleep while the cores are full or the step slows beside them: they keep up and
    wait on a full queue, and the CPU they use is taken from the step. CPU, not storage."""
    assert f.real is not None
    system, rate = f.real.system_cpu_busy_fraction, f.real.read_bytes_per_s
    where = f"the CPUs were {pct(system)} busy" if f.cores_saturated and system is not None else "the step slowed"
    if rate is not None and rate >= th.READ_RATE_NOTABLE:
        blocked = f.real.loader_blocked_fraction or 0.0
        reads = f"the {rate / 1e6:.1f} MB/s read from storage held them up in only {pct(blocked)} of samples"
    else:
        reads = "nothing was read from storage"
    line = (
        f"{who} on a CPU only {pct(busy)} of the time, yet {where} and {reads}: workers that keep up sleep because "
        "their queue is full, not because they wait for storage. Loading costs the step CPU."
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
    if rate is None or not f.reads_are_evidence:
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
