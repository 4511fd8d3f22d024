"""Measured settings and the noise between them (``search/points.py``)."""

from __future__ import annotations

import pytest

from fastload_cli.analyzer.search import points
from fastload_cli.records import RunStatus
from tests.unit import builders as b
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


def test_a_run_the_script_ended_by_raising_measures_no_rate_for_its_setting() -> None:
    # a setting whose run raised after its first batch: that batch's pace is not the setting's
    failed = points.point(b.summary("workers=7", throughput=2849.0, workers=7, batches=1, status=RunStatus.FAILED))
    assert failed.throughput_samples_per_s is None and failed.workers == 7
    timed_out = points.point(b.summary("workers=7", throughput=120.0, status=RunStatus.TIMEOUT))
    assert timed_out.throughput_samples_per_s == 120.0  # a window measured before the limit is one


def test_repeated_runs_pool_into_their_mean_with_the_spread_between_them() -> None:
    pooled = points.per_setting([pt(2, 100.0, spread=0.02), pt(4, 150.0), pt(2, 120.0, spread=0.03)])
    assert [p.workers for p in pooled] == [2, 4]
    assert pooled[0].throughput_samples_per_s == pytest.approx(110.0)
    assert pooled[0].spread == pytest.approx(10.0 / 110.0)
    assert pooled[0].runs == 2
