"""Large float32 batches copied to the GPU from pageable memory, for a model that barely uses them:
the host-to-device copy is the limit (64 x 3 x 512 x 512 float32 = 201 MB a batch).

Planted: transfer. ``--uint8`` sends the same frames as uint8 (a quarter of the bytes) and
converts them on the device, as fastload's uint8-transfer advice says; a plain run of each tells
which change the copies answer to (``scripts/bench_gpu_truth.py``).
    python gpu_transfer.py [--uint8]
"""

import argparse

import torch
from _gpu import cuda_device, train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self, uint8: bool = False):
        frame = torch.rand(3, 512, 512)
        self.frame = (frame * 255).to(torch.uint8) if uint8 else frame

    def __len__(self):
        return 2_048

    def __getitem__(self, index):
        return self.frame, index % 10


class ToFloat(nn.Module):
    """uint8 frames made float on the device, scaled as the float32 frames are."""

    def forward(self, x):
        return x.float().div_(255) if x.dtype == torch.uint8 else x


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--uint8", action="store_true", help="send uint8 frames, converted on the device")
    args = parser.parse_args()
    device = cuda_device()
    loader = DataLoader(Frames(args.uint8), batch_size=64, num_workers=4)
    model = nn.Sequential(ToFloat(), nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(192, 10)).to(device)
    train(loader, model, device)


if __name__ == "__main__":
    main()
