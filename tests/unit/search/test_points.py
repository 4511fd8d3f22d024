"""Measured settings and the noise between them (``search/points.py``)."""

from __future__ import annotations

import pytest

from fastload_cli.analyzer.search import points
from tests.unit.search.sweeps import pt


def test_a_difference_within_the_noise_floor_is_not_faster() -> None:
    assert not points.faster(pt(4, 104.0), pt(2, 100.0))
    assert points.faster(pt(4, 106.0), pt(2, 100.0))


def test_a_run_with_a_wide_spread_widens_the_noise() -> None:
    assert not points.faster(pt(4, 110.0, spread=0.15), pt(2, 100.0))
    assert points.faster(pt(4, 120.0, spread=0.15), pt(2, 100.0))


def test_a_failed_point_is_never_faster() -> None:
    assert not points.faster(pt(4, None), pt(2, 100.0))
    assert not points.faster(pt(4, 100.0), pt(2, None))


def test_repeated_runs_pool_into_their_mean_with_the_spread_between_them() -> None:
    pooled = points.per_setting([pt(2, 100.0, spread=0.02), pt(4, 150.0), pt(2, 120.0, spread=0.03)])
    assert [p.workers for p in pooled] == [2, 4]
    assert pooled[0].throughput_samples_per_s == pytest.approx(110.0)
    assert pooled[0].spread == pytest.approx(10.0 / 110.0)
    assert pooled[0].runs == 2
