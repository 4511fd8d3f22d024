"""Checks what the synthetic mode promises: replays are fresh copies of one real batch.

Each batch is modified in place after use; a replay that handed back the same tensor (or shared
its memory) would show the modification. Writes what it saw as JSON to argv[1] at every step.
"""

import json
import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset

out_path = sys.argv[1]
data = TensorDataset(torch.arange(4000.0).view(1000, 4), torch.arange(1000))
loader = DataLoader(data, batch_size=10, shuffle=False)
seen = {"steps": 0, "same_object": 0, "shared_memory": 0, "saw_modified": 0, "sums": []}
previous = None
for _epoch in range(10):
    for x, _y in loader:
        if previous is not None:
            seen["same_object"] += x is previous
            seen["shared_memory"] += x.data_ptr() == previous.data_ptr()
        seen["saw_modified"] += bool((x >= 100_000).any())
        seen["sums"].append(float(x.sum()))
        x.add_(100_000)  # the script may change its batch in place
        previous = x
        seen["steps"] += 1
        with open(out_path + ".tmp", "w") as handle:  # written whole, then renamed: a stop
            json.dump(seen, handle)  # can come at any moment
        os.replace(out_path + ".tmp", out_path)
