"""What an epoch costs besides its steps: the workers started again every epoch (a verdict of its
own where start-up is a large share of the time), and the epoch boundaries a real run's window
crossed where the free-input run's did not (their own part, left out of the comparison)."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.cause import found
from fastload_cli.analyzer.facts import Facts, boundaries_alone
from fastload_cli.formatting import counted, pct
from fastload_cli.records import Bottleneck, Finding, FindingKind


def restarts(f: Facts) -> tuple[Bottleneck, str, float, list[Finding]]:
    """The workers start again every epoch, and that start-up is a large share of the time: the
    verdict's bottleneck, label, confidence and evidence."""
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
    bottleneck, kind, line = startup_cause(busy)
    evidence.append(line)
    label = f"Input-bound: the DataLoader workers start again every epoch ({kind})"
    confidence = th.CONFIDENCE_STRONG if busy is not None else th.CONFIDENCE_ONE_SIGNAL
    return bottleneck, label, confidence, evidence


def startup_cause(busy: float | None) -> tuple[Bottleneck, str, Finding]:
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


def restart_clause(f: Facts) -> str:
    """Where the ceiling counts the workers' start-up every epoch (``Facts.restart_gain``), a clause
    for a sentence that quotes the ceiling beside the runs' rates: the steady ratio and the
    start-up; "" elsewhere."""
    steps, startup, steady, ceiling = f.restart_steps_s, f.startup_s, f.steady_ceiling, f.ceiling
    if f.restart_gain == 1 or steps is None or startup is None or steady is None or ceiling is None:
        return ""
    workers = "its worker takes" if f.num_workers == 1 else f"its {f.num_workers} workers take"
    return (
        f", {steady:.2f}x over the steps; {ceiling:.2f}x over whole epochs, as free inputs start no workers where "
        f"{workers} {startup:.2f} s to start again every epoch, against {steps:.2f} s of steps"
    )


def boundary_lines(f: Facts) -> list[Finding]:
    """What an epoch costs besides its steps, where the real run's window crossed epoch boundaries
    and the free-input run's did not: its own part, left out of the comparison between them."""
    real = f.real
    if real is None or real.wall_s is None or not boundaries_alone(real, f.synthetic):
        return []
    assert real.throughput_samples_per_s is not None and real.steps_samples_per_s is not None
    share = 1 - real.throughput_samples_per_s / real.steps_samples_per_s
    each = real.wall_s * share / real.epoch_boundaries
    workers = f"its {counted(f.num_workers, 'worker')} started again, " if f.num_workers else ""
    crossings = counted(real.epoch_boundaries, "epoch boundary", "epoch boundaries")
    between = sorted(f.between_epochs_s)
    median_between = between[len(between) // 2] if between else None
    restarts = (
        ". The free-input run never reached one, so the two are compared over their steps alone, and the workers' "
        "start-up, which free inputs do not pay, is added to the real run's epoch in the ceiling"
        if f.restart_gain > 1
        else ", which replaying one batch does not remove. The free-input run never reached one, so the two are "
        "compared over their steps alone"
    )
    script = (
        f" Between epochs the script itself spent {median_between:.2f} s more (evaluation, checkpoints, "
        "logging: the median of each time), outside both figures."
        if median_between is not None
        else ""
    )
    return [
        found(
            FindingKind.EPOCH_BOUNDARY,
            f"The real run's window crossed {crossings}: each epoch's start ({workers}its first batch) and end cost "
            f"{each:.2f} s besides its steps, {pct(share)} of the window: a cost of the epoch, not of its steps"
            f"{restarts}.{script}",
            boundary_s=each,
            boundary_share=share,
            between_epochs_s=median_between,
        )
    ]
