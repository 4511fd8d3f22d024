"""A data set whose samples change every epoch (a curriculum the script steps with ``set_epoch``),
with nothing random in it: a cache of its samples keyed by index alone returns the first epoch's
samples ever after, so training sees other data. ``fastload try --fix cache-decoded`` on it must be
refused by the data guard.

    python stale_cache.py [--epochs N]
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Curriculum(Dataset):
    """Sample ``i`` of epoch ``e``: harder (larger) as the epochs go."""

    def __init__(self) -> None:
        self.epoch = 0
        self.transform = None  # where a decoded sample would be augmented: nothing here

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int):
        sample = torch.full((32,), float(index + 1000 * self.epoch))
        return (self.transform(sample) if self.transform else sample), index % 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()
    torch.manual_seed(0)
    dataset = Curriculum()
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=2)
    model = nn.Linear(32, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    for epoch in range(args.epochs):
        dataset.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
