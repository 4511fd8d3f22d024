"""Train an MLP on a TensorDataset held in memory, with four DataLoader workers: each batch is a
slice of tensors already in RAM, and the workers only add pickling and handoff.

Planted: compute, with the advice that workers are overhead.    python in_memory_tensors.py
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    features, labels = torch.randn(50_000, 512), torch.randint(0, 10, (50_000,))
    loader = DataLoader(TensorDataset(features, labels), batch_size=256, shuffle=True, num_workers=4)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(100):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
