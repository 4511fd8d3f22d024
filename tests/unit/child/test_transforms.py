"""no-aug: random transforms found and replaced by deterministic, shape-preserving stand-ins."""

from __future__ import annotations

import functools

import pytest
import torch
from PIL import Image
from torch.utils.data import ConcatDataset, Dataset, Subset
from torchvision import transforms as v1
from torchvision.transforms import v2

from fastload_cli.runner.child.samples import check_on_sample, probe
from fastload_cli.runner.child.standins import Identity
from fastload_cli.runner.child.transforms import derandomize, find_augmentations

NONE: frozenset[str] = frozenset()


class Images(Dataset):
    def __init__(self, transform=None, target_transform=None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        image = Image.new("RGB", (96 + 8 * i, 80), color=(10 * i, 100, 200))
        return self.transform(image) if self.transform else image, i


class Cutout:
    def __call__(self, x):
        return x


class RandomBrightnessShift:
    def __call__(self, x):
        return x


def names(found) -> list[str]:
    return [f.original.split("(")[0] for f in found]


@pytest.mark.parametrize("tv", [v1, v2], ids=["v1", "v2"])
def test_random_crops_become_deterministic_with_the_same_output_shape(tv) -> None:
    to_tensor = [v1.ToTensor()] if tv is v1 else [v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]
    pipeline = tv.Compose([tv.RandomResizedCrop((64, 48)), tv.RandomCrop(40), *to_tensor])
    dataset = Images(transform=pipeline)
    before = [dataset[i][0].shape for i in range(4)]
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["RandomResizedCrop", "RandomCrop"]
    after = [dataset[i][0] for i in range(4)]
    assert [t.shape for t in after] == before
    assert torch.equal(dataset[2][0], dataset[2][0])  # deterministic now


@pytest.mark.parametrize("tv", [v1, v2], ids=["v1", "v2"])
def test_colour_geometry_and_erasing_become_identity(tv) -> None:
    dataset = Images(
        transform=tv.Compose(
            [
                tv.RandomHorizontalFlip(),
                tv.ColorJitter(0.4, 0.4, 0.4, 0.1),
                tv.RandomRotation(10),
                tv.RandomApply([tv.GaussianBlur(3)], p=0.5),
                tv.Resize(32),
            ]
        )
    )
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["RandomHorizontalFlip", "ColorJitter", "RandomRotation", "RandomApply"]
    kept = dataset.transform.transforms
    assert isinstance(kept[0], Identity) and type(kept[4]).__name__ == "Resize"


def test_deterministic_pipelines_are_left_alone() -> None:
    pipeline = v1.Compose([v1.Resize(32), v1.CenterCrop(32), v1.ToTensor()])
    dataset = Images(transform=pipeline)
    assert derandomize(dataset, NONE, NONE).found == []
    assert dataset.transform is pipeline


def test_nested_datasets_subset_and_concat_are_walked() -> None:
    inner_a = Images(transform=v1.Compose([v1.RandomHorizontalFlip(), v1.ToTensor()]))
    inner_b = Images(transform=v2.RandomVerticalFlip())
    dataset = ConcatDataset([Subset(inner_a, [0, 1]), inner_b])
    walk = derandomize(dataset, NONE, NONE)
    locations = [f.location for f in walk.found]
    assert locations == ["dataset.datasets[0].dataset.transform[0]", "dataset.datasets[1].transform"]
    assert isinstance(inner_b.transform, Identity)


def test_user_classes_named_like_augmentation_are_guessed() -> None:
    dataset = Images(transform=v1.Compose([Cutout(), RandomBrightnessShift(), v1.ToTensor()]))
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["Cutout", "RandomBrightnessShift"]
    assert all(f.guessed for f in walk.found)


def test_keep_and_drop_override_by_class_name() -> None:
    dataset = Images(transform=v1.Compose([v1.RandomHorizontalFlip(), v1.Resize(32), v1.ToTensor()]))
    walk = derandomize(dataset, frozenset({"RandomHorizontalFlip"}), frozenset({"Resize"}))
    assert names(walk.found) == ["Resize"]
    assert type(dataset.transform.transforms[0]).__name__ == "RandomHorizontalFlip"


def test_target_transforms_and_torchvision_standard_transform() -> None:
    from torchvision.datasets.vision import StandardTransform

    dataset = Images(transform=v1.RandomHorizontalFlip(), target_transform=Cutout())
    dataset.transforms = StandardTransform(dataset.transform, dataset.target_transform)
    derandomize(dataset, NONE, NONE)
    assert isinstance(dataset.transforms.transform, Identity)
    assert isinstance(dataset.transforms.target_transform, Identity)


def test_finding_changes_nothing() -> None:
    pipeline = v1.Compose([v1.RandomHorizontalFlip(), v1.ToTensor()])
    inner = Images(transform=pipeline)
    found = find_augmentations(Subset(inner, [0]), NONE, NONE)
    assert names(found) == ["RandomHorizontalFlip"]
    assert inner.transform is pipeline and isinstance(pipeline.transforms[0], v1.RandomHorizontalFlip)


def test_identity_passes_one_or_several_inputs_through() -> None:
    assert Identity()(3) == 3
    assert Identity()(1, 2) == (1, 2)


class RandomResizedCropAndInterpolation:
    """A library's random resized crop, as timm writes it: a ``size`` attribute, its own
    interpolation setting ("random"), and images of any size in, ``size`` out."""

    def __init__(self, size, scale=(0.08, 1.0), interpolation="random") -> None:
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        self.scale, self.interpolation = scale, interpolation

    def __call__(self, image):
        return v1.RandomResizedCrop(self.size)(image)


def test_a_librarys_random_resized_crop_becomes_a_crop_to_the_same_size() -> None:
    # images of varied sizes: an identity stand-in would hand the collate differently sized tensors
    dataset = Images(transform=v1.Compose([RandomResizedCropAndInterpolation(32), v1.ToTensor()]))
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["RandomResizedCropAndInterpolation"]
    assert walk.found[0].guessed
    assert {dataset[i][0].shape for i in range(4)} == {torch.Size([3, 32, 32])}


class RandomShrink:
    """A user transform whose name says it is random and which changes the shape: no ``size``
    attribute tells fastload what a stand-in must keep."""

    def __call__(self, image):
        return image.resize((20, 20))


def test_a_stand_in_that_changes_a_real_sample_is_undone_and_said() -> None:
    shrink = RandomShrink()
    dataset = Images(transform=v1.Compose([shrink, v1.ToTensor()]))
    before = probe(dataset)
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["RandomShrink"]
    why = check_on_sample(dataset, walk, before)
    assert why is not None and "changed the first sample" in why and "20, 20" in why
    assert dataset.transform.transforms[0] is shrink  # the original pipeline is back
    assert dataset[1][0].shape == torch.Size([3, 20, 20])


def test_an_undone_stand_in_is_reported_as_undone_with_its_reason() -> None:
    from fastload_cli.records import ChildSpec, EventKind
    from fastload_cli.runner.child.modes import derandomize as no_aug
    from tests.unit.child.test_interleave import Events

    events = Events()
    dataset = Images(transform=v1.Compose([RandomShrink(), v1.ToTensor()]))
    no_aug(dataset, ChildSpec(warmup=0), events, loader_id=1)  # type: ignore[arg-type]
    [(kind, said)] = events.seen
    assert kind is EventKind.SUBSTITUTION and said["original"].startswith("RandomShrink")
    assert said["undone"] and "changed the first sample" in said["reason"]


def test_stand_ins_that_keep_the_sample_are_kept() -> None:
    dataset = Images(transform=v1.Compose([v1.Resize((24, 24)), v1.ColorJitter(0.4), v1.ToTensor()]))
    before = probe(dataset)
    walk = derandomize(dataset, NONE, NONE)
    assert check_on_sample(dataset, walk, before) is None
    assert isinstance(dataset.transform.transforms[1], Identity)


# Pipelines attached the way Hugging Face's examples and many scripts attach them: a function that
# uses a Compose from its module's globals or from an enclosing function, passed to
# ``datasets.Dataset.set_transform`` (kept in the dataset's ``_format_kwargs``) or wrapped in a partial.
TRAIN_TRANSFORMS = v1.Compose([v1.RandomResizedCrop((40, 32)), v1.RandomHorizontalFlip(), v1.ToTensor()])


def preprocess_train(batch: dict) -> dict:
    batch["pixel_values"] = [TRAIN_TRANSFORMS(image.convert("RGB")) for image in batch["image"]]
    return batch


def closure_over(pipeline):
    def preprocess(batch: dict) -> dict:
        batch["pixel_values"] = [pipeline(image) for image in batch["image"]]
        return batch

    return preprocess


def apply(batch: dict, transforms) -> dict:
    batch["pixel_values"] = [transforms(image) for image in batch["image"]]
    return batch


class FormattedDataset:
    """What fastload sees of a ``datasets.Dataset`` after ``set_transform(fn)``: ``fn`` in its format
    arguments, called on a batch of one example at each index."""

    def __init__(self, transform) -> None:
        self._format_kwargs = {"transform": transform}

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> dict:
        image = Image.linear_gradient("L").resize((96 + 8 * i, 80)).convert("RGB")  # crops and flips show
        batch = self._format_kwargs["transform"]({"image": [image]})
        return {"pixel_values": batch["pixel_values"][0]}


@pytest.mark.parametrize(
    "transform",
    [
        preprocess_train,
        closure_over(v1.Compose([v1.RandomResizedCrop((40, 32)), v1.ColorJitter(0.4), v1.ToTensor()])),
        functools.partial(apply, transforms=v1.Compose([v1.RandomResizedCrop((40, 32)), v1.ToTensor()])),
    ],
    ids=["set_transform-global", "closure", "partial"],
)
def test_pipelines_a_function_uses_are_found_replaced_checked_and_restored(transform) -> None:
    dataset = FormattedDataset(transform)
    before = probe(dataset)
    assert "RandomResizedCrop" in names(find_augmentations(dataset, NONE, NONE))
    assert probe(dataset) == before and dataset._format_kwargs["transform"] is transform  # finding changes nothing
    walk = derandomize(dataset, NONE, NONE)
    assert "RandomResizedCrop" in names(walk.found) and not walk.problems
    assert check_on_sample(dataset, walk, before) is None  # the same shapes, now deterministic
    assert torch.equal(dataset[1]["pixel_values"], dataset[1]["pixel_values"])
    walk.restore()
    assert TRAIN_TRANSFORMS.transforms[0].__class__.__name__ == "RandomResizedCrop"
    # random again: two crops of the same rows of this top-to-bottom gradient are equal, as about
    # one pair of draws in 130 is, so one of several draws must differ from the first
    first = dataset[1]["pixel_values"]
    assert any(not torch.equal(first, dataset[1]["pixel_values"]) for _ in range(8))


def test_helpers_a_function_calls_are_searched_but_never_replaced_themselves() -> None:
    def shift_labels(batch: dict) -> dict:  # named like augmentation, but not a transform: never replaced
        return preprocess_train(batch)

    dataset = FormattedDataset(shift_labels)
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["RandomResizedCrop", "RandomHorizontalFlip"]
    assert dataset._format_kwargs["transform"] is shift_labels and preprocess_train.__name__ == "preprocess_train"
    walk.restore()


def test_a_pipeline_a_streaming_map_applies_on_the_fly_is_replaced_checked_and_restored() -> None:
    """``datasets.IterableDataset.map(fn)`` keeps ``fn`` in the stream's chain and calls it on each
    example as it streams: the pipeline ``fn`` uses is found there, checked on the stream's first
    example (read again from the start), and restored."""
    datasets = pytest.importorskip("datasets", reason="the frameworks extra (Hugging Face datasets) is not installed")
    images = [Image.linear_gradient("L").resize((96 + 8 * i, 80)).convert("RGB") for i in range(4)]
    table = datasets.Dataset.from_dict({"image": images}, features=datasets.Features({"image": datasets.Image()}))
    stream = table.to_iterable_dataset().map(preprocess_train, batched=True, remove_columns=["image"])
    stream = stream.shuffle(seed=0, buffer_size=2).with_format("torch")  # steps after the map: followed down
    before = probe(stream)
    assert before is not None and "RandomResizedCrop" in names(find_augmentations(stream, NONE, NONE))
    walk = derandomize(stream, NONE, NONE)
    assert names(walk.found) == ["RandomResizedCrop", "RandomHorizontalFlip"] and not walk.problems
    assert check_on_sample(stream, walk, before) is None
    first = [next(iter(stream))["pixel_values"] for _ in range(2)]
    assert torch.equal(*first)  # deterministic now
    walk.restore()
    assert TRAIN_TRANSFORMS.transforms[0].__class__.__name__ == "RandomResizedCrop"


class ClassificationPresetTrain:
    """Shaped like the train preset of torchvision's classification reference: the pipeline built
    from options in ``__init__``, kept in an attribute, applied in ``__call__``. Another pipeline
    it holds but never applies stays as it is."""

    def __init__(self, *, crop_size: int, hflip_prob: float = 0.5, random_erase_prob: float = 0.0, tv=v1) -> None:
        steps = [tv.RandomResizedCrop(crop_size, antialias=True)]
        if hflip_prob > 0:
            steps.append(tv.RandomHorizontalFlip(hflip_prob))
        steps += [tv.TrivialAugmentWide(), tv.PILToTensor(), tv.ConvertImageDtype(torch.float)]
        steps.append(tv.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)))
        if random_erase_prob > 0:
            steps.append(tv.RandomErasing(p=random_erase_prob))
        self.transforms = tv.Compose(steps)
        self.unused = tv.Compose([tv.RandomCrop(8)])

    def __call__(self, img):
        return self._apply(img)

    def _apply(self, img):
        return self.transforms(img)


class Stages:
    """A class around other holders and a dict of transforms, read through a helper method."""

    def __init__(self) -> None:
        self.preset = ClassificationPresetTrain(crop_size=32, random_erase_prob=1.0)
        self.extra = {"jitter": v1.ColorJitter(0.4)}

    def __call__(self, img):
        return self.extra["jitter"](self.preset(img))


@pytest.mark.parametrize("tv", [v1, v2], ids=["v1", "v2"])
def test_pipelines_a_preset_object_holds_are_found_replaced_checked_and_restored(tv) -> None:
    preset = ClassificationPresetTrain(crop_size=40, random_erase_prob=1.0, tv=tv)
    pipeline = preset.transforms
    dataset = Images(transform=preset)
    before = probe(dataset)
    expected = ["RandomResizedCrop", "RandomHorizontalFlip", "TrivialAugmentWide", "RandomErasing"]
    assert names(find_augmentations(dataset, NONE, NONE)) == expected
    assert preset.transforms is pipeline  # finding changes nothing
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == expected and not walk.problems
    assert walk.found[0].location == "dataset.transform.transforms[0]"
    assert dataset.transform is preset and preset.unused.transforms[0].__class__.__name__ == "RandomCrop"
    assert check_on_sample(dataset, walk, before) is None  # the same shapes, now deterministic
    assert torch.equal(dataset[1][0], dataset[1][0])
    walk.restore()
    assert preset.transforms is pipeline


def test_holders_inside_holders_and_dicts_of_transforms_are_followed() -> None:
    stages = Stages()
    walk = derandomize(Images(transform=stages), NONE, NONE)
    assert names(walk.found) == [
        "RandomResizedCrop", "RandomHorizontalFlip", "TrivialAugmentWide", "RandomErasing", "ColorJitter",
    ]  # fmt: skip
    assert walk.found[-1].location == "dataset.transform.extra['jitter']"
    walk.restore()
    assert isinstance(stages.extra["jitter"], v1.ColorJitter)


def test_a_preset_object_with_a_deterministic_pipeline_is_left_alone() -> None:
    preset = ClassificationPresetTrain(crop_size=40, hflip_prob=0.0)
    preset.transforms = v1.Compose([v1.Resize(40), v1.CenterCrop(40), v1.ToTensor()])
    assert find_augmentations(Images(transform=preset), NONE, NONE) == []


def rotate(img, degrees: float, **kwargs):
    return img.rotate(degrees, **kwargs)


class RotateOp:
    """A library's augmentation op, as timm's AugmentOp is: a function and its keyword arguments."""

    def __init__(self) -> None:
        self.aug_fn, self.kwargs = rotate, {"fillcolor": (128, 128, 128)}

    def __call__(self, img):
        return self.aug_fn(img, 10.0, **self.kwargs)


class RandAugmentOps:
    """Named as random augmentation, and holding ops as timm's RandAugment does: replaced whole by
    its name, never taken apart (its ops call their functions with arguments a stand-in lacks)."""

    def __init__(self) -> None:
        self.ops = [RotateOp()]

    def __call__(self, img):
        for op in self.ops:
            img = op(img)
        return img


def test_an_object_named_as_random_augmentation_is_replaced_whole_not_taken_apart() -> None:
    augment = RandAugmentOps()
    dataset = Images(transform=v1.Compose([augment, v1.ToTensor()]))
    walk = derandomize(dataset, NONE, NONE)
    assert names(walk.found) == ["RandAugmentOps"] and not walk.problems
    assert torch.equal(dataset[1][0], dataset[1][0])
    assert augment.ops[0].aug_fn is rotate  # nothing inside it changed
