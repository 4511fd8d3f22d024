"""Train a small network on samples stored one file per sample on slow, remote storage.

Each read pays a round trip to the storage server (emulated here with a fixed delay per read,
as on a network file system or an object store), then decodes raw float32 bytes. Two workers
issue reads; most of their time is spent waiting, not computing.

    python storage_latency.py [--epochs N] [--steps N] [--device D] [--latency-ms MS] [--workers N]
"""

import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from _example_common import parse_args, tensor_files, train


class RemoteFiles(Dataset):
    def __init__(self, root: Path, latency_s: float) -> None:
        self.files = sorted(root.glob("*.bin"))
        self.latency_s = latency_s

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int):
        time.sleep(self.latency_s)  # the storage round trip
        raw = bytearray(self.files[index].read_bytes())
        sample = torch.frombuffer(raw, dtype=torch.float32).view(3, 32, 32)
        return sample, index % 10


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], batch_size=16, workers=2, latency_ms=8.0)

    torch.manual_seed(0)
    dataset = RemoteFiles(tensor_files(), args.latency_ms / 1000)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train(loader, model, optimizer, epochs=args.epochs, steps=args.steps, device=args.device)


if __name__ == "__main__":
    main()
