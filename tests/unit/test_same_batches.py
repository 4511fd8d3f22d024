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
    assert check.same is True and "the same first 4 batches" in check.said and "values included" in check.said


def test_other_values_on_a_deterministic_pipeline_are_a_change() -> None:
    check = compare(keyed("real", ["a", "b", "c", "d"]), keyed("fix:workers=4", ["a", "b", "x", "d"]))
    assert check.same is False and check.said.startswith("batch 2 holds other values")


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
    assert result.batches.startswith("batch 1 holds other values")


def test_values_are_not_compared_where_the_fix_changes_the_workers_threads() -> None:
    # the same samples, computed with one thread instead of many: float results round differently
    check = compare(keyed("real", ["a", "b", "c", "d"]), keyed("fix:worker-threads=1", ["w", "x", "y", "z"]))
    assert check.same is True and "values not compared" in check.said and "threads" in check.said
