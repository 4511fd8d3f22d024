"""The split run inside the child: one dataset, four pipelines, switched by a shared flag."""

from __future__ import annotations

import multiprocessing
from typing import Any

import torch
from torch.utils.data import Dataset, IterableDataset

from fastload_cli.records import ChildSpec, EventKind, Mode, ModeSpec
from fastload_cli.runner.child.interleave import PHASES, InterleavedSplit, Switched
from fastload_cli.runner.child.modes import EpochState, LoaderState


class Jitter:
    """Random augmentation, by its name: adds 0.5."""

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.5


class Reads(Dataset):
    """Counts its reads (storage and decoding), then runs its transform."""

    def __init__(self) -> None:
        self.transform = Jitter()
        self.reads = 0

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> Any:
        self.reads += 1
        return self.transform(torch.full((4,), float(index))), index


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[EventKind, dict[str, Any]]] = []

    def emit(self, kind: EventKind, **fields: Any) -> None:
        self.seen.append((kind, fields))

    def substitution(
        self, loader_id: int, location: str, original: str, replacement: str, guessed: bool = False, undone: str = ""
    ) -> None:
        fields = {"location": location, "original": original, "replacement": replacement}
        self.emit(EventKind.SUBSTITUTION, **fields, undone=bool(undone), reason=undone)


def counted(epoch: EpochState, produce: Any, iterator: Any, *, synthetic: bool) -> Any:
    """The sensor's part an actuator relies on, by hand: the batch produced, and counted in its
    epoch and its loader."""
    batch = produce(iterator)
    epoch.index += 1
    epoch.loader.batches += 1
    return batch


def split_actuator(events: Events, **spec: Any) -> InterleavedSplit:
    def timed(epoch: EpochState, produce: Any, iterator: Any, *, synthetic: bool) -> Any:
        epoch.loader.batches += 1
        return produce(iterator)

    child = ChildSpec(mode=ModeSpec(mode=Mode.SPLIT), **spec)
    return InterleavedSplit(spec=child, channel=events, timed=timed)  # type: ignore[arg-type]


def switched(events: Events) -> tuple[Switched, Reads]:
    dataset = Reads()
    arguments: dict[str, Any] = {"dataset": dataset}
    split_actuator(events).before_init(arguments, loader_id=1)
    view = arguments["dataset"]
    assert isinstance(view, Switched)
    assert view.view is not None
    view.view.fill(len(view))
    return view, dataset


def test_each_pipeline_reads_and_augments_as_its_mode_would() -> None:
    events = Events()
    view, dataset = switched(events)
    read = dataset.reads
    for phase, (name, replaced, cached) in enumerate(PHASES):
        view.flag.value = phase
        x, label = view[3]
        assert label == 3
        assert float(x[0]) == (3.0 if replaced else 3.5), name  # the stand-in changes nothing
        assert dataset.reads == read + (0 if cached else 1), name  # cached: no read at all
        read = dataset.reads
    # the real pipeline again, after the others: the real transform is back
    view.flag.value = 0
    assert float(view[2][0][0]) == 2.5
    kinds = [fields["replacement"] for kind, fields in events.seen if kind is EventKind.SUBSTITUTION]
    assert "Identity" in kinds and any(k.startswith("cached in memory") for k in kinds)


def test_the_flag_reaches_a_copy_of_the_dataset_in_another_process() -> None:
    view, _ = switched(Events())
    context = multiprocessing.get_context("fork")
    queue = context.SimpleQueue()

    def worker(dataset: Switched, out: Any) -> None:
        out.put(float(dataset[1][0][0]))  # the real pipeline: jittered
        out.put("ready")
        while dataset.flag.value == 0:  # the parent changes the pipeline after the fork
            pass
        out.put(float(dataset[1][0][0]))

    process = context.Process(target=worker, args=(view, queue))
    process.start()
    try:
        assert queue.get() == 1.5 and queue.get() == "ready"
        view.flag.value = 1  # no-aug
        assert queue.get() == 1.0
    finally:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()


def test_turns_go_round_and_back_after_the_warm_up() -> None:
    events = Events()
    actuator = split_actuator(events, warmup=2, phase_batches=3)
    arguments: dict[str, Any] = {"dataset": Reads()}
    actuator.before_init(arguments, loader_id=1)
    loader = LoaderState(loader_id=1, collated=True)
    epoch = EpochState(loader=loader, iterator_id=1)
    for _ in range(2 + 3 * 8):
        actuator.next_batch(None, epoch, lambda _: None)
    marks = [(f["batch"], f["phase"]) for kind, f in events.seen if kind is EventKind.PHASE]
    names = ["real", "no-aug", "cached", "cached-no-aug"]
    assert marks == list(zip(range(2, 27, 3), [*names, *reversed(names), "real"], strict=True))
    assert arguments["dataset"].flag.value == 0  # the last turn: the real pipeline's


def test_a_dataset_with_nothing_to_switch_is_left_as_it_is() -> None:
    class Stream(IterableDataset):  # no indices to cache by, no augmentation to replace
        def __iter__(self) -> Any:
            return iter([torch.zeros(2)])

    events = Events()
    stream = Stream()
    arguments: dict[str, Any] = {"dataset": stream}
    split_actuator(events).before_init(arguments, loader_id=1)
    assert arguments["dataset"] is stream
    assert any(f["original"] == "no augmentation to replace and nothing to cache" for _, f in events.seen)
