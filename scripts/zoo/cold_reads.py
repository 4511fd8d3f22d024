"""Train on large files read cold from disk: every file is evicted from the page cache after it is
read (posix_fadvise DONTNEED on that file only), so each epoch reads the disk again.

Planted: io.    python cold_reads.py [--epochs N] [--workers N]
"""

import argparse
import os

import torch
from _zoo_data import large_files, train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class ColdFiles(Dataset):
    def __init__(self, root):
        self.files = sorted(root.glob("*.bin"))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        fd = os.open(self.files[index], os.O_RDONLY)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # this file only: the next read is cold
        finally:
            os.close(fd)
        head = torch.frombuffer(bytearray(chunks[0][:4096]), dtype=torch.uint8).float() / 255
        return head, index % 10


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    loader = DataLoader(ColdFiles(large_files()), batch_size=4, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(4096, 64), nn.ReLU(), nn.Linear(64, 10))
    train(loader, model, epochs=args.epochs)


if __name__ == "__main__":
    main()
