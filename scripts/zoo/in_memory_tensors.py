"""Train an MLP on a TensorDataset held in memory, with four DataLoader workers: each batch is a
slice of tensors already in RAM, and the workers only add pickling and handoff.

Planted: cpu, the input pipeline's own overhead: the workers are idle, and handing their batches
over (and their processes beside the step) costs the step time. The fix is num_workers=0.
    python in_memory_tensors.py
"""

import torch
from _zoo_data import train
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    features, labels = torch.randn(50_000, 512), torch.randint(0, 10, (50_000,))
    loader = DataLoader(TensorDataset(features, labels), batch_size=256, shuffle=True, num_workers=4)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    train(loader, model, epochs=100)


if __name__ == "__main__":
    main()
