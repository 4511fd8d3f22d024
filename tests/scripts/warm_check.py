"""Says, at its first line, whether torch (and the compiler stack a first optimizer imports, and
a module of torch's that only its own ``from torch.nn.utils import prune`` imports) was already
imported, and appends that with its pid and a random draw to the file given by --seen;
then trains a few steps on a small in-memory dataset."""

import sys

pre_imported = "torch" in sys.modules
compiler_imported = "torch._dynamo" in sys.modules
named_imported = "torch.nn.utils.prune" in sys.modules

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402

import torch  # noqa: E402
from torch.nn.utils import prune  # noqa: E402, F401
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--seen", required=True)
args = parser.parse_args()
with open(args.seen, "a") as handle:
    seen = {
        "pre_imported": pre_imported,
        "compiler_imported": compiler_imported,
        "named_imported": named_imported,
        "draw": random.random(),
    }
    handle.write(json.dumps(seen) + "\n")

data = TensorDataset(torch.randn(512, 8), torch.randint(0, 2, (512,)))
model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(50):
    for x, y in DataLoader(data, batch_size=16):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
