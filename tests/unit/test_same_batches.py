"""A fix's run against the real run's first batches: the same make-up always, the same values where
the pipeline draws nothing at random; said in the fix's result."""

from __future__ import annotations

import dataclasses

from fastload_cli.analyzer import trials
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.same_batches import compare
from fastload_cli.records import FixSpec, RunResult
from tests.unit import builders as b

LAYOUT = "[0] float32 [32, 3, 64, 64]; [1] int64 [32]"


def drawn(run: RunResult, keys: list[str], iterator_id: int = 1) -> RunResult:
    """``run`` with the first batches of its epoch ``iterator_id`` drawn for these indices' digests."""
    at = [i for i, x in enumerate(run.batches) if x.iterator_id == iterator_id]
    marked = list(run.batches)
    for key, i in zip(keys, at, strict=False):
        marked[i] = dataclasses.replace(marked[i], indices_key=key)
    return dataclasses.replace(run, batches=tuple(marked))


def keyed(mode: str, values: list[str | None], layout: str = LAYOUT, augmentations: tuple[str, ...] = ()) -> RunResult:
    """A run whose first batches carry these fingerprints; its loader with these augmentations."""
    run = b.run(mode, b.batches([5.0] * 30, 10.0), loaders=[b.loader(augmentations=augmentations)], warmup=5)
    marked = [
        dataclasses.replace(x, layout_key=layout, values_key=values[i]) if i < len(values) else x
        for i, x in enumerate(run.batches)
    ]
    return dataclasses.replace(run, batches=tuple(marked))


def test_the_same_batches_values_included_where_nothing_is_drawn_at_random() -> None:
    check = compare(keyed("real", ["a", "b", "c", "d"]), keyed("fix:workers=4", ["a", "b", "c", "d"]))
    assert check.same is True and "4 batches compared" in check.said and "values included" in check.said


def test_other_values_on_a_deterministic_pipeline_are_a_change() -> None:
    check = compare(keyed("real", ["a", "b", "c", "d"]), keyed("fix:workers=4", ["a", "b", "x", "d"]))
    assert check.same is False and check.said.startswith("batch 2 of epoch 1 holds other values")


def test_another_make_up_is_a_change_whatever_the_pipeline_draws() -> None:
    other = "[0] float32 [16, 3, 64, 64]; [1] int64 [16]"
    fixed = keyed("fix:workers=4", ["a"] * 4, layout=other, augmentations=("RandomCrop(32)",))
    check = compare(keyed("real", ["a"] * 4, augmentations=("RandomCrop(32)",)), fixed)
    assert check.same is False and "[16, 3, 64, 64]" in check.said and LAYOUT in check.said


def test_values_are_not_compared_where_the_pipeline_draws_at_random() -> None:
    drawn = ("RandomResizedCrop(size=(64, 64))", "ColorJitter(0.4)")
    check = compare(keyed("real", ["a"] * 4, augmentations=drawn), keyed("fix:workers=4", ["x"] * 4))
    assert check.same is True and "values not compared" in check.said and "RandomResizedCrop, ColorJitter" in check.said


def test_nothing_fingerprinted_is_not_compared() -> None:
    check = compare(keyed("real", []), keyed("fix:workers=4", []))
    assert check.same is None and "not compared" in check.said


def test_the_fixs_result_says_what_the_comparison_found() -> None:
    runs = [keyed("real", ["a"] * 4), keyed("fix:workers=4", ["a", "z", "a", "a"])]
    [result] = trials.results((FixSpec.parse("workers=4"),), runs, [summarize(r) for r in runs])
    assert result.measured and result.same_batches is False and result.batches is not None
    assert result.batches.startswith("batch 1 of epoch 1 holds other values")


def test_values_are_not_compared_where_the_fix_changes_the_workers_threads() -> None:
    # the same samples, computed with one thread instead of many: float results round differently
    check = compare(keyed("real", ["a", "b", "c", "d"]), keyed("fix:worker-threads=1", ["w", "x", "y", "z"]))
    assert check.same is True and "values not compared" in check.said and "threads" in check.said


def test_a_batch_drawn_for_other_samples_is_a_change_whatever_its_values() -> None:
    # a sampler lost when a loader is built again: the same make-up, other indices (values unread)
    augmented = ("RandomCrop(32)",)
    real = drawn(keyed("real", ["a"] * 4, augmentations=augmented), ["i0", "i1", "i2", "i3", "i4", "i5"])
    fixed = drawn(keyed("fix:in-order", ["a"] * 4, augmentations=augmented), ["i0", "i1", "i2", "j3", "i4"])
    check = compare(real, fixed)
    assert check.same is False and "batch 3 of epoch 1" in check.said and "other indices" in check.said


def test_the_same_draws_where_both_runs_measured_them_are_no_change() -> None:
    # the fix's run measured fewer batches: only the batches both measured are compared
    real = drawn(keyed("real", ["a", "b", "c", "d"]), ["i0", "i1", "i2", "i3", "i4", "i5", "i6"])
    fixed = drawn(keyed("fix:persistent-workers", ["a", "b", "c", "d"]), ["i0", "i1", "i2"])
    assert compare(real, fixed).same is True


def two_epochs(mode: str, second_values: str) -> RunResult:
    """A run of two 12-batch epochs, each epoch's first 4 batches fingerprinted."""
    first = b.batches([5.0] * 12, 10.0)
    second = b.batches([5.0] * 12, 10.0, iterator_id=2, start_ns=first[-1].wait_end_ns + 10**6)
    run = b.run(mode, first + second, loaders=[b.loader()], warmup=5)
    marked = [
        dataclasses.replace(x, layout_key=LAYOUT, values_key=second_values if x.iterator_id == 2 else "a")
        if x.index < 4
        else x
        for x in run.batches
    ]
    return dataclasses.replace(run, batches=tuple(marked))


def test_a_second_epoch_with_other_values_names_its_place() -> None:
    # a cache that keeps the first epoch's samples: the second epoch's batches differ
    check = compare(two_epochs("real", "epoch-2"), two_epochs("fix:cache-decoded", "epoch-1"))
    assert check.same is False and check.said.startswith("batch 0 of epoch 2 holds other values")
    assert compare(two_epochs("real", "epoch-2"), two_epochs("fix:cache-decoded", "epoch-2")).same is True


def test_a_second_epoch_is_not_compared_where_the_workers_are_kept_from_the_first() -> None:
    # a sample drawn at random in __getitem__: kept workers carry their generators on into epoch 2
    check = compare(two_epochs("real", "epoch-2"), two_epochs("fix:persistent-workers", "drawn-on"))
    assert check.same is True and "4 batches compared" in check.said
