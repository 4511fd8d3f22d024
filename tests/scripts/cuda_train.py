"""A small CUDA training loop with pinned, non-blocking copies (for the GPU tests)."""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(8192, 512), torch.randint(0, 10, (8192,)))
loader = DataLoader(data, batch_size=256, shuffle=True, num_workers=2, pin_memory=True)
model = nn.Sequential(nn.Linear(512, 4096), nn.ReLU(), nn.Linear(4096, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for _epoch in range(100):
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
