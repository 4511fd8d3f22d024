"""Fine-tuning a ResNet-18 on the CPU: images already decoded into a tensor in memory, a flip per
sample on two workers, and a step of about a second (forward and backward at 144 px, batch 32).

Planted: compute (the step).    python slow_step.py
"""

import torch
import torchvision
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __init__(self):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(512, 3, 144, 144, generator=generator)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        if index % 2:
            image = image.flip(-1)
        return image, index % 10


def main():
    torch.manual_seed(0)
    loader = DataLoader(Images(), batch_size=32, shuffle=True, num_workers=2)
    model = torchvision.models.resnet18(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for _epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            optimizer.step()


if __name__ == "__main__":
    main()
