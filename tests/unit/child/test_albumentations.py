"""no-aug on albumentations pipelines: random crops become the centred crop of the same size,
other random transforms ``NoOp``, deterministic ones stay; the pipeline is copied with its
members replaced (keyword calls and targets as before), checked on a sample and restored.
Skipped, with the reason, where albumentations is not installed (the ``frameworks`` extra)."""

from __future__ import annotations

import numpy as np
import pytest
from torch.utils.data import Dataset

from fastload_cli.runner.child.fixing import cache_view
from fastload_cli.runner.child.samples import check_on_sample, probe
from fastload_cli.runner.child.transforms import derandomize, find_augmentations

A = pytest.importorskip("albumentations", reason="albumentations is not installed: pip install '.[frameworks]'")
NONE: frozenset[str] = frozenset()


class Photos(Dataset):
    """Images of varied sizes through an albumentations pipeline called with keywords."""

    def __init__(self, transform) -> None:
        self.transform = transform

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        image = np.full((90 + 10 * i, 120, 3), 40 * i, dtype=np.uint8)
        image[::7] = 255  # something a flip or a crop would move
        return self.transform(image=image)["image"], i


def pipeline():  # type: ignore[no-untyped-def]
    return A.Compose(
        [
            A.RandomResizedCrop(size=(48, 40), scale=(0.3, 1.0)),
            A.HorizontalFlip(p=0.5),
            A.OneOf([A.GaussianBlur(), A.MotionBlur()], p=0.5),
            A.ColorJitter(p=1.0),
            A.Normalize(),
        ]
    )


def kinds(found) -> list[str]:
    return [f.original.split("(")[0] for f in found]


def test_random_albumentations_transforms_are_found_and_the_deterministic_kept() -> None:
    found = find_augmentations(Photos(pipeline()), NONE, NONE)
    assert kinds(found) == ["RandomResizedCrop", "HorizontalFlip", "OneOf", "ColorJitter"]
    assert found[0].location == "dataset.transform[0]" and "CenterCrop" in found[0].replacement
    assert [f.replacement for f in found[1:]] == ["NoOp()"] * 3


def test_the_substituted_pipeline_is_deterministic_keeps_the_shape_and_is_restored() -> None:
    original = pipeline()
    dataset = Photos(original)
    before = probe(dataset)
    walk = derandomize(dataset, NONE, NONE)
    assert check_on_sample(dataset, walk, before) is None  # the same shape: kept
    assert dataset.transform is not original and len(original.transforms) == 5  # a copy; the original intact
    assert type(original.transforms[0]).__name__ == "RandomResizedCrop"
    first, again = dataset[2][0], dataset[2][0]
    assert first.shape == (48, 40, 3) and np.array_equal(first, again)
    walk.restore()
    assert dataset.transform is original


def test_a_random_crop_becomes_the_centre_crop_and_a_pipeline_in_a_closure_is_found() -> None:
    crop = A.Compose([A.RandomCrop(height=32, width=32), A.ToGray(p=1.0)])

    def apply(image):  # type: ignore[no-untyped-def]
        return crop(image=image)["image"]

    class Wrapped(Photos):
        def __getitem__(self, i: int):
            return self.transform(np.full((60, 64, 3), i, dtype=np.uint8)), i

    walk = derandomize(Wrapped(apply), NONE, NONE)
    assert kinds(walk.found) == ["RandomCrop"]  # ToGray always applies the same way: kept
    assert type(crop.transforms[0]).__name__ == "CenterCrop"  # replaced where the closure holds it
    walk.restore()
    assert type(crop.transforms[0]).__name__ == "RandomCrop"


def test_keep_leaves_an_albumentations_transform_as_it_is() -> None:
    found = find_augmentations(Photos(pipeline()), frozenset({"ColorJitter", "OneOf"}), NONE)
    assert kinds(found) == ["RandomResizedCrop", "HorizontalFlip"]


def test_decoded_samples_are_cached_apart_from_a_pipeline_called_with_keywords() -> None:
    """cached on an albumentations pipeline: the dataset's keyword call is given the decoded image,
    kept in memory, and the random pipeline runs on it at every access, its result's ``image`` taken
    as the dataset takes it."""
    dataset = Photos(pipeline())
    view, what = cache_view(dataset, 0)
    assert view is not None, what
    assert view.fill(4) == 4 and view.cache.cached == 4
    first, second = view[2], view[2]
    assert probe(view) == probe(Photos(pipeline())) and first[1] == 2
    assert first[0].shape == (48, 40, 3) and not np.array_equal(first[0], second[0])  # augmented every time
