"""A large convolutional network on small, cheap inputs: the GPU is busy with the step and the
input pipeline keeps up easily.

Planted: compute.    python gpu_large_model.py
"""

from itertools import pairwise

import torch
from _gpu import cuda_device, train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Noise(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        return torch.rand(3, 64, 64), index % 10


def block(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU())


def main():
    device = cuda_device()
    loader = DataLoader(Noise(), batch_size=64, num_workers=4, pin_memory=True)
    widths = [3, 128, 256, 256, 512]
    model = nn.Sequential(
        *[block(a, b) for a, b in pairwise(widths)], nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)
    ).to(device)
    train(loader, model, device)


if __name__ == "__main__":
    main()
