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


def test_the_search_never_goes_past_what_dev_shm_holds_and_says_so() -> None:
    from fastload_cli.records import BatchLayout, ChildEnv, TensorLeaf
    from tests.unit import builders as b

    leaf = TensorLeaf(
        path="[0]", dtype="float32", shape=(64, 3, 128, 128), nbytes=8 * 2**20, pinned=False, device="cpu"
    )
    run = dataclasses.replace(
        b.run("real", b.batches([5.0] * 20, 20.0)),
        env=ChildEnv(shm_total_bytes=64 * 2**20),
        layouts=(BatchLayout(loader_id=1, python_type="list", leaves=(leaf,)),),
    )
    bounded = Limits().with_loader(b.loader(2)).with_machine(run)
    assert (bounded.shm_bytes, bounded.batch_bytes) == (64 * 2**20, 8 * 2**20)
    # 8 MiB a batch, 2 in flight a worker: 2 workers keep 32 MiB, half of /dev/shm; 3 keep 48 MiB
    assert bounded.shm_full(2) is None
    assert "3 workers would keep 48 MiB of batches in /dev/shm" in (bounded.shm_full(3) or "")
    target, why = limits.capped(8, [], bounded)
    assert target == 2 and "8 workers would keep 128 MiB" in (why or "")
    assert Limits().with_machine(None).shm_bytes is None  # nothing measured: nothing bounded
