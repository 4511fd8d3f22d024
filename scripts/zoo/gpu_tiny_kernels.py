"""A deep stack of tiny layers on small batches: each step launches hundreds of kernels that each
run for microseconds, so Python and kernel launches keep the GPU mostly idle though data is ready.

Planted: host.    python gpu_tiny_kernels.py
"""

import torch
from _gpu import cuda_device, train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = cuda_device()
    data = TensorDataset(torch.randn(20_000, 64), torch.randint(0, 10, (20_000,)))
    loader = DataLoader(data, batch_size=16, shuffle=True)
    layers = [m for _ in range(60) for m in (nn.Linear(64, 64), nn.ReLU())]
    model = nn.Sequential(*layers, nn.Linear(64, 10)).to(device)
    train(loader, model, device)


if __name__ == "__main__":
    main()
