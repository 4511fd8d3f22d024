"""Objects that make introspection fail: fastload must measure around them, never crash the script."""

import torch
from torch.utils.data import DataLoader, Dataset


class Opaque:
    """A batch whose __dict__ cannot be read."""

    def __init__(self, x):
        self.__x = x

    @property
    def __dict__(self):
        raise RuntimeError("no introspection, please")

    @property
    def x(self):
        return self.__x


class Guarded(Dataset):
    @property
    def __dict__(self):
        raise RuntimeError("no introspection, please")

    def __len__(self):
        return 1000

    def __getitem__(self, index):
        return torch.full((4,), float(index))


loader = DataLoader(Guarded(), batch_size=8, collate_fn=lambda items: Opaque(torch.stack(items)))
for _epoch in range(5):
    for batch in loader:
        batch.x.sum()
