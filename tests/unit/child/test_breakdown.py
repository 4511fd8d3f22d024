"""The breakdown, in-process: every step of every pipeline timed, the rest of __getitem__ and
collate; the pipelines restored; one torch thread when the loader has workers."""

from __future__ import annotations

import time

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset, IterableDataset, Subset
from torchvision import datasets
from torchvision import transforms as v1
from torchvision.transforms import v2

from fastload_cli.runner.child import breakdown


class Images(Dataset):
    """Decoding costs 2 ms per item; the pipeline is the dataset's own business."""

    def __init__(self, transform=None, target_transform=None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int):
        time.sleep(0.002)  # reading and decoding
        image = Image.new("RGB", (64, 48), color=(10 * i, 100, 200))
        label = self.target_transform(i) if self.target_transform else i
        return (self.transform(image) if self.transform else image), label


def slow_step(x):
    time.sleep(0.003)
    return x


def names(fields: dict) -> list[str]:
    return [s["name"].split("(")[0] for s in fields["steps"]]


def test_each_step_nested_and_random_ones_plus_getitem_and_collate() -> None:
    pipeline = v1.Compose(
        [
            v1.Compose([v1.Resize(32), v1.RandomHorizontalFlip()]),
            v1.RandomApply([v1.ColorJitter(0.4)], p=0.5),
            v1.Lambda(slow_step),
            v1.ToTensor(),
        ]
    )
    loader = DataLoader(Images(pipeline), batch_size=4)
    fields = breakdown.measure(loader, 8, torch)
    assert fields["items"] == 8
    assert names(fields) == [
        "Resize", "RandomHorizontalFlip", "RandomApply", "Lambda", "ToTensor",
        "read and decode ", "collate",
    ]  # fmt: skip
    by_name = {s["name"].split("(")[0]: s for s in fields["steps"]}
    assert by_name["Lambda"]["ns_per_sample"] >= 3e6  # the step sleeps 3 ms: at least that is timed
    assert by_name["read and decode "]["ns_per_sample"] >= 2e6  # __getitem__ sleeps 2 ms outside the steps
    assert (by_name["Resize"]["input_kind"], by_name["Resize"]["input_shape"]) == ("image", [64, 48])
    assert by_name["ToTensor"]["location"] == "dataset.transform[3]"
    assert by_name["Resize"]["location"] == "dataset.transform[0][0]"


def test_the_pipelines_are_restored() -> None:
    steps = [v2.RandomResizedCrop(32), v2.ToImage()]
    pipeline = v2.Compose(steps)
    dataset = Images(pipeline, target_transform=lambda y: y)
    target = dataset.target_transform
    breakdown.measure(DataLoader(dataset, batch_size=4), 4, torch)
    assert pipeline.transforms == steps
    assert dataset.transform is pipeline and dataset.target_transform is target


def test_a_plain_callable_and_a_nested_dataset() -> None:
    dataset = Subset(Images(slow_step), range(8))
    fields = breakdown.measure(DataLoader(dataset, batch_size=4), 4, torch)
    assert "slow_step" in names(fields)
    assert next(s for s in fields["steps"] if s["name"] == "slow_step")["location"] == "dataset.dataset.transform"


def test_one_torch_thread_when_the_loader_has_workers() -> None:
    before = torch.get_num_threads()
    seen = []

    def record_threads(x):
        seen.append(torch.get_num_threads())
        return x

    loader = DataLoader(Images(record_threads), batch_size=4, num_workers=2)
    fields = breakdown.measure(loader, 4, torch)
    assert set(seen) == {1} and fields["threads"] == 1
    assert torch.get_num_threads() == before


def test_torchvision_datasets_apply_the_timed_transform(tmp_path) -> None:
    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for i in range(3):
            Image.new("RGB", (40, 30)).save(tmp_path / c / f"{i}.png")
    folder = datasets.ImageFolder(tmp_path, transform=v1.Compose([v1.Resize(16), v1.ToTensor()]))
    fields = breakdown.measure(DataLoader(folder, batch_size=2), 6, torch)
    assert {"Resize", "ToTensor"} <= set(names(fields))
    resize = next(s for s in fields["steps"] if s["name"].startswith("Resize"))
    assert resize["ns_per_sample"] > 0


def test_iterable_datasets_are_not_broken_down() -> None:
    class Stream(IterableDataset):
        def __iter__(self):
            yield from range(4)

    fields = breakdown.measure(DataLoader(Stream(), batch_size=2), 4, torch)
    assert "IterableDataset" in fields["unavailable"]


def test_a_breakdown_taken_in_a_background_thread_ends_the_run_in_the_main_thread(monkeypatch, tmp_path) -> None:
    """A loader iterated in a background thread (a prefetcher) while the main thread waits on a
    queue the thread will never fill: the main thread ends the run even where a stop fastload sent
    before was swallowed (in a ``__del__``), instead of waiting forever."""
    import os
    import queue
    import signal
    import threading

    from fastload_cli.records import ChildSpec
    from fastload_cli.records.protocol import STOP_SIGNAL
    from fastload_cli.runner.child import main as child_main
    from fastload_cli.runner.child.channel import Channel
    from fastload_cli.runner.child.modes import BreakdownRun, LoaderState, MeasurementDone, Stop

    monkeypatch.setattr(Stop, "asked", True)  # the first stop was swallowed
    monkeypatch.setattr(Stop, "measured", False)
    monkeypatch.setattr(Stop, "finished", False)
    previous = signal.signal(STOP_SIGNAL, child_main._on_stop_signal)
    read, write = os.pipe()
    run = BreakdownRun(spec=ChildSpec(), channel=Channel(write), timed=lambda *a, **k: None)
    loader = DataLoader(Images(transform=v1.ToTensor()), batch_size=4)
    handoff: queue.Queue = queue.Queue()
    raised: list[BaseException] = []

    def fill() -> None:
        try:
            run.start_epoch(loader, LoaderState(loader_id=1, collated=True), DataLoader.__iter__)
        except BaseException as exc:  # the thread's own end, as a prefetcher would meet it
            raised.append(exc)

    ended: BaseException | None = None
    try:
        try:  # what the script's loop does: start its prefetcher, wait on its queue (30 s, then Empty)
            threading.Thread(target=fill, daemon=True).start()
            handoff.get(timeout=30)
        except MeasurementDone as exc:
            ended = exc
    finally:
        signal.signal(STOP_SIGNAL, previous)
        os.close(read)
        os.close(write)
    assert isinstance(ended, MeasurementDone)
    assert raised and isinstance(raised[0], MeasurementDone)


class Preset:
    """A preset object as torchvision's classification reference keeps one: a Compose in an
    attribute, applied in ``__call__``."""

    def __init__(self) -> None:
        self.transforms = v1.Compose([v1.RandomResizedCrop(32), v1.RandomHorizontalFlip(), v1.Lambda(slow_step)])
        self.finish = [v1.ToTensor()]

    def __call__(self, img):
        img = self.transforms(img)
        for step in self.finish:
            img = step(img)
        return img


def test_the_pipelines_inside_a_preset_object_are_timed_step_by_step() -> None:
    preset = Preset()
    pipeline, finish = preset.transforms, preset.finish
    fields = breakdown.measure(DataLoader(Images(preset), batch_size=4), 8, torch)
    assert names(fields) == [
        "RandomResizedCrop", "RandomHorizontalFlip", "Lambda", "ToTensor", "read and decode ", "collate",
    ]  # fmt: skip
    by_name = {s["name"].split("(")[0]: s for s in fields["steps"]}
    assert by_name["Lambda"]["location"] == "dataset.transform.transforms[2]"
    assert by_name["ToTensor"]["location"] == "dataset.transform.finish[0]"
    assert by_name["Lambda"]["ns_per_sample"] >= 3e6
    assert preset.transforms is pipeline and preset.finish is finish
    assert [type(s).__name__ for s in pipeline.transforms] == ["RandomResizedCrop", "RandomHorizontalFlip", "Lambda"]


def test_collate_is_timed_per_batch_without_what_the_first_call_pays_once() -> None:
    calls = []

    def collate(items):  # the first call pays 40 ms once (a pool started, memory first touched)
        calls.append(len(items))
        if len(calls) == 1:
            time.sleep(0.04)
        return torch.stack([torch.as_tensor(float(i)) for i, _ in enumerate(items)])

    loader = DataLoader(Images(v1.ToTensor()), batch_size=4, collate_fn=collate)
    fields = breakdown.measure(loader, 8, torch)
    per_sample = {s["name"]: s["ns_per_sample"] for s in fields["steps"]}["collate"]
    assert per_sample < 2e6  # 40 ms over 8 samples would be 5 ms each
    assert sum(calls[1:]) == 8  # every sample collated, timed


class Counted(Dataset):
    """64 items of 3 ms each, the indices read kept."""

    def __init__(self) -> None:
        self.read: list[int] = []

    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int):
        self.read.append(i)
        time.sleep(0.003)
        return torch.zeros(4), i


def test_a_budget_ends_the_breakdown_with_its_samples_spread_over_the_dataset() -> None:
    dataset = Counted()
    fields = breakdown.measure(DataLoader(dataset, batch_size=4), 64, torch, budget_s=0.01)
    # at least MIN_ITEMS are timed, however short the budget; not all 64 of them
    assert fields["items"] == len(dataset.read) and breakdown.MIN_ITEMS <= len(dataset.read) < 64
    assert max(dataset.read) >= 48 and min(dataset.read) == 0  # across the dataset, not its first quarter
    by_name = {s["name"]: s for s in fields["steps"]}
    assert by_name[breakdown.GETITEM_NAME]["ns_per_sample"] >= 3e6  # per item timed, not per item asked for
    dataset.read.clear()
    assert breakdown.measure(DataLoader(dataset, batch_size=4), 64, torch)["items"] == 64  # no budget: all


def test_no_collection_of_the_whole_process_lands_in_a_steps_time() -> None:
    import gc

    def pause(phase: str, info: dict) -> None:  # each collection takes 5 ms, as a large process's does
        if phase == "start":
            time.sleep(0.005)

    def allocating(x):
        for _ in range(2000):  # garbage enough to cross the collector's thresholds several times
            cycle: list = []
            cycle.append(cycle)
        return x

    gc.callbacks.append(pause)
    try:
        fields = breakdown.measure(DataLoader(Images(v1.Lambda(allocating)), batch_size=4), 8, torch)
    finally:
        gc.callbacks.remove(pause)
    assert gc.isenabled()  # as it was
    by_name = {s["name"].split("(")[0]: s for s in fields["steps"]}
    assert by_name["Lambda"]["ns_per_sample"] < 5e6  # its own allocations, a fraction of a millisecond
