"""A real+synthetic run inside the child: the replays take over at the batch after the parent's
word, and where the run asks for it each loading step is timed there, once, in the main thread,
inside the step that shuts the workers down, which neither mode's window counts."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.dataloader import _BaseDataLoaderIter
from torchvision.transforms import v2

from fastload_cli.records import ChildSpec, EventKind, Mode, ModeSpec
from fastload_cli.runner.child import breakdown, modes
from fastload_cli.runner.child.modes import EpochState, LoaderState, RealThenReplay
from tests.unit.child.test_interleave import Events, counted


def slow(x: Any) -> Any:
    time.sleep(0.002)
    return x


class Numbers(Dataset):
    def __init__(self) -> None:
        self.transform = v2.Compose([v2.Lambda(slow), v2.Lambda(lambda x: x * 2)])

    def __len__(self) -> int:
        return 32

    def __getitem__(self, index: int) -> Any:
        return self.transform(torch.full((3,), float(index)))


class Clocked(Events):
    """The channel, each event with when it was sent."""

    def emit(self, kind: EventKind, **fields: Any) -> None:
        super().emit(kind, **fields, at_ns=time.monotonic_ns())


def run(
    monkeypatch: pytest.MonkeyPatch, items: int, in_thread: bool = False, busy: float = 0.0
) -> tuple[Clocked, list, Numbers]:
    """Twelve batches of a loader with two workers; the parent's word after the fourth. Each
    batch as (asked, delivered, replayed): when the loop asked for it and when it had it."""
    monkeypatch.setattr(modes.NextAsked, "asked", False)
    events, log = Clocked(), []

    def timed(epoch: EpochState, produce: Any, iterator: Any, *, synthetic: bool) -> Any:
        asked = time.monotonic_ns()
        batch = produce(iterator)
        epoch.index += 1
        epoch.loader.batches += 1
        log.append((asked, time.monotonic_ns(), synthetic, batch))
        return batch

    spec = ChildSpec(mode=ModeSpec(mode=Mode.REAL_SYNTHETIC), breakdown_items=items, breakdown_busy=busy)
    actuator = RealThenReplay(spec=spec, channel=events, timed=timed)  # type: ignore[arg-type]
    dataset = Numbers()
    loader = DataLoader(dataset, batch_size=4, num_workers=2)

    def loop() -> None:
        state = LoaderState(loader_id=1, collated=True)
        iterator = actuator.start_epoch(loader, state, DataLoader.__iter__)
        epoch = EpochState(loader=state, iterator_id=1)
        for n in range(8):
            if n == 4:
                modes.on_next_signal(0, None)
            actuator.next_batch(iterator, epoch, _BaseDataLoaderIter.__next__)

    if in_thread:
        worker = threading.Thread(target=loop)
        worker.start()
        worker.join()
    else:
        loop()
    return events, log, dataset


def test_each_loading_step_is_timed_at_the_switch_inside_the_step_no_window_counts(monkeypatch) -> None:
    threads = torch.get_num_threads()
    events, log, dataset = run(monkeypatch, items=8)
    found = [fields for kind, fields in events.seen if kind is EventKind.BREAKDOWN]
    assert len(found) == 1 and found[0]["loader_id"] == 1 and found[0]["items"] == 8
    assert [s["name"].split("(")[0] for s in found[0]["steps"]][:2] == ["Lambda", "Lambda"]
    assert found[0]["spent_ns"] >= 8 * 2e6  # eight samples, each through a 2 ms step
    # after the batch the replays copy was delivered, before the loop asked for the first replay:
    # the first replay's step, which held the workers' shutdown and which neither window counts
    cached = max(i for i, entry in enumerate(log) if not entry[2])
    assert log[cached][1] < found[0]["at_ns"] < log[cached + 1][0] and log[cached + 1][2]
    # the replays are copies of that batch; the pipeline and the torch threads are as they were
    assert all(torch.equal(entry[3], log[cached][3]) for entry in log[cached + 1 :])
    assert [type(t).__name__ for t in dataset.transform.transforms] == ["Lambda", "Lambda"]
    assert torch.get_num_threads() == threads


def test_nothing_is_timed_where_the_run_does_not_ask_or_the_loop_runs_in_another_thread(monkeypatch) -> None:
    for items, in_thread in ((0, False), (8, True)):
        events, log, _ = run(monkeypatch, items=items, in_thread=in_thread)
        assert any(entry[2] for entry in log)  # the replays took over all the same
        assert not [kind for kind, _ in events.seen if kind is EventKind.BREAKDOWN]


def test_loading_whose_workers_mostly_slept_is_not_timed_at_the_switch(monkeypatch) -> None:
    # workers that waited on storage or latency: no cpu verdict asks for the breakdown; busier ones,
    # or ones whose share cannot be read, are timed as before
    for read, timed in ((0.1, False), (0.5, True), (None, True)):
        monkeypatch.setattr(breakdown, "workers_busy", lambda iterator, read=read: read)
        events, log, _ = run(monkeypatch, items=8, busy=0.35)
        assert any(entry[2] for entry in log)  # the replays took over all the same
        assert bool([kind for kind, _ in events.seen if kind is EventKind.BREAKDOWN]) is timed, read


def test_the_workers_busy_share_is_read_from_their_scheduler() -> None:
    # one worker asleep, one on a CPU or waiting for one all its life: however busy the machine,
    # the sleeper's share stays near none and the spinner's near all
    for command, low, high in ((["sleep", "30"], 0.0, 0.3), ([sys.executable, "-c", "while True: pass"], 0.6, 1.5)):
        process = subprocess.Popen(command)
        try:
            time.sleep(1.0)
            share = breakdown.workers_busy(SimpleNamespace(_workers=[process]))
        finally:
            process.kill()
            process.wait()
        assert share is not None and low <= share <= high, (command, share)
    assert breakdown.workers_busy(SimpleNamespace(_workers=[])) is None  # no workers: nothing to read


def test_a_loader_first_iterated_after_the_switch_is_not_timed_again(monkeypatch) -> None:
    # a validation loader the script first iterates once the replays began switches too: the
    # breakdown stays the one timed on the loader switched first
    monkeypatch.setattr(modes.NextAsked, "asked", False)
    events = Events()
    spec = ChildSpec(mode=ModeSpec(mode=Mode.REAL_SYNTHETIC), breakdown_items=8)
    actuator = RealThenReplay(spec=spec, channel=events, timed=counted)  # type: ignore[arg-type]
    loaders = {1: DataLoader(Numbers(), batch_size=4), 2: DataLoader(Numbers(), batch_size=4)}  # the script's
    for loader_id, batches, word_at in ((1, 6, 3), (2, 2, -1)):
        state = LoaderState(loader_id=loader_id, collated=True)
        iterator = actuator.start_epoch(loaders[loader_id], state, DataLoader.__iter__)
        epoch = EpochState(loader=state, iterator_id=loader_id)
        for n in range(batches):
            if n == word_at:
                modes.on_next_signal(0, None)
            actuator.next_batch(iterator, epoch, _BaseDataLoaderIter.__next__)
    assert [f["loader_id"] for kind, f in events.seen if kind is EventKind.BREAKDOWN] == [1]
