"""A DataLoader subclass whose __iter__ runs the base iterator in a background thread."""

import queue
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, index):
        time.sleep(0.001)
        return torch.zeros(4)


class BackgroundLoader(DataLoader):
    def __iter__(self):
        handoff = queue.Queue(maxsize=2)

        def fill():  # a non-daemon thread: it must not keep a stopped run alive
            for batch in super(BackgroundLoader, self).__iter__():
                handoff.put(batch)
            handoff.put(None)

        threading.Thread(target=fill).start()
        while (batch := handoff.get()) is not None:
            yield batch


for _batch in BackgroundLoader(Slow(), batch_size=8, num_workers=1):
    time.sleep(0.002)
