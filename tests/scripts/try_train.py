"""A script for `fastload try`: a map-style dataset that 'reads' with a sleep, then applies a random
transform held in its `transform` attribute, on two workers that start again every epoch. At its
first batch it appends what it sees of its own loader to the file given by --seen; with --jittered,
it appends to that file, at every batch, 1 when the batch was jittered and 0 when it was not (a
line per run)."""

import argparse
import json
import random
import time

import torch
from torch.utils.data import DataLoader, Dataset

parser = argparse.ArgumentParser()
parser.add_argument("--seen", required=True)
parser.add_argument("--read-ms", type=float, default=2.0)
parser.add_argument("--jittered")
args = parser.parse_args()


class Jitter:
    def __call__(self, x):
        return x + random.random()


class Reads(Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 256

    def __getitem__(self, index):
        time.sleep(args.read_ms / 1000)
        x = torch.full((16,), float(index))
        return self.transform(x), index % 4


loader = DataLoader(Reads(Jitter()), batch_size=8, shuffle=True, num_workers=2)
model = torch.nn.Linear(16, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
first = True
for _epoch in range(100):
    for x, y in loader:
        if first and args.jittered:  # one line per run
            with open(args.jittered, "a") as handle:
                handle.write("\n")
        if first:
            seen = {
                "persistent_workers": loader.persistent_workers,
                "dataset": type(loader.dataset).__name__,
                "transform": type(loader.dataset.transform).__name__,
            }
            with open(args.seen, "a") as handle:
                handle.write(json.dumps(seen) + "\n")
            first = False
        if args.jittered:
            with open(args.jittered, "a") as handle:
                handle.write("1" if bool((x != x.floor()).any()) else "0")
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
