"""Large float32 batches copied to the GPU from pageable memory, for a model that barely uses them:
the host-to-device copy is the limit (64 x 3 x 512 x 512 float32 = 201 MB a batch).

Planted: transfer, with pin_memory as the fix.    python gpu_transfer.py
"""

import torch
from _gpu import cuda_device, train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Frames(Dataset):
    def __init__(self):
        self.frame = torch.rand(3, 512, 512)

    def __len__(self):
        return 2_048

    def __getitem__(self, index):
        return self.frame, index % 10


def main():
    device = cuda_device()
    loader = DataLoader(Frames(), batch_size=64, num_workers=4)
    model = nn.Sequential(nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(192, 10)).to(device)
    train(loader, model, device)


if __name__ == "__main__":
    main()
