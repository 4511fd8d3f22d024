"""A points run inside the child: num_workers settings in turn on a real DataLoader, new workers
taking over the rest of the epoch's indices mid-epoch."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.dataloader import _BaseDataLoaderIter

from fastload_cli.records import ChildSpec, EventKind, Mode, ModeSpec
from fastload_cli.runner.child import in_process as points
from fastload_cli.runner.child import modes
from fastload_cli.runner.child.modes import EpochState, LoaderState
from tests.unit.child.test_interleave import Events, counted


class Numbers(Dataset):
    def __len__(self) -> int:
        return 40

    def __getitem__(self, index: int) -> Any:
        return torch.tensor(index)


def run_epochs(
    settings: tuple[tuple[int, int], ...], epochs: int, nudge_at: int = -1, *, at_epochs: bool = False
) -> tuple[list, Events, Any]:
    """The loop as a script writes it, with the sensor's calls made by hand; ``nudge_at``: the
    parent says the setting in force settled after this many batches; ``at_epochs``: settings
    take over only as epochs start."""
    events = Events()
    actuator = points.InProcessSettings(
        spec=ChildSpec(mode=ModeSpec(mode=Mode.IN_PROCESS), turns=settings, turn_at_epochs=at_epochs),
        channel=events,
        timed=counted,
    )  # type: ignore[arg-type]
    arguments: dict[str, Any] = {"dataset": Numbers(), "batch_size": 4, "shuffle": True}
    actuator.before_init(arguments, loader_id=1)
    loader = DataLoader(**arguments)
    actuator.after_init(loader, 1)
    state, seen = LoaderState(loader_id=1, collated=True), []
    for _ in range(epochs):
        iterator = actuator.start_epoch(loader, state, DataLoader.__iter__)
        epoch, batches = EpochState(loader=state, iterator_id=1), []
        while True:
            if state.batches == nudge_at:
                modes.on_next_signal(0, None)
            try:
                batches.append(actuator.next_batch(iterator, epoch, _BaseDataLoaderIter.__next__))
            except StopIteration:
                break
        seen.append(torch.cat(batches).tolist())
    return seen, events, loader


def phases(events: Events) -> list[tuple[int, str, int]]:
    return [(f["batch"], f["phase"], len(f["worker_pids"])) for kind, f in events.seen if kind is EventKind.PHASE]


def test_each_setting_takes_over_after_its_batches_and_no_index_is_read_twice() -> None:
    seen, events, loader = run_epochs(((0, 3), (2, 4), (1, 100)), epochs=2)
    # 0 workers for batches 1-3, then 2 workers (their own processes) for 4-7, then 1 for the rest
    assert phases(events) == [(0, "workers=0", 0), (3, "workers=2", 2), (7, "workers=1", 1)]
    first, second = seen
    assert len(set(first)) == len(first)  # the rest of the epoch's indices, never one again
    # the two hand-overs gave up what the workers had in hand (none with 0 workers; at most
    # 2 x 2 batches prefetched and 2 being built with 2): the epoch ended that many batches short
    assert 40 - 6 * 4 <= len(first) < 40 and len(first) % 4 == 0
    assert sorted(second) == list(range(40))  # the next epoch is whole, at the setting in force
    assert loader.num_workers == 1 and loader.prefetch_factor == 2


def test_a_setting_hands_over_when_the_parent_says_it_settled() -> None:
    seen, events, _ = run_epochs(((0, 100), (0, 100)), epochs=1, nudge_at=5)
    assert phases(events) == [(0, "workers=0", 0), (6, "workers=0", 0)]
    assert sorted(seen[0]) == list(range(40))  # without workers nothing was in hand to give up
    assert not points._Next.asked


def test_with_turns_at_epochs_each_setting_takes_over_as_an_epoch_starts() -> None:
    # 10 batches an epoch: 2 workers for the warm-up epoch and one more, then 0 for one, then 1;
    # the parent saying a setting settled mid-epoch changes nothing
    seen, events, loader = run_epochs(((2, 20), (0, 10), (1, 10)), epochs=5, nudge_at=25, at_epochs=True)
    assert phases(events) == [(0, "workers=2", 2), (20, "workers=0", 0), (30, "workers=1", 1)]
    assert all(sorted(epoch) == list(range(40)) for epoch in seen)  # every epoch whole, from its own iter()
    assert loader.num_workers == 1 and loader.prefetch_factor == 2  # the last setting runs to the end
    points._Next.asked = False  # the signal no mid-epoch turn took up


def test_persistent_workers_are_never_switched() -> None:
    events = Events()
    actuator = points.InProcessSettings(
        spec=ChildSpec(mode=ModeSpec(mode=Mode.IN_PROCESS), turns=((2, 3), (1, 3))), channel=events, timed=None
    )  # type: ignore[arg-type]
    loader = DataLoader(Numbers(), num_workers=2, persistent_workers=True)
    actuator.after_init(loader, 1)
    assert 1 not in actuator._loaders
    assert any("not switched: persistent workers" in f["original"] for _, f in events.seen)


def test_the_parents_signals_to_the_child_are_distinct() -> None:
    # stop, the stack probe and "next setting" each mean one thing to the child
    from fastload_cli.records.protocol import NEXT_SIGNAL, STACK_SIGNAL, STOP_SIGNAL

    assert len({STOP_SIGNAL, STACK_SIGNAL, NEXT_SIGNAL}) == 3
