"""Transform presets kept the way torchvision's classification reference keeps them
(references/classification/presets.py): a class builds its pipeline from options, holds it in an
attribute, and applies it in ``__call__``. Written for the zoo; no code of the reference's."""

from __future__ import annotations

import torch
from torchvision import transforms as T

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
AUTO_AUGMENT = {"ta_wide": T.TrivialAugmentWide, "augmix": T.AugMix, "ra": T.RandAugment, "imagenet": T.AutoAugment}


class ClassificationPresetTrain:
    def __init__(
        self, *, crop_size: int, hflip_prob: float = 0.5, auto_augment: str | None = None, erase_prob: float = 0.0
    ):
        steps: list = [T.RandomResizedCrop(crop_size, antialias=True)]
        if hflip_prob > 0:
            steps.append(T.RandomHorizontalFlip(hflip_prob))
        if auto_augment is not None:
            steps.append(AUTO_AUGMENT[auto_augment]())
        steps += [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
        if erase_prob > 0:
            steps.append(T.RandomErasing(p=erase_prob))
        self.transforms = T.Compose(steps)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    def __init__(self, *, crop_size: int, resize_size: int):
        self.transforms = T.Compose(
            [T.Resize(resize_size, antialias=True), T.CenterCrop(crop_size), T.PILToTensor(),
             T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
        )  # fmt: skip

    def __call__(self, img):
        return self.transforms(img)
