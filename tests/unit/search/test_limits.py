"""What the search may measure (``search/limits.py``)."""

from __future__ import annotations

import dataclasses

from fastload_cli.analyzer.search import limits
from fastload_cli.analyzer.search.limits import Limits
from tests.unit.search.sweeps import GIB, pt


def test_projected_rss_extrapolates_from_the_two_largest_settings() -> None:
    points = [pt(0, 1.0, rss=GIB), pt(2, 1.0, rss=2 * GIB), pt(4, 1.0, rss=4 * GIB)]
    assert limits.projected_rss(points, 8) == 8 * GIB
    assert limits.projected_rss(points, 4) is None  # measured, not projected
    assert limits.projected_rss(points[:1], 8) is None  # one setting: no per-worker cost yet


def test_limits_take_the_epoch_length_from_the_loader() -> None:
    from tests.unit import builders as b

    loader = dataclasses.replace(b.loader(num_workers=2), dataset_len=1000, batch_size=16)
    limits = Limits().with_loader(loader)
    assert limits.epoch_batches == 62
    assert limits.prefetch_factor == 2
    assert limits.too_many(8) is None  # 16 at the start + 3 rounds of 8 + 16 drained = 56 of 62 batches
    assert limits.too_many(9) is not None
