"""Inside the child: albumentations' random transforms and their deterministic stand-ins (no-aug).

Every albumentations transform is applied with a probability ``p``, and most draw their parameters
at random too. One is kept as it is only when it always applies (``p`` of 1) and is known to do the
same thing every time (``Normalize``, ``Resize``, ``CenterCrop``, ...). A random crop becomes the
centred crop of the same size (after resizing its shorter side, for a random resized crop); every
other random transform becomes ``NoOp``, whose output is its input. The containers ``Compose``,
``Sequential`` and ``ReplayCompose`` are walked member by member and copied with their members
replaced; ``OneOf``, ``SomeOf`` and the like pick at random, and become ``NoOp``. The stand-ins
are albumentations transforms themselves, so a pipeline's keyword call (``t(image=x)["image"]``)
and its other targets work as before; the shape check after substitution undoes any that does not.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

# Transforms that do the same thing every time they apply: kept where they always apply.
DETERMINISTIC = frozenset(
    {
        "Normalize", "Resize", "CenterCrop", "Crop", "PadIfNeeded", "LongestMaxSize", "SmallestMaxSize",
        "ToFloat", "FromFloat", "ToGray", "ToRGB", "ToSepia", "ToTensorV2", "NoOp", "Lambda", "Transpose",
        "Equalize", "InvertImg",
    }
)  # fmt: skip
# Random crops whose output size is fixed: (resized first, like RandomResizedCrop) or not.
RESIZED_CROPS = frozenset({"RandomResizedCrop", "RandomSizedCrop", "RandomSizedBBoxSafeCrop"})
PLAIN_CROPS = frozenset({"RandomCrop", "BBoxSafeRandomCrop", "AtLeastOneBBoxRandomCrop"})


def is_albumentations(obj: object) -> bool:
    return type(obj).__module__.startswith("albumentations")


def standin(obj: Any) -> Any | None:
    """A deterministic albumentations transform for ``obj``, or None where ``obj`` is kept."""
    name = type(obj).__name__
    if name in DETERMINISTIC and getattr(obj, "p", 1.0) >= 1.0:
        return None
    album = importlib.import_module("albumentations")
    size = output_size(obj)
    if name in RESIZED_CROPS and size is not None:
        resize = album.SmallestMaxSize(max_size=max(size), interpolation=getattr(obj, "interpolation", 1))
        return album.Sequential([resize, album.CenterCrop(height=size[0], width=size[1])], p=1.0)
    if name in PLAIN_CROPS and size is not None:
        return album.CenterCrop(height=size[0], width=size[1])
    return album.NoOp(p=1.0)


def output_size(obj: Any) -> tuple[int, int] | None:
    """(height, width) a crop declares: its ``size``, or its ``height`` and ``width``."""
    size = getattr(obj, "size", None)
    if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(x, int) for x in size):
        return (size[0], size[1])
    height, width = getattr(obj, "height", None), getattr(obj, "width", None)
    if isinstance(height, int) and isinstance(width, int):
        return (height, width)
    return None


def describe(obj: Any) -> str:
    """A short description: the class, the size it crops or resizes to, its probability below 1,
    a container's members; albumentations' own repr lists every argument."""
    name = type(obj).__name__
    members = getattr(obj, "transforms", None)
    if isinstance(members, (list, tuple)) and members and all(is_albumentations(m) for m in members):
        return f"{name}([{', '.join(describe(m) for m in members)}])"
    size = output_size(obj)
    max_size = getattr(obj, "max_size", None)
    args = [f"{size[0]}x{size[1]}"] if size is not None else [f"max_size={max_size}"] if max_size else []
    p = getattr(obj, "p", 1.0)
    args += [f"p={p}"] if isinstance(p, float) and p < 1.0 else []
    return f"{name}({', '.join(args)})"


def with_members(container: Any, members: list[Any]) -> Any:
    """A copy of an albumentations container holding ``members``: its other settings (targets,
    bounding-box and keypoint processing, checks) as they were, the original untouched."""
    clone = copy.copy(container)
    clone.transforms = members
    return clone
