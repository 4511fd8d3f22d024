"""Image classification the timm way: ``create_dataset`` on a folder of JPEGs (one folder per
class, images of varied sizes), ``create_transform`` through ``create_loader``, ``create_model``.

    python timm_train.py DATA_DIR [--workers 2] [--img-size 64] [--model resnet10t] [--epochs 1]
"""

import argparse

import torch
from timm import create_model
from timm.data import create_dataset, create_loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir")
    parser.add_argument("-j", "--workers", type=int, default=2)
    parser.add_argument("-b", "--batch-size", type=int, default=32)
    parser.add_argument("--img-size", type=int, default=64)
    parser.add_argument("--model", default="resnet10t")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--aa", default="rand-m9-mstd0.5", help="AutoAugment policy")
    args = parser.parse_args()

    dataset = create_dataset("", root=args.data_dir, split="train", is_training=True)
    loader = create_loader(
        dataset,
        input_size=(3, args.img_size, args.img_size),
        batch_size=args.batch_size,
        is_training=True,
        use_prefetcher=False,
        auto_augment=args.aa,
        num_workers=args.workers,
        device=torch.device("cpu"),
    )
    model = create_model(args.model, num_classes=len(dataset.reader.class_to_idx))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for _ in range(args.epochs):
        for images, targets in loader:
            loss = loss_fn(model(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
