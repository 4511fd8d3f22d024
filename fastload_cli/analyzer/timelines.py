"""Each run over time, as the report's timelines show it."""

from __future__ import annotations

from fastload_cli.analyzer.window import primary_loader_id, steady_steps
from fastload_cli.records import RunResult, Timeline


def timeline(run: RunResult) -> Timeline:
    """One run over time, as the child and the samplers recorded it."""
    measured = {id(step.batch) for step in steady_steps(run)}
    return Timeline(
        mode=run.label,
        variant=run.spec.variant,
        started_ns=run.started_ns,
        ended_ns=run.ended_ns,
        warmup_batches=run.warmup_batches,
        loader_id=primary_loader_id(run),
        iterators=run.iterators,
        batches=run.batches,
        measured=tuple(i for i, batch in enumerate(run.batches) if id(batch) in measured),
        host_samples=run.host_samples,
        gpu_samples=run.gpu_samples,
    )
