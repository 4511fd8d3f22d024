"""Training loops as people write them: wrapped loaders, prefetchers, several loaders, odd batches.

    python patterns.py --pattern NAME [--batch KIND] [--workers N] [--context spawn] ...

Loading sleeps --load-ms per sample; a step busies the CPU for --step-ms. Failure switches make a
worker raise, die, hang or report a bus error at a given sample.
"""

import argparse
import collections
import os
import queue
import signal
import sys
import threading
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, IterableDataset, SequentialSampler

parser = argparse.ArgumentParser()
parser.add_argument("--pattern", default="plain")
parser.add_argument("--batch", default="tensor", help="tensor|tuple|list|dict|namedtuple|object|prebatched")
parser.add_argument("--workers", type=int, default=2)
parser.add_argument("--context", default=None, help="multiprocessing context: spawn|forkserver")
parser.add_argument("--persistent", action="store_true")
parser.add_argument("--size", type=int, default=4096, help="samples per epoch")
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--load-ms", type=float, default=1.0)
parser.add_argument("--step-ms", type=float, default=2.0)
parser.add_argument("--worker-raises-at", type=int, default=-1)
parser.add_argument("--worker-dies-at", type=int, default=-1)
parser.add_argument("--worker-hangs-at", type=int, default=-1)
parser.add_argument("--worker-bus-error-at", type=int, default=-1)
parser.add_argument("--exit-after", type=int, default=-1, help="sys.exit(0) after this many steps")
parser.add_argument(
    "--collective-hangs-at", type=int, default=-1, help="from this step, all_reduce with a peer that never joins it"
)

Pair = collections.namedtuple("Pair", ["x", "y"])


class Batch:
    """A custom batch object, as some codebases use."""

    def __init__(self, x, y):
        self.x, self.y = x, y


def _in_worker() -> bool:
    return torch.utils.data.get_worker_info() is not None


def load(index: int, args) -> torch.Tensor:
    if _in_worker():
        if index == args.worker_raises_at:
            raise ValueError(f"corrupt sample {index}")
        if index == args.worker_dies_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if index == args.worker_hangs_at:
            time.sleep(3600)
        if index == args.worker_bus_error_at:
            sys.stderr.write(
                "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
                "shared memory (shm).\n"
            )
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGBUS)
    time.sleep(args.load_ms / 1000)
    return torch.full((16,), float(index))


class Samples(Dataset):
    def __init__(self, args):
        self.args = args

    def __len__(self):
        return self.args.size

    def __getitem__(self, index):
        x = load(index, self.args)
        kind = self.args.batch
        if kind == "dict":
            return {"x": x, "y": index % 10}
        if kind in ("tuple", "list", "object"):
            return x, index % 10
        if kind == "namedtuple":
            return Pair(x, index % 10)
        return x


class Prebatched(Dataset):
    """batch_size=None: every item is a whole batch already."""

    def __init__(self, args):
        self.args = args

    def __len__(self):
        return self.args.size // self.args.batch_size

    def __getitem__(self, index):
        return torch.stack([load(index * self.args.batch_size + i, self.args) for i in range(self.args.batch_size)])


class Stream(IterableDataset):
    def __init__(self, args):
        self.args = args

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        start, step = (info.id, info.num_workers) if info else (0, 1)
        for index in range(start, self.args.size, step):
            yield load(index, self.args)


def collate_tuple(samples):
    xs, ys = zip(*samples, strict=True)
    return torch.stack(xs), torch.tensor(ys)


def collate_list(samples):
    return list(collate_tuple(samples))


def collate_object(samples):
    return Batch(*collate_tuple(samples))


class BackgroundLoader(DataLoader):
    """The prefetch_generator pattern: the base iterator runs in a background thread."""

    def __iter__(self):
        handoff = queue.Queue(maxsize=2)

        def fill():
            for batch in super(BackgroundLoader, self).__iter__():
                handoff.put(batch)
            handoff.put(None)

        threading.Thread(target=fill, daemon=True).start()
        while (batch := handoff.get()) is not None:
            yield batch


class DataPrefetcher:
    """The apex data_prefetcher pattern: one batch ahead, on a side CUDA stream when there is one."""

    def __init__(self, loader):
        self.it = iter(loader)
        self.stream = torch.cuda.Stream() if torch.cuda.is_available() else None
        self.preload()

    def preload(self):
        try:
            self.batch = next(self.it)
        except StopIteration:
            self.batch = None
            return
        if self.stream is not None:
            with torch.cuda.stream(self.stream):
                self.batch = self.batch.cuda(non_blocking=True)

    def next(self):
        if self.stream is not None:
            torch.cuda.current_stream().wait_stream(self.stream)
        batch = self.batch
        self.preload()
        return batch


def make_loader(args, cls=DataLoader, size=None):
    kwargs = {"num_workers": args.workers}
    if args.workers:
        kwargs["persistent_workers"] = args.persistent
        if args.context:
            kwargs["multiprocessing_context"] = args.context
    if size is not None:
        args = argparse.Namespace(**{**vars(args), "size": size})
    if args.batch == "prebatched":
        return cls(Prebatched(args), batch_size=None, **kwargs)
    if args.pattern == "iterable":
        return cls(Stream(args), batch_size=args.batch_size, **kwargs)
    collate = {"tuple": collate_tuple, "list": collate_list, "object": collate_object}.get(args.batch)
    if args.pattern == "batch-sampler":
        sampler = BatchSampler(SequentialSampler(range(args.size)), batch_size=args.batch_size, drop_last=True)
        return cls(Samples(args), batch_sampler=sampler, collate_fn=collate, **kwargs)
    return cls(Samples(args), batch_size=args.batch_size, shuffle=False, collate_fn=collate, **kwargs)


def _idle_peer(port: int) -> None:
    """Rank 1 of a two-process group: joins it, then never takes part in a collective."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=1, world_size=2)
    time.sleep(3600)


def join_group_with_idle_peer() -> None:
    import socket

    import torch.distributed as dist
    import torch.multiprocessing as mp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.get_context("fork").Process(target=_idle_peer, args=(port,), daemon=True).start()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=2)


def step(batch, args):
    end = time.perf_counter() + args.step_ms / 1000
    while time.perf_counter() < end:
        pass
    if 0 <= args.collective_hangs_at <= step.count:
        import torch.distributed as dist

        dist.all_reduce(torch.ones(1))  # the peer never joins: blocks in C
    step.count += 1
    if step.count == args.exit_after:
        sys.exit(0)


step.count = 0


def main():
    args = parser.parse_args()
    if args.collective_hangs_at >= 0:
        join_group_with_idle_peer()
    pattern = args.pattern
    if pattern == "prefetcher":
        loader = make_loader(args)
        for _ in range(args.epochs):
            prefetcher = DataPrefetcher(loader)
            batch = prefetcher.next()
            while batch is not None:
                step(batch, args)
                batch = prefetcher.next()
        return
    if pattern == "zip":
        first, second = make_loader(args), make_loader(args)
        for _ in range(args.epochs):
            for a, b in zip(first, second, strict=False):
                step((a, b), args)
        return
    if pattern == "train-val":
        train, val = make_loader(args), make_loader(args, size=args.size // 4)
        for _ in range(args.epochs):
            for batch in train:
                step(batch, args)
            with torch.no_grad():
                for batch in val:
                    step(batch, args)
        return
    loader = make_loader(args, BackgroundLoader if pattern == "thread" else DataLoader)
    for _ in range(args.epochs):
        if pattern == "tqdm":
            from tqdm import tqdm

            for batch in tqdm(loader, file=sys.stdout):
                step(batch, args)
        elif pattern == "enumerate":
            for _i, batch in enumerate(loader):
                step(batch, args)
        else:  # plain, thread, iterable, batch-sampler
            for batch in loader:
                step(batch, args)


if __name__ == "__main__":
    main()
