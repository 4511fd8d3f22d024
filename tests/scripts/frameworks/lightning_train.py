"""Image classification with PyTorch Lightning: a LightningDataModule with torchvision
augmentation, a small CNN as a LightningModule, ``Trainer.fit``.

    python lightning_train.py [--workers 2] [--epochs 1] [--image-size 64] [--samples 2048]
"""

import argparse

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class ImageDataModule(L.LightningDataModule):
    def __init__(self, num_workers: int = 2, batch_size: int = 32, image_size: int = 64, samples: int = 2048):
        super().__init__()
        self.num_workers, self.batch_size = num_workers, batch_size
        self.image_size, self.samples = image_size, samples

    def setup(self, stage=None):
        train_tf = transforms.Compose(
            [
                transforms.RandomResizedCrop(self.image_size, scale=(0.5, 1.0)),
                transforms.RandomHorizontalFlip(),
                transforms.ColorJitter(0.4, 0.4, 0.4, 0.1),
                transforms.RandomRotation(15),
                transforms.GaussianBlur(5),
                transforms.ToTensor(),
                transforms.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)),
            ]
        )
        side = self.image_size * 2
        self.train = datasets.FakeData(self.samples, (3, side, side), num_classes=10, transform=train_tf)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True, num_workers=self.num_workers)


class LitClassifier(L.LightningModule):
    def __init__(self, lr: float = 1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
            nn.Flatten(), nn.Linear(32, 10),
        )  # fmt: skip

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = F.cross_entropy(self.net(images), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--samples", type=int, default=2048)
    args = parser.parse_args()
    L.seed_everything(0)
    data = ImageDataModule(num_workers=args.workers, image_size=args.image_size, samples=args.samples)
    trainer = L.Trainer(
        max_epochs=args.epochs,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(LitClassifier(), datamodule=data)


if __name__ == "__main__":
    main()
