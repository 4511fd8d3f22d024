"""A stopped run's DataLoader workers, ended at once: a worker busy with a batch is not waited for,
and its death is not reported by torch as a worker that failed."""

from __future__ import annotations

import shutil
import signal
import time
from collections.abc import Iterator
from multiprocessing import process

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from fastload_cli.runner.child import workers


@pytest.fixture(autouse=True)
def one_temp_folder() -> Iterator[None]:
    """The workers these tests kill share one multiprocessing temp folder, removed after, as the
    child's do: killed with folders of their own, they would leave them behind."""
    made = workers.share_temp_dir()
    yield
    if made is not None:
        process.current_process()._config.pop("tempdir", None)  # type: ignore[attr-defined]
        shutil.rmtree(made, ignore_errors=True)


class Stalls(Dataset):
    """Its first two items come at once; every later one takes an hour."""

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> torch.Tensor:
        if index >= 2:
            time.sleep(3600)
        return torch.zeros(2)


def test_a_stopped_runs_workers_are_killed_in_the_batch_they_have_in_hand() -> None:
    iterator = iter(DataLoader(Stalls(), batch_size=1, num_workers=2))
    assert next(iterator).shape == (1, 2)  # each worker is now inside an item that takes an hour
    procs = list(iterator._workers)  # type: ignore[attr-defined]
    workers.track_workers(iterator)
    workers.track_workers(iter(DataLoader(Stalls(), batch_size=1)))  # no workers: not tracked
    assert workers.end_workers() == 2
    for proc in procs:
        proc.join(timeout=30)
        assert proc.exitcode == -signal.SIGKILL
    # torch's SIGCHLD handler no longer watches them, and the shutdown finds them gone
    assert not iterator._worker_pids_set  # type: ignore[attr-defined]
    iterator._shutdown_workers()  # type: ignore[attr-defined]
    assert workers.end_workers() == 0


def test_the_shared_memory_of_killed_workers_and_the_shared_temp_folder_are_removed_as_the_child_leaves(
    tmp_path, monkeypatch
) -> None:
    """A worker killed as it makes a batch's segment leaves ``torch_<pid>_...`` behind; those of
    the workers the child killed go, and every other file stays."""
    monkeypatch.setattr(workers, "_KILLED", [123, 77])
    shm = tmp_path / "shm"
    shm.mkdir()
    names = ["torch_123_4012_7", "torch_77_1_0", "torch_1234_4012_7", "torch_12_1_1", "other_123_1"]
    for name in names:
        (shm / name).write_bytes(b"")
    temp = tmp_path / "pymp-x"
    (temp / "listener-y").mkdir(parents=True)
    workers.remove_leftovers(str(temp), str(shm))
    assert sorted(p.name for p in shm.iterdir()) == ["other_123_1", "torch_1234_4012_7", "torch_12_1_1"]
    assert not temp.exists()


def test_a_killed_worker_is_remembered_by_its_pid() -> None:
    iterator = iter(DataLoader(Stalls(), batch_size=1, num_workers=1))
    next(iterator)
    pid = iterator._workers[0].pid  # type: ignore[attr-defined]
    workers.track_workers(iterator)
    workers.end_workers()
    assert pid in workers._KILLED
    iterator._shutdown_workers()  # type: ignore[attr-defined]
