"""Loader patterns real scripts use, and the failures they meet, on real child runs.

Every pattern must give the right batch count, a stop that reaches the script, and waits taken
where the training loop blocks; every failure a clear message, the right exit code, what was
measured kept, and no process left behind (the autouse fixture checks that).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS, disturbed_by_others, run_fastload

pytestmark = pytest.mark.slow
PATTERNS = str(SCRIPTS / "patterns.py")
MAX_BATCHES = 12


def diagnose(*script_args: str, modes: str = "real", max_batches: int = MAX_BATCHES, wall: float = 240, **kw: str):
    """``fastload diagnose patterns.py`` with ``kw`` as fastload options; ``wall``: the test's limit."""
    extra = [item for key, value in kw.items() for item in (f"--{key.replace('_', '-')}", value)]
    return run_fastload(
        "diagnose", PATTERNS, "--modes", modes, "--max-batches", str(max_batches), "--fixed-batches", *extra,
        "--json", "-", "--", *script_args, timeout=wall,
    )  # fmt: skip


def report_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_measured(report: dict, mode: str = "real") -> dict:
    run = next(r for r in report["runs"] if r["mode"] == mode)
    assert run["status"] == "ok", run["error"]
    assert run["stop_reason"] == "enough-batches"  # the stop reached the script
    assert run["batches"] == MAX_BATCHES
    assert 0 <= run["data_wait_fraction"] <= 1
    return run


@pytest.mark.parametrize(
    "pattern",
    ["plain", "tqdm", "enumerate", "zip", "thread", "prefetcher", "train-val", "iterable", "batch-sampler"],
)
def test_loader_patterns_are_measured(pattern: str) -> None:
    report = report_of(diagnose("--pattern", pattern))
    run = check_measured(report)
    assert run["num_workers"] == 2


@pytest.mark.parametrize("kind", ["tensor", "tuple", "list", "dict", "namedtuple", "object", "prebatched"])
def test_batch_kinds_are_measured_and_replayed(kind: str) -> None:
    report = report_of(diagnose("--batch", kind, modes="real,synthetic"))
    check_measured(report)
    check_measured(report, "synthetic")
    verdict = report["verdict"]
    assert not any("replayed no batch" in c for c in verdict["caveats"]), verdict  # the batch was copied and replayed
    assert verdict["speedup_ceiling"] is not None or disturbed_by_others(report), verdict


def test_batch_counts_follow_samples_per_batch() -> None:
    real = check_measured(report_of(diagnose("--batch-size", "8")))
    assert real["samples"] == 8 * MAX_BATCHES


def test_a_zip_of_two_loaders_counts_both_waits() -> None:
    # the second loader is 4x slower per sample: the loop waits mostly on it
    one = check_measured(report_of(diagnose("--pattern", "plain", "--load-ms", "4")))
    both = check_measured(report_of(diagnose("--pattern", "zip", "--load-ms", "4")))
    assert both["data_wait_fraction"] >= one["data_wait_fraction"] - 0.1


def test_a_background_thread_loader_is_timed_where_the_loop_blocks() -> None:
    # 2 workers x 8 samples x 4 ms: 16 ms per batch, a 2 ms step: the loop waits most of the time
    report = report_of(diagnose("--pattern", "thread", "--load-ms", "4", max_batches=20, wall=60))
    run = next(r for r in report["runs"] if r["mode"] == "real")
    assert run["status"] == "ok" and run["batches"] == 20
    assert run["data_wait_fraction"] > 0.5


@pytest.mark.parametrize("persistent", [False, True])
def test_several_epochs_one_iterator_each(persistent: bool) -> None:
    flags = ["--size", "96", "--batch-size", "8"] + (["--persistent"] if persistent else [])
    report = report_of(diagnose(*flags, max_batches=30))
    run = next(r for r in report["runs"] if r["mode"] == "real")
    assert run["status"] == "ok"
    assert 20 <= run["batches"] <= 30  # 12-batch epochs: each epoch's first batch is start-up
    assert run["startup_s"] > 0


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_multiprocessing_contexts(context: str) -> None:
    report = report_of(diagnose("--context", context, wall=300))
    check_measured(report)


def test_workers_n_overrides_every_pattern_loader() -> None:
    report = report_of(diagnose("--pattern", "thread", modes="real,workers=1"))
    runs = {r["mode"]: r for r in report["runs"]}
    assert runs["workers=1"]["num_workers"] == 1 and runs["workers=1"]["batches"] == MAX_BATCHES


# --------------------------------------------------------------------------------------------
# Failures
# --------------------------------------------------------------------------------------------


def test_a_dataset_error_in_a_worker_shows_its_traceback() -> None:
    done = diagnose("--worker-raises-at", "0")
    assert done.returncode == 1
    assert "Error: the script failed before its first batch" in done.stderr
    assert "corrupt sample 0" in done.stderr and "DataLoader worker process" in done.stderr
    assert "Hint:" in done.stderr


def test_a_dataset_error_after_some_batches_keeps_the_measurements_and_runs_the_other_modes() -> None:
    report = report_of(
        diagnose("--worker-raises-at", "200", "--size", "100000", modes="real,synthetic", max_batches=40)
    )
    real = report["runs"][0]
    assert real["status"] == "failed" and real["batches"] > 10
    assert "corrupt sample 200" in real["error"]
    assert len(report["runs"]) == 2


def test_a_worker_killed_by_a_signal_is_not_blamed_on_memory_when_the_oom_killer_did_not_act() -> None:
    done = diagnose("--worker-dies-at", "0")  # the worker sends itself SIGKILL: no OOM kill happens
    assert done.returncode == 1
    assert "killed" in done.stderr.lower()
    assert "OOM killer did not act" in done.stderr or "dmesg" in done.stderr  # dmesg: counter unreadable
    assert "ran out of memory" not in done.stderr and "memory ran out" not in done.stderr


def test_a_hanging_worker_times_out_that_mode_and_the_others_still_run() -> None:
    done = diagnose("--worker-hangs-at", "150", modes="real,synthetic", max_batches=40, timeout="20")
    report = report_of(done)
    real, synthetic = report["runs"]
    assert real["status"] == "timeout" and real["batches"] > 5
    assert synthetic["status"] in ("ok", "timeout")
    # where the main thread was when the timeout hit: waiting for a batch, so the worker is stuck
    assert any("waiting for a DataLoader batch" in c and "stuck" in c for c in report["verdict"]["caveats"])


def test_a_hang_in_a_collective_is_named_as_such_not_as_a_stuck_worker() -> None:
    done = diagnose("--collective-hangs-at", "8", max_batches=40, timeout="12")
    report = report_of(done)
    (real,) = report["runs"]
    assert real["status"] == "timeout" and real["batches"] > 0
    caveats = " ".join(report["verdict"]["caveats"])
    assert "torch.distributed" in caveats and "all_reduce" in caveats
    assert "DataLoader worker is stuck" not in caveats


def test_a_bus_error_in_a_worker_points_at_shared_memory() -> None:
    done = diagnose("--worker-bus-error-at", "0")
    assert done.returncode == 1
    assert "/dev/shm" in done.stderr and "--shm-size" in done.stderr


def test_a_script_that_exits_early_is_reported_with_fewer_batches() -> None:
    report = report_of(diagnose("--exit-after", "12", max_batches=40))
    real = report["runs"][0]
    assert real["status"] == "ok" and real["stop_reason"] == "script-ended"
    assert 0 < real["batches"] < 40
    assert any("finished after" in c for c in report["verdict"]["caveats"])


def test_torch_missing_in_the_interpreter_is_named(tmp_path: Path) -> None:
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')\n")
    script = tmp_path / "train.py"
    script.write_text("import torch\n")
    done = run_fastload("diagnose", str(script), cwd=tmp_path)
    assert done.returncode == 1
    assert "No module named 'torch'" in done.stderr
    assert "torch is not installed" in done.stderr


FAKE_PYNVML = """
class NVMLError(Exception):
    pass

NVML_PCIE_UTIL_RX_BYTES, NVML_PCIE_UTIL_TX_BYTES = 1, 0

class _Memory:
    total, used = 80 * 2**30, 2**30

def _unsupported(*args):
    raise NVMLError("Not Supported")

def nvmlInit(): pass
def nvmlShutdown(): pass
def nvmlDeviceGetCount(): return 1
def nvmlDeviceGetHandleByIndex(i): return i
def nvmlDeviceGetName(handle): return b"Fake GPU"
def nvmlDeviceGetMemoryInfo(handle): return _Memory()
nvmlDeviceGetUtilizationRates = _unsupported
nvmlDeviceGetPcieThroughput = _unsupported
"""


def test_nvml_that_fails_field_by_field_leaves_nulls_and_caveats(tmp_path: Path) -> None:
    (tmp_path / "pynvml.py").write_text(FAKE_PYNVML)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("CUDA_VISIBLE_DEVICES", None)  # the fake device must be visible
    command = [sys.executable, "-m", "fastload_cli", "diagnose", PATTERNS, "--modes", "real", "--max-batches", "12"]
    done = subprocess.run([*command, "--json", "-"], capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    report = report_of(done)
    assert report["environment"]["nvml"] == "available"
    assert [g["name"] for g in report["environment"]["gpus"]] == ["Fake GPU"]
    assert report["runs"][0]["gpu_util_percent"] is None
    caveats = report["verdict"]["caveats"]
    assert any(c.startswith("Not measured (NVML): util: Not Supported") for c in caveats)
    assert any("GPU busy % not measured" in c for c in caveats)
