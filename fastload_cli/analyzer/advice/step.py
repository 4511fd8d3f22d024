"""The step and the job: the step is the limit (input work will not help), and a data-parallel
job's straggler, held back by its own input pipeline or by its step."""

from __future__ import annotations

from fastload_cli.analyzer.advice.shared import (
    capped,
    cited,
)
from fastload_cli.analyzer.facts import Facts
from fastload_cli.records import Bottleneck, FindingKind, Recommendation, Verdict


def step_is_the_limit(f: Facts, v: Verdict) -> Recommendation | None:
    """Compute- or host-bound, as the synthetic run measured it: say plainly that input work will
    not help. Without that run the wait alone cannot say it (on a CPU-only machine loading also
    slows the step it runs beside)."""
    if v.bottleneck not in (Bottleneck.COMPUTE, Bottleneck.HOST) or v.speedup_ceiling is None:
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
        # input work gains nothing; a ceiling under 1 is noise, never a loss to quote as measured
        expected_speedup=1.0 if v.speedup_ceiling >= 1.0 else None,
        measured=True,
        evidence=cited(v, FindingKind.DATA_WAIT, FindingKind.CEILING, FindingKind.CEILING_UNEXPLAINED),
    )


def straggler_input(f: Facts, v: Verdict) -> Recommendation | None:
    """A data-parallel job whose straggler's own input pipeline holds it back, with what freeing
    it alone gave the job measured."""
    freed = next(iter(v.of(FindingKind.STRAGGLER_FREED)), None)
    gain = freed.values.get("job_gain") if freed is not None else None
    rank = v.slowest_rank
    if gain is None or rank is None or gain <= 1 + f.noise:
        return None
    return Recommendation(
        id="straggler-input",
        title=f"Make rank {rank}'s input pipeline keep up with the other ranks'",
        detail=(
            f"Every rank waits for rank {rank} at each step's all-reduce, and rank {rank} waits for its data. "
            "Look for what differs on its side: its shard (larger or slower samples), its node's storage, "
            "or fewer cores for its workers; more workers or prefetch on that rank alone also help. "
            f"Measured: with its input pipeline free the job ran {gain:.2f}x as fast."
        ),
        expected_speedup=capped(round(gain, 2), f.ceiling),
        measured=True,
        evidence=cited(v, FindingKind.STRAGGLER, FindingKind.STRAGGLER_FREED),
    )


def straggler_step(f: Facts, v: Verdict) -> Recommendation | None:
    """A data-parallel job whose straggler's step is slower than the others': the gain of bringing
    it to theirs, estimated from the others' busy time."""
    lagging = next(iter(v.of(FindingKind.STRAGGLER)), None)
    if lagging is None or "rank_step_busy_ms" not in lagging.values or v.slowest_rank is None:
        return None
    step, top, middle = (lagging.values.get(k) for k in ("rank_step_ms", "rank_step_busy_ms", "others_step_busy_ms"))
    if step is None or top is None or middle is None or step <= 0:
        return None
    gain = step / max(step - (top - middle), middle)
    rank = v.slowest_rank
    return Recommendation(
        id="straggler-step",
        title=f"Find why rank {rank}'s step is slower than the other ranks'",
        detail=(
            f"Every rank waits for rank {rank} at each step's all-reduce. Its step does more work or runs "
            "on slower hardware: a slower or throttled GPU (check its clocks and temperature), an uneven "
            "shard (longer sequences, larger images), or other work on its device or cores. "
            f"Estimated: with its step as quick as the others', the job would run {gain:.2f}x as fast."
        ),
        expected_speedup=round(gain, 2),
        measured=False,
        evidence=cited(v, FindingKind.STRAGGLER),
    )
