"""The noise rules, each on hand-computed figures."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from tests.unit import builders as b


def test_two_runs_are_told_apart_beyond_their_spreads_added_never_below_the_floor() -> None:
    quiet = dataclasses.replace(b.summary(), throughput_spread=0.0)
    busy = dataclasses.replace(b.summary(), throughput_spread=0.06)
    assert noise.between_runs(quiet, quiet) == th.SWEEP_NOISE_FLOOR
    assert noise.between_runs(busy, busy) == pytest.approx(max(th.SWEEP_NOISE_FLOOR, 0.12))
    assert noise.between_runs(busy, None) == pytest.approx(max(th.SWEEP_NOISE_FLOOR, 0.06))
    assert noise.of_run(busy) == pytest.approx(max(th.SWEEP_NOISE_FLOOR, 0.06))
    assert noise.of_run(None) == th.SWEEP_NOISE_FLOOR


def test_runs_read_as_one_spread_at_least_half_their_range() -> None:
    # 90 and 110 samples/s pooled at 100: half the range is 10%, more than either run's own 4%
    assert noise.pooled_spread([90.0, 110.0], 100.0, 0.04) == pytest.approx(0.10)
    assert noise.pooled_spread([99.0, 101.0], 100.0, 0.04) == pytest.approx(0.04)


def test_a_promise_clears_run_to_run_noise_and_a_gain_its_noise() -> None:
    assert noise.promised(0.0) == th.PROMISE_RUN_NOISE
    assert noise.promised(0.5) == 0.5
    assert noise.beyond(1.10, 0.05) and not noise.beyond(1.04, 0.05) and not noise.beyond(None, 0.05)


def test_pairs_of_runs_are_noisy_by_how_far_their_ceilings_differ() -> None:
    # ceilings 1.2 and 1.4 around 1.3: half the range over the ceiling, 7.7%; each pair's own 4%
    # over the square root of two pairs cubed (2 ** 1.5) is less
    assert noise.over_pairs([1.2, 1.4], 1.3, [0.04, 0.04]) == pytest.approx(0.1 / 1.3)
