"""Image classification the way Hugging Face's own example does it
(``examples/pytorch/image-classification/run_image_classification.py``): a ``datasets`` image
dataset, augmentation attached with ``set_transform`` (a module-level ``Compose`` of
RandomResizedCrop, RandomHorizontalFlip, ToTensor and Normalize applied per batch of examples), a
small ViT built from a config (nothing is downloaded), ``Trainer`` with ``dataloader_num_workers``
and ``remove_unused_columns=False``. With ``--stream`` the examples stream instead
(``to_iterable_dataset``) and the same function is applied on the fly with ``map``. With ``--read-ms``
each image waits that long before it is decoded, as a read from network storage does.

    python hf_image_classification.py JPEG_DIR [--workers 2] [--max-steps 75] [--image-size 64] [--stream]
        [--read-ms 0]

JPEG_DIR holds one sub-folder of JPEGs per class under ``train/`` (``make_jpegs.py``).
"""

import argparse
import tempfile
import time
from pathlib import Path

import torch
from datasets import ClassLabel, Dataset, Features
from datasets import Image as ImageFeature
from torchvision.transforms import Compose, Normalize, RandomHorizontalFlip, RandomResizedCrop, ToTensor
from transformers import Trainer, TrainingArguments, ViTConfig, ViTForImageClassification

_train_transforms = None  # set in main(), as the example sets it once it knows the image size
_read_s = 0.0


def image_dataset(root: Path) -> Dataset:
    """The folder as ``load_dataset("imagefolder")`` gives it: an image column decoded on access,
    and class labels."""
    classes = sorted(p.name for p in (root / "train").iterdir() if p.is_dir())
    files = sorted((root / "train").glob("*/*.jpg"))
    columns = {"image": [str(f) for f in files], "label": [classes.index(f.parent.name) for f in files]}
    features = Features({"image": ImageFeature(), "label": ClassLabel(names=classes)})
    return Dataset.from_dict(columns, features=features)


def preprocess_train(example_batch):
    """Apply the train transforms across a batch, as the example does."""
    if _read_s:
        time.sleep(_read_s * len(example_batch["image"]))
    example_batch["pixel_values"] = [_train_transforms(image.convert("RGB")) for image in example_batch["image"]]
    return example_batch


def collate_fn(examples):
    pixel_values = torch.stack([example["pixel_values"] for example in examples])
    labels = torch.tensor([example["label"] for example in examples])
    return {"pixel_values": pixel_values, "labels": labels}


def main():
    global _train_transforms, _read_s
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=75)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--stream", action="store_true", help="stream the examples and map them on the fly")
    parser.add_argument("--read-ms", type=float, default=0.0, help="wait this long per image, as storage does")
    args = parser.parse_args()
    _read_s = args.read_ms / 1000
    size = args.image_size
    normalize = Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
    _train_transforms = Compose([RandomResizedCrop(size), RandomHorizontalFlip(), ToTensor(), normalize])
    dataset = image_dataset(Path(args.data))
    num_labels = dataset.features["label"].num_classes
    if args.stream:  # one shard per worker, so that every worker streams
        dataset = dataset.to_iterable_dataset(num_shards=max(args.workers, 1)).map(preprocess_train, batched=True)
    else:
        dataset.set_transform(preprocess_train)
    config = ViTConfig(
        image_size=size, patch_size=8, hidden_size=96, num_hidden_layers=4, num_attention_heads=4,
        intermediate_size=192, num_labels=num_labels,
    )  # fmt: skip
    model = ViTForImageClassification(config)
    with tempfile.TemporaryDirectory() as scratch:
        training_args = TrainingArguments(
            output_dir=scratch,
            per_device_train_batch_size=32,
            max_steps=args.max_steps,
            learning_rate=2e-4,
            dataloader_num_workers=args.workers,
            remove_unused_columns=False,
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            disable_tqdm=True,
            use_cpu=True,
        )
        trainer = Trainer(model=model, args=training_args, train_dataset=dataset, data_collator=collate_fn)
        trainer.train()


if __name__ == "__main__":
    main()
