"""Inside the child: what replaces a random transform in the ``no-aug`` mode: a deterministic,
shape-preserving stand-in (a centred crop for a random crop, the identity for colour, geometry
and erasing), and how a transform is recognised as random (torchvision's classes, albumentations',
or a name that says so). Only the stdlib is imported at module level.
"""

from __future__ import annotations

import functools
import re
import types
from typing import Any

from fastload_cli.runner.child import albumentations_standins as album

# torchvision classes (v1 ``transforms`` and ``transforms.v2``) that are random augmentation
# whose output shape does not depend on the randomness: replaced by the identity.
IDENTITY_STANDINS = frozenset(
    {
        "ColorJitter", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation",
        "RandomAffine", "RandomPerspective", "RandomErasing", "RandomGrayscale", "RandomInvert",
        "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness", "RandomAutocontrast",
        "RandomEqualize", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix",
        "GaussianBlur", "GaussianNoise", "ElasticTransform", "RandomPhotometricDistort",
        "RandomChannelPermutation", "JPEG", "RandomApply", "MixUp", "CutMix", "RandomZoomOut",
        "RandomIoUCrop", "ScaleJitter", "RandomShortestSize", "RandomResize",
    }
)  # fmt: skip

# Words in a user class (or function) name that say it is random augmentation.
GUESS_PATTERN = re.compile(
    r"random|jitter|cutout|cutmix|mixup|noise|flip|eras|augment|augmix|blur|rotat|perturb|"
    r"distort|shift|dropout|mosaic",
    re.IGNORECASE,
)


class Identity:
    """Stand-in for a random augmentation: returns its input(s) unchanged."""

    def __call__(self, *inputs: Any) -> Any:
        return inputs[0] if len(inputs) == 1 else inputs

    def __repr__(self) -> str:
        return "Identity()"


def callable_name(obj: object) -> str:
    """The class name of a transform object; the function's own name for a plain function."""
    if isinstance(obj, functools.partial):
        return callable_name(obj.func)
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return obj.__name__
    if type(obj).__name__ == "Lambda" and hasattr(obj, "lambd"):
        return callable_name(obj.lambd)
    return type(obj).__name__


def is_torchvision(obj: object) -> bool:
    return type(obj).__module__.startswith("torchvision.transforms")


def _is_v2(obj: object) -> bool:
    return type(obj).__module__.startswith("torchvision.transforms.v2")


def tv_module(obj: object) -> Any:
    import importlib

    return importlib.import_module("torchvision.transforms.v2" if _is_v2(obj) else "torchvision.transforms")


def fixed_size(obj: object) -> tuple[int, int] | None:
    """The output size a crop or resize transform declares in its ``size`` attribute: an int, or
    (height, width). None when it declares none."""
    size = getattr(obj, "size", None)
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return (size, size)
    if isinstance(size, (tuple, list)) and len(size) in (1, 2) and all(isinstance(x, int) for x in size):
        return (size[0], size[-1])
    return None


def _crop_standin(obj: Any, size: tuple[int, int]) -> Any:
    """A deterministic crop to the same size: RandomCrop(s) -> CenterCrop(s); a random resized
    crop (torchvision's, or a library's such as timm's) -> Resize + CenterCrop(s)."""
    tv = tv_module(obj)
    if type(obj).__name__ == "RandomCrop":
        return tv.CenterCrop(size)
    kwargs: dict[str, Any] = {}
    if is_torchvision(obj):  # a library's own interpolation setting may be a name or "random"
        kwargs["interpolation"] = obj.interpolation
        if getattr(obj, "antialias", None) is not None:
            kwargs["antialias"] = obj.antialias
    return tv.Compose([tv.Resize(max(size), **kwargs), tv.CenterCrop(size)])


# A user or library class whose name says it crops or resizes at random (timm's
# RandomResizedCropAndInterpolation): its output size is fixed, so its stand-in must keep it.
RANDOM_RESIZE = re.compile(r"random.*(crop|resiz|scale)", re.IGNORECASE)


def standin(obj: Any, keep: frozenset[str], drop: frozenset[str]) -> tuple[Any, bool] | None:
    """(replacement, guessed) for a random transform, or None when ``obj`` is kept as it is."""
    name = callable_name(obj)
    if name in keep:
        return None
    if name in drop:
        return Identity(), False
    if album.is_albumentations(obj):
        found = album.standin(obj)
        return (found, False) if found is not None else None
    size = fixed_size(obj)
    if is_torchvision(obj):
        if name in ("RandomResizedCrop", "RandomCrop") and size is not None:
            return _crop_standin(obj, size), False
        if name in IDENTITY_STANDINS:
            return Identity(), False
        return None
    if RANDOM_RESIZE.search(name) and size is not None and callable(obj):
        return _crop_standin(obj, size), True
    if GUESS_PATTERN.search(name) and callable(obj):
        return Identity(), True
    return None
