#!/usr/bin/env python3
"""Data-parallel jobs: what fastload costs on a 2-rank job against the same script in one process.

    python scripts/bench_ddp.py [--rounds 3] [--steps 150]
    python scripts/bench_ddp.py --cost [--ranks 2,4,8] [--rounds 3] [--steps 150]
    python scripts/bench_ddp.py --stragglers [--rounds 3] [--steps 150]

1. Time to verdict: ``fastload diagnose`` with default settings on tests/scripts/ddp_train.py
   (storage latency of 3 ms per sample on every rank), in one process and with --nproc-per-node 2.
2. Overhead per rank: the job's own throughput line (rank 0 prints samples/s over the job, after
   10 steps) under plain torch.distributed.run against the same job under fastload's real mode,
   interleaved round by round; and the same for one process, plain python against fastload.
Prints medians and the median of each round's ratio.

With ``--cost``: what fastload's parent costs per rank at 2, 4 and 8 ranks (the job's real mode on
ddp_train.py with free inputs, its fastest batches, so the most events a second): the parent's CPU
over the run (its own threads: reading every rank's events, sampling the process tree) as % of one
core, in total and per rank, its CPU per thousand batches, and the bytes each rank streams to it
a second and per batch. The rank counts alternate round by round; medians are printed. Then
With ``--stragglers``: the straggler advice followed. For each planted straggler (rank 1 reading 8 ms
a sample slower; rank 1's step doing three times the compute), what fastload diagnose says fixing
that rank alone gives the job (measured for the input straggler, estimated for the step), then
plain ``torch.distributed.run`` jobs with the straggler and with it fixed (the flag removed),
alternated round by round: the median of each round's ratio is what following the advice gives.

``fastload merge``'s cost for a job of ``--merge-nodes`` nodes of 8 ranks (node reports copied
from the last 8-rank run, renumbered): the time to merge them and the merged report's size.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from benchlib import ROOT, alternated, fastload, median_range, plain, ratio_of_rounds, throughput

sys.path.insert(0, str(ROOT))

from fastload_cli.config import Launcher, RunConfig
from fastload_cli.records import ChildSpec
from fastload_cli.runner.launch import run_mode

SCRIPT = ROOT / "tests" / "scripts" / "ddp_train.py"
LOAD = ("--load-ms", "3")


def to_verdict(ranks: int) -> float:
    job = ["--nproc-per-node", str(ranks)] if ranks > 1 else []
    return fastload("diagnose", *job, str(SCRIPT), "-q", script_args=LOAD, check=True).wall_s


def plain_job(ranks: int, steps: int) -> float:
    args = [str(SCRIPT), "--steps", str(steps), *LOAD]
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"] if ranks > 1 else []
    return throughput(plain(*launcher, *args))


def under_fastload(ranks: int, steps: int) -> float:
    config = RunConfig(
        script=SCRIPT,
        script_arg0=str(SCRIPT),
        script_args=("--steps", str(steps), *LOAD),
        child=ChildSpec(warmup=0),
        max_batches=steps * 10,
        launcher=Launcher(nproc_per_node=ranks) if ranks > 1 else None,
    )
    return throughput(run_mode(config).output_tail)


def parent_cost(ranks: int, steps: int) -> dict[str, float]:
    """One job under fastload's real mode: the parent's CPU and every rank's event stream."""
    config = RunConfig(
        script=SCRIPT,
        script_arg0=str(SCRIPT),
        script_args=("--steps", str(steps)),
        child=ChildSpec(warmup=0),
        max_batches=steps * 10,
        launcher=Launcher(nproc_per_node=ranks),
    )
    run = run_mode(config)
    wall = (run.ended_ns - run.started_ns) / 1e9
    batches = sum(len(r.batches) for r in run.ranks)
    sent = sum(r.channel_bytes or 0 for r in run.ranks)
    cpu = run.profiler_cpu_s or 0.0
    return {
        "parent_cpu_percent": 100 * cpu / wall,
        "parent_cpu_percent_per_rank": 100 * cpu / wall / ranks,
        "parent_cpu_ms_per_1000_batches": 1e6 * cpu / max(batches, 1),
        "event_bytes_per_s_per_rank": sent / wall / ranks,
        "event_bytes_per_batch": sent / max(batches, 1),
        "batches_per_s_per_rank": batches / wall / ranks,
        "host_samples_per_s": len(run.host_samples) / wall,
    }


def cost(ranks: list[int], rounds: int, steps: int, merge_nodes: int) -> int:
    found: dict[int, list[dict[str, float]]] = {n: [] for n in ranks}
    for _ in range(rounds):
        for n in ranks:
            found[n].append(parent_cost(n, steps))
    for n, runs in found.items():
        figures = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        print(f"{n} ranks: " + ", ".join(f"{key} {value:,.1f}" for key, value in figures.items()))
    if merge_nodes:
        merge_cost(merge_nodes, steps)
    return 0


def merge_cost(nodes: int, steps: int) -> None:
    """Time ``merge`` on ``nodes`` node reports of 8 ranks, each a copy of one 8-rank node's report."""
    import json
    import time

    from fastload_cli.analyzer.merge import merge

    job = ("--nproc-per-node", "8", str(SCRIPT), "--modes", "real", "--max-batches", "20", "-q")
    node = fastload("diagnose", *job, script_args=("--steps", str(steps)), check=True).report
    assert node is not None
    documents = []
    for n in range(nodes):
        doc = json.loads(json.dumps(node))
        for run in doc["runs"]:
            run["ranks"] = [{**x, "rank": 8 * n + x["local_rank"]} for x in run["ranks"]]
        documents.append(doc)
    started = time.perf_counter()
    merged = merge(documents, [f"node{n}.json" for n in range(nodes)])
    took = time.perf_counter() - started
    size = len(json.dumps(merged))
    print(f"merge of {nodes} nodes x 8 ranks: {took * 1000:.0f} ms, merged report {size / 1e6:.1f} MB")


STRAGGLERS = {
    "input": (("--slow-rank", "1", "--slow-ms", "8"), ()),
    "step": (("--compute-rank", "1", "--compute-x", "3", "--width", "1024"), ("--width", "1024")),
}


def stragglers(rounds: int, steps: int) -> int:
    for name, (planted, fixed) in STRAGGLERS.items():
        job = ("--nproc-per-node", "2", str(SCRIPT), "--modes", "real,synthetic", "--max-batches", "20", "-q")
        report = fastload("diagnose", *job, script_args=planted, check=True).report
        assert report is not None
        said = next((r for r in report["recommendations"] if r["id"].startswith("straggler-")), None)
        arms = alternated(
            {
                "straggler": lambda planted=planted: plain_job_with(planted, steps),
                "fixed": lambda fixed=fixed: plain_job_with(fixed, steps),
            },
            rounds,
        )
        ratio = ratio_of_rounds(arms["fixed"], arms["straggler"])
        advice = f"{said['id']} up to {said['expected_speedup']}x" if said else "no straggler advice"
        print(
            f"{name} straggler: fastload says {advice} (slowest_rank {report['verdict']['slowest_rank']}); "
            f"plain jobs {median_range(arms['straggler'], 0)} -> {median_range(arms['fixed'], 0)} samples/s, "
            f"fixed / straggler {ratio:.2f}x (median of {rounds} rounds)"
        )
    return 0


def plain_job_with(args: tuple[str, ...], steps: int) -> float:
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    return throughput(plain(*launcher, str(SCRIPT), "--steps", str(steps), *args))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--cost", action="store_true", help="the parent's cost per rank at --ranks")
    parser.add_argument("--ranks", default="2,4,8", help="rank counts for --cost, comma-separated")
    parser.add_argument("--merge-nodes", type=int, default=125, help="--cost: nodes of 8 ranks to merge")
    parser.add_argument("--stragglers", action="store_true", help="the straggler advice followed in plain jobs")
    options = parser.parse_args()
    if options.stragglers:
        return stragglers(options.rounds, options.steps)
    if options.cost:
        return cost([int(n) for n in options.ranks.split(",")], options.rounds, options.steps, options.merge_nodes)
    verdicts: dict[int, list[float]] = {1: [], 2: []}
    arms: dict[str, list[float]] = {"1 process": [], "1 process, fastload": [], "2 ranks": [], "2 ranks, fastload": []}
    for _ in range(options.rounds):
        for ranks in (1, 2):
            verdicts[ranks].append(to_verdict(ranks))
            name = "1 process" if ranks == 1 else "2 ranks"
            arms[name].append(plain_job(ranks, options.steps))
            arms[f"{name}, fastload"].append(under_fastload(ranks, options.steps))
    for ranks, times in verdicts.items():
        print(f"time to verdict, {ranks} rank(s): median {median_range(times)} s")
    for name in ("1 process", "2 ranks"):
        ratio = ratio_of_rounds(arms[f"{name}, fastload"], arms[name])
        print(
            f"{name}: plain {statistics.median(arms[name]):.0f} samples/s, under fastload "
            f"{statistics.median(arms[f'{name}, fastload']):.0f} samples/s, ratio {ratio:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
