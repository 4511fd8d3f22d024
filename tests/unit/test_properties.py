"""Invariants of the analyzer over arbitrary batch timings (hypothesis)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastload_cli.analyzer import analyze
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.records import Bottleneck
from tests.unit import builders as b

waits = st.lists(st.floats(min_value=0, max_value=500, allow_nan=False), min_size=0, max_size=40)
computes = st.floats(min_value=0, max_value=500, allow_nan=False)


@given(waits, computes, st.integers(min_value=0, max_value=10))
@settings(max_examples=200, deadline=None)
def test_fractions_and_rates_stay_in_range(wait_ms: list[float], compute_ms: float, warmup: int) -> None:
    s = summarize(b.run("real", b.batches(wait_ms, compute_ms), warmup=warmup))
    assert s.batches >= 0
    if s.data_wait_fraction is not None:
        assert 0.0 <= s.data_wait_fraction <= 1.0
    if s.throughput_samples_per_s is not None:
        assert s.throughput_samples_per_s > 0
    if s.step_ms_p50 is not None and s.step_ms_p90 is not None:
        assert 0 <= s.step_ms_p50 <= s.step_ms_p90


@given(waits, computes, waits, computes, waits, computes)
@settings(max_examples=150, deadline=None)
def test_analysis_is_always_a_verdict_with_bounded_gains(
    w1: list[float], c1: float, w2: list[float], c2: float, w3: list[float], c3: float
) -> None:
    runs = [
        b.run("real", b.batches(w1, c1), loaders=[b.loader(augmentations=("ColorJitter()",))]),
        b.run("synthetic", b.batches(w2, c2)),
        b.run("no-aug", b.batches(w3, c3)),
    ]
    analysis = analyze(runs)
    v = analysis.verdict
    assert isinstance(v.bottleneck, Bottleneck)
    assert 0.0 <= v.confidence <= 1.0
    assert v.speedup_ceiling is None or v.speedup_ceiling >= 0
    f = analysis.facts
    for r in analysis.recommendations:
        if r.id == "persistent-workers":
            # bounded by the start-up it removes, which the steady-state ceiling leaves out
            assert f.startup_s is not None and f.epoch_s is not None
            assert r.expected_speedup == pytest.approx((f.epoch_s + f.startup_s) / f.epoch_s)
            continue
        assert r.expected_speedup is None or (v.speedup_ceiling is not None and r.expected_speedup <= v.speedup_ceiling)


def test_a_synthetic_run_that_replayed_nothing_gives_no_ceiling() -> None:
    from fastload_cli.records import Substitution

    real = b.run("real", b.batches([100] + [30] * 19, 10))
    not_replayed = dataclasses.replace(
        b.run("synthetic", b.batches([100] + [1] * 19, 10)),
        batches=tuple(b.batches([100] + [1] * 19, 10)),  # synthetic=False: the loader stayed real
        substitutions=(
            Substitution(
                loader_id=1, location="synthetic replay", original="Opaque batch cannot be copied", replacement="-"
            ),
        ),
    )
    analysis = analyze([real, not_replayed])
    assert analysis.verdict.speedup_ceiling is None
    assert any("replayed no batch (Opaque batch cannot be copied)" in c for c in analysis.verdict.caveats)


fractions = st.floats(min_value=0, max_value=1, allow_nan=False)


@given(
    fractions,
    fractions,
    fractions,
    st.sampled_from([0.0, 2e5, 1.4e6, 5e7]),
    st.sampled_from([None, 0.0, 0.02, 0.2]),
    st.sampled_from([None, 0.0, 0.3]),
    st.floats(min_value=5, max_value=30, allow_nan=False),
    st.floats(min_value=0.8, max_value=3, allow_nan=False),
)
@settings(max_examples=300, deadline=None)
def test_no_evidence_is_said_twice(
    wait: float, busy: float, system: float, reads: float, iowait: float | None, blocked: float | None,
    compute_ms: float, ceiling: float,
) -> None:  # fmt: skip
    from fastload_cli.analyzer.facts import Facts
    from fastload_cli.analyzer.verdict import decide

    real = dataclasses.replace(
        b.summary(wait=wait, busy=busy, system=system, compute_ms=compute_ms),
        read_bytes_per_s=reads,
        iowait_fraction=iowait,
        loader_blocked_fraction=blocked,
    )
    synthetic = b.summary("synthetic", throughput=100.0 * ceiling, compute_ms=10.0)
    evidence = decide(Facts(real=real, synthetic=synthetic, loader=b.loader(), cpu_count=2)).evidence
    assert len(set(evidence)) == len(evidence), evidence
    assert sum("MB/s" in line for line in evidence) <= 1, evidence  # the read rate is quoted once at most
