"""Image-style augmentation on two CPU workers feeding a small network on the GPU: the GPU waits
for batches most of the time, and NVML shows it idle.

Planted: cpu.    python gpu_input_bound.py
"""

import torch
from _gpu import cuda_device, train
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2


class Photos(Dataset):
    def __init__(self):
        self.augment = v2.Compose(
            [v2.RandomResizedCrop(112, antialias=True), v2.ColorJitter(0.4, 0.4, 0.4), v2.GaussianBlur(9)]
        )

    def __len__(self):
        return 5_000

    def __getitem__(self, index):
        image = torch.randint(0, 256, (3, 240, 320), dtype=torch.uint8)
        return v2.functional.to_dtype(self.augment(image), torch.float32, scale=True), index % 10


def main():
    device = cuda_device()
    loader = DataLoader(Photos(), batch_size=32, num_workers=2, pin_memory=True)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10)).to(device)  # fmt: skip
    train(loader, model, device)


if __name__ == "__main__":
    main()
