"""Short epochs whose workers are expensive to start (each loads a large vocabulary in
worker_init_fn) and are started again every epoch: persistent_workers is off.

Planted: compute between epochs, with per-epoch start-up worth persistent_workers.
    python worker_startup.py
"""

import time

import torch
from _zoo_data import train
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Tokens(Dataset):
    def __len__(self):
        return 640

    def __getitem__(self, index):
        return torch.randn(128), index % 10


def load_vocabulary(worker_id):
    time.sleep(1.5)  # reading a vocabulary and building lookup tables


def main():
    loader = DataLoader(Tokens(), batch_size=16, num_workers=2, worker_init_fn=load_vocabulary)
    model = nn.Sequential(nn.Linear(128, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10))
    train(loader, model, epochs=100)


if __name__ == "__main__":
    main()
