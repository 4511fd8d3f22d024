"""What only a GPU can show: pinned copies, NVML readings of a CUDA run. Skipped without one."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SCRIPTS, run_fastload

pytestmark = pytest.mark.gpu


def test_synthetic_copies_keep_pinned_memory_pinned() -> None:
    import torch

    from fastload_cli.runner.child.batches import batch_layout, copy_batch

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
