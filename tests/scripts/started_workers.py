"""DataLoader workers started the way the command line asks (fork, spawn or forkserver), each sample
a tensor they hand over through shared memory.    python started_workers.py METHOD"""

import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Latency(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, index):
        time.sleep(0.001)
        return torch.full((8,), float(index % 7))


if __name__ == "__main__":  # workers started by spawn or forkserver import this module again
    loader = DataLoader(Latency(), batch_size=4, num_workers=2, multiprocessing_context=sys.argv[1])
    for _epoch in range(100):
        for _batch in loader:
            time.sleep(0.002)
