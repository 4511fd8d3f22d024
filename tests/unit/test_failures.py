"""Hints for failures: each rests on what was observed (the message, the kernel's OOM counter,
where the main thread was), never on a guess."""

from __future__ import annotations

import dataclasses

import pytest

from fastload_cli.analyzer import analyze
from fastload_cli.analyzer.failures import (
    PORT_IN_USE_HINT,
    SHM_HINT,
    TORCHRUN_HINT,
    WORKER_RAISED_HINT,
    hint_for,
    killed_hint,
    timeout_hint,
)
from fastload_cli.records import Bottleneck, RunResult, RunStatus, ScriptError, StopReason
from fastload_cli.runner.stacks import main_thread_frames
from tests.unit import builders as b

KILLED = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed."


@pytest.mark.parametrize(
    ("message", "tail", "hint"),
    [
        (
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.",
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory",
            SHM_HINT,
        ),
        ("ValueError: Caught ValueError in DataLoader worker process 0.\nOriginal Traceback", "", WORKER_RAISED_HINT),
        (
            "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK "
            "expected, but not set",
            "",
            TORCHRUN_HINT,
        ),
        ("KeyError: 'LOCAL_RANK'", "", TORCHRUN_HINT),
        (
            "",
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
            "address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
            PORT_IN_USE_HINT,
        ),
    ],
)
def test_known_signatures_get_their_hint(message: str, tail: str, hint: str) -> None:
    assert hint_for(message, tail) == hint


def test_a_script_made_for_torchrun_is_not_told_to_run_under_plain_python() -> None:
    found = hint_for("ValueError: environment variable RANK expected, but not set")
    assert found is not None and "torchrun" in found and "plain" not in found


@pytest.mark.parametrize("message", [KILLED, "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly"])
def test_a_killed_worker_is_blamed_on_memory_only_when_the_oom_killer_acted(message: str) -> None:
    acted = hint_for(message, oom_kills=1)
    assert acted is not None and "OOM killer acted" in acted
    quiet = hint_for(message, oom_kills=0)
    assert quiet is not None and "did not act" in quiet and "memory ran out" not in quiet
    unknown = hint_for(message, oom_kills=None)
    assert unknown is not None and "dmesg" in unknown


def test_a_killed_script_without_an_oom_kill_says_something_else_sent_the_signal() -> None:
    assert "did not act" in killed_hint("the script got SIGKILL", 0)
    assert "out of memory" not in killed_hint("the script got SIGKILL", 0)


def test_a_missing_torch_names_the_interpreter() -> None:
    found = hint_for("ModuleNotFoundError: No module named 'torch'", python="/opt/venv/bin/python")
    assert found is not None and "torch is not installed for /opt/venv/bin/python" in found


def test_an_ordinary_error_gets_no_hint() -> None:
    assert hint_for("ValueError: bad learning rate", "Traceback ...") is None


DUMP = """main 0x7f00000000aa
Thread 0x00007f00000000bb (most recent call first):
  File "/usr/lib/python3.12/threading.py", line 355 in wait
  File "/site-packages/torch/utils/data/_utils/pin_memory.py", line 59 in do_one_step

Current thread 0x00007f00000000aa (most recent call first):
  File "/site-packages/torch/distributed/distributed_c10d.py", line 2806 in all_reduce
  File "/home/user/train.py", line 41 in train
  File "/home/user/train.py", line 60 in <module>
"""


def test_the_main_threads_frames_are_read_from_a_dump_among_other_threads() -> None:
    frames = main_thread_frames(DUMP)
    assert frames[0] == "/site-packages/torch/distributed/distributed_c10d.py:2806 in all_reduce"
    assert len(frames) == 3
    assert main_thread_frames("Thread 0x1 (most recent call first):\n") == ()  # no header: nothing read


def test_a_hang_in_a_collective_is_not_blamed_on_a_dataloader_worker() -> None:
    hint = timeout_hint(main_thread_frames(DUMP))
    assert "torch.distributed" in hint and "all_reduce" in hint
    assert "DataLoader worker is stuck" not in hint


def test_a_hang_in_the_loader_names_the_loader_and_elsewhere_names_the_line() -> None:
    waiting = ("/site-packages/torch/utils/data/dataloader.py:1300 in _get_data", "/home/user/train.py:41 in train")
    assert "DataLoader worker is stuck" in timeout_hint(waiting)
    elsewhere = timeout_hint(("/home/user/train.py:12 in slow_setup",))
    assert "train.py:12" in elsewhere and "DataLoader worker is stuck" not in elsewhere
    assert "could not be read" in timeout_hint(())


def _real_and_no_aug(no_aug: RunResult) -> list[RunResult]:
    real = b.batches([100] + [30] * 19, 10)
    return [b.run("real", real, samples=b.host_samples(real[-1].wait_end_ns)), no_aug]


def test_a_no_aug_run_whose_stand_ins_were_undone_measures_no_augmentation() -> None:
    undone = dataclasses.replace(
        b.NO_AUG_SUBSTITUTION, undone=True, reason="the stand-ins changed the first sample ((3, 32, 32) -> ...)"
    )
    batches = b.batches([100] + [12] * 19, 10)
    run = dataclasses.replace(b.run("no-aug", batches), substitutions=(undone,))
    analysis = analyze(_real_and_no_aug(run))
    assert analysis.facts.no_aug is None  # the pipeline ran as written: no augmentation speedup from it
    assert any("were undone" in c and "changed the first sample" in c for c in analysis.verdict.caveats)


def test_a_no_aug_run_that_fails_with_stand_ins_in_place_blames_the_substitution() -> None:
    batches = b.batches([100] + [12] * 4, 10)
    failed = dataclasses.replace(
        b.run("no-aug", batches, status=RunStatus.FAILED, stop=StopReason.SCRIPT_RAISED),
        error=ScriptError(type_name="RuntimeError", message="stack expects each tensor to be equal size", traceback=""),
    )
    caveats = " ".join(analyze(_real_and_no_aug(failed)).verdict.caveats)
    assert "fastload's substitution" in caveats and "ColorJitter" in caveats


def test_a_script_that_failed_is_advised_only_a_named_pathologys_fix() -> None:
    # eight batches with long waits, the workers asleep, then the error: beside free inputs it reads
    # as waiting on storage, yet no rate of the script was measured to weigh advice against
    error = ScriptError(type_name="RuntimeError", message="received 0 items of ancdata", traceback="")
    made = b.batches([80.0] * 8, 10.0)
    samples = b.host_samples(made[-1].wait_end_ns, worker_cores=(0.02, 0.02), system_busy=0.2)
    real = b.run(
        "real", made, samples=samples, loaders=[b.loader(2)], status=RunStatus.FAILED, stop=StopReason.SCRIPT_RAISED
    )
    synthetic = b.run("synthetic", b.batches([0.1] * 40, 10.0), warmup=5, loaders=[b.loader(2)])
    analysis = analyze([dataclasses.replace(real, error=error), synthetic])
    assert analysis.verdict.bottleneck is Bottleneck.IO  # rules would fire on it: faster storage, more workers
    assert analysis.recommendations == ()
