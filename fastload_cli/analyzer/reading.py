"""The speedup ceiling read in a paragraph, for ``synthetic-compare``."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.cause import rate
from fastload_cli.analyzer.epoch_cost import restart_clause
from fastload_cli.analyzer.facts import Facts
from fastload_cli.formatting import pct
from fastload_cli.records import Verdict


def read_ceiling(f: Facts, v: Verdict) -> str:
    """One paragraph on what the real/synthetic (and no-aug) comparison says."""
    ceiling, real, synthetic = f.ceiling, f.real, f.synthetic
    if ceiling is None or real is None or synthetic is None:
        return (
            "The speedup ceiling could not be measured (see the caveats), so this comparison cannot say "
            "how much a faster input pipeline would help."
        )
    rates = f"({rate(real)} real, {rate(synthetic)} with one cached batch replayed{restart_clause(f)})"
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
