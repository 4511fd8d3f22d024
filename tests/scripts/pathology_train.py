"""A script for the pathologies: with --stream, an IterableDataset that every worker reads in full
(the workers yield the same samples); otherwise a map-style dataset on two workers whose items do
a little numpy linear algebra. Each worker appends, at its first item, what it sees of itself to
the file given by --seen: its thread pools' sizes (threadpoolctl) and torch's threads; the main
process appends the loader's in_order."""

import argparse
import json

import numpy as np
import torch
from threadpoolctl import threadpool_info
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

parser = argparse.ArgumentParser()
parser.add_argument("--seen", required=True)
parser.add_argument("--stream", action="store_true")
args = parser.parse_args()


def note(line):
    with open(args.seen, "a") as out:
        out.write(json.dumps(line) + "\n")


class Stream(IterableDataset):
    def __iter__(self):
        for i in range(512):
            yield torch.full((8,), float(i)), i % 2


class Items(Dataset):
    def __init__(self):
        self.noted = False
        self.matrix = np.eye(32, dtype=np.float32)

    def __len__(self):
        return 512

    def __getitem__(self, index):
        if not self.noted:
            self.noted = True
            pools = {p["internal_api"]: p["num_threads"] for p in threadpool_info()}
            note({"worker": get_worker_info().id, "pools": pools, "torch_threads": torch.get_num_threads()})
        x = self.matrix @ np.full((32,), float(index), dtype=np.float32)
        return torch.from_numpy(x[:8].copy()), index % 2


loader = DataLoader(Stream() if args.stream else Items(), batch_size=8, num_workers=2)
note({"in_order": getattr(loader, "in_order", None)})
for _ in range(50):
    for x, _y in loader:
        x.sum()
