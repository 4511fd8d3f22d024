"""Says, at its first line, whether torch was already imported, and appends that with its pid and
a random draw to the file given by --seen; then trains a few steps on a small in-memory dataset."""

import sys

pre_imported = "torch" in sys.modules

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--seen", required=True)
args = parser.parse_args()
with open(args.seen, "a") as handle:
    handle.write(json.dumps({"pre_imported": pre_imported, "draw": random.random()}) + "\n")

data = TensorDataset(torch.randn(512, 8), torch.randint(0, 2, (512,)))
model = torch.nn.Linear(8, 2)
for _epoch in range(50):
    for x, y in DataLoader(data, batch_size=16):
        torch.nn.functional.cross_entropy(model(x), y).backward()
