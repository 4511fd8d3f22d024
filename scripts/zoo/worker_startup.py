"""Short epochs whose workers are slow to start (each fetches a large vocabulary in
worker_init_fn, 1.5 s) and are started again every epoch: persistent_workers is off. Once
started, the workers keep up with the step easily.

Planted: io, from worker start-up every epoch (the workers wait, they do not compute), with
persistent_workers as the fix.    python worker_startup.py
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
