"""A data-parallel training script, as a user writes one for torchrun: DistributedDataParallel on
the gloo backend, a DistributedSampler, one DataLoader per rank. Run in one process (no WORLD_SIZE
in the environment) it trains alone, as the PyTorch examples do.

    torchrun --nproc-per-node 2 ddp_train.py [--load-ms 2] [--slow-rank 1 --slow-ms 5]
    torchrun --nproc-per-node 2 ddp_train.py --compute-rank 1 --compute-x 3

Planted, by flag: storage latency on every rank, or one rank whose samples take longer to read
(latency on that rank alone), one rank whose step does several times the others' compute (as a
slower or throttled GPU would), a rank that raises or is killed after some steps, ranks that never
form a process group, and a script that needs the launcher's environment.
"""

import argparse
import copy
import os
import signal
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

parser = argparse.ArgumentParser()
parser.add_argument("--workers", type=int, default=1)
parser.add_argument("--width", type=int, default=512, help="hidden width: the step's compute")
parser.add_argument("--load-ms", type=float, default=0.0, help="each sample takes this long to read, on every rank")
parser.add_argument("--slow-rank", type=int, default=-1, help="this rank's samples take --slow-ms longer to read")
parser.add_argument("--slow-ms", type=float, default=0.0)
parser.add_argument("--compute-rank", type=int, default=-1, help="this rank's step does --compute-x times the compute")
parser.add_argument("--compute-x", type=int, default=3)
parser.add_argument("--fail-rank", type=int, default=-1, help="this rank raises at step --fail-at")
parser.add_argument("--fail-at", type=int, default=30)
parser.add_argument("--kill-rank", type=int, default=-1, help="this rank kills itself (SIGKILL) at step --fail-at")
parser.add_argument("--no-group", action="store_true", help="each rank trains alone: no process group")
parser.add_argument("--needs-launcher", action="store_true", help="always join a process group (needs RANK)")
parser.add_argument("--epochs", type=int, default=100)
parser.add_argument("--steps", type=int, default=0, help="stop after this many steps and print the throughput")
parser.add_argument("--marker", help="rank 0 creates this file after --marker-after steps")
parser.add_argument("--marker-after", type=int, default=10)
args = parser.parse_args()


class Features(Dataset):
    def __init__(self, load_s: float) -> None:
        self.load_s = load_s

    def __len__(self) -> int:
        return 8192

    def __getitem__(self, index: int):
        if self.load_s:
            time.sleep(self.load_s)
        generator = torch.Generator().manual_seed(index)
        return torch.randn(256, generator=generator), index % 10


def main() -> None:
    grouped = args.needs_launcher or ("WORLD_SIZE" in os.environ and not args.no_group)
    if grouped:
        dist.init_process_group("gloo")
    rank = int(os.environ.get("RANK", "0"))
    torch.set_num_threads(1)
    dataset = Features((args.load_ms + (args.slow_ms if rank == args.slow_rank else 0.0)) / 1000)
    sampler = DistributedSampler(dataset) if grouped else None
    loader = DataLoader(dataset, batch_size=32, sampler=sampler, shuffle=sampler is None, num_workers=args.workers)
    model = nn.Sequential(nn.Linear(256, args.width), nn.ReLU(), nn.Linear(args.width, args.width), nn.ReLU(),
                          nn.Linear(args.width, 10))  # fmt: skip
    slower = [copy.deepcopy(model) for _ in range(args.compute_x - 1)] if rank == args.compute_rank else []
    if grouped:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    step, started = 0, time.perf_counter()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            if rank == args.fail_rank and step == args.fail_at:
                raise RuntimeError(f"rank {rank} failed at step {step}")
            if rank == args.kill_rank and step == args.fail_at:
                os.kill(os.getpid(), signal.SIGKILL)
            for twin in slower:  # the same forward and backward again: this rank's device is slower
                nn.functional.cross_entropy(twin(x), y).backward()
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if args.marker and rank == 0 and step == args.marker_after:
                open(args.marker, "w").close()
            if step == 10:
                started = time.perf_counter()  # the first steps start the workers: not timed
            if step == args.steps:
                break
        if step == args.steps:
            break
    if args.steps and rank == 0:
        world = dist.get_world_size() if grouped else 1
        print(f"throughput: {(step - 10) * 32 * world / (time.perf_counter() - started):.1f} samples/s", flush=True)
    if grouped:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
