"""What only a GPU can show: pinned copies, NVML readings of a CUDA run. Skipped without one."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SCRIPTS, run_fastload

pytestmark = pytest.mark.gpu


def test_synthetic_copies_keep_pinned_memory_pinned() -> None:
    import torch

    from fastload_cli.runner.child.batches import batch_layout, copy_batch

    torch.cuda.init()  # as in a run: the replays start after the warm-up's steps on the GPU
    batch = (torch.randn(4, 3).pin_memory(), torch.arange(4).pin_memory())
    copied = copy_batch(batch)
    assert all(t.is_pinned() for t in copied)
    assert all(leaf["pinned"] for leaf in batch_layout(batch))


def test_a_cuda_run_has_gpu_readings_and_a_gpu_environment() -> None:
    done = run_fastload("diagnose", str(SCRIPTS / "cuda_train.py"), "--max-batches", "30", "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["environment"]["cuda_available"] is True
    assert report["environment"]["gpus"] and report["environment"]["nvml"] == "available"
    real = report["runs"][0]
    assert real["gpu_util_percent"] is not None and 0 <= real["gpu_util_percent"] <= 100


def test_the_device_resident_replay_runs_and_decides_what_copies_cost() -> None:
    done = run_fastload("diagnose", str(SCRIPTS / "cuda_train.py"), "--max-batches", "30", "--json", "-")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    modes = {r["mode"]: r for r in report["runs"]}
    assert modes["synthetic-device"]["status"] == "ok", modes["synthetic-device"]
    assert modes["synthetic-device"]["throughput_samples_per_s"] > 0
    # 256 x 512 float32 pinned (512 KiB a batch) for a 4096-wide MLP: the copies cost the step little
    assert report["verdict"]["bottleneck"] != "transfer", report["verdict"]


def test_the_device_replay_keeps_the_batch_on_the_gpu_and_copies_it_there() -> None:
    import torch

    from fastload_cli.runner.child.batches import copy_batch, to_cuda

    torch.cuda.init()
    batch = {"x": torch.randn(4, 3).pin_memory(), "y": [torch.arange(4)], "name": "a"}
    on_gpu = to_cuda(batch)
    assert on_gpu["x"].is_cuda and on_gpu["y"][0].is_cuda and on_gpu["name"] == "a"
    again = copy_batch(on_gpu)
    assert again["x"].is_cuda and again["x"].data_ptr() != on_gpu["x"].data_ptr()
    assert again["x"].to("cuda", non_blocking=True) is again["x"]  # the script's copy is a no-op
