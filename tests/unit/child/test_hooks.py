"""Child-side helpers: batch sizes and bytes, fresh copies, the event channel, options."""

from __future__ import annotations

import json
import os
from collections import namedtuple

import torch

from fastload_cli.records import ChildSpec, EventKind, Mode, ModeSpec
from fastload_cli.runner.child.batches import batch_layout, batch_size_and_bytes, copy_batch
from fastload_cli.runner.child.channel import Channel

Pair = namedtuple("Pair", "image label")


class Custom:
    def __init__(self) -> None:
        self.x = torch.ones(4, 2)


def test_batch_size_is_the_leading_dimension_and_bytes_add_up() -> None:
    batch = {"image": torch.zeros(8, 3, 4, 4), "label": torch.zeros(8, dtype=torch.int64)}
    assert batch_size_and_bytes(batch, collated=True) == (8, 8 * 3 * 4 * 4 * 4 + 8 * 8)


def test_uncollated_batches_count_one_sample() -> None:
    assert batch_size_and_bytes(torch.zeros(3, 32, 32), collated=False)[0] == 1


def test_batches_without_tensors_still_count() -> None:
    assert batch_size_and_bytes(["a", "b"], collated=True) == (1, 0)


def test_copies_are_fresh_and_equal_for_every_container() -> None:
    batches = [
        torch.arange(6.0),
        (torch.arange(3.0), torch.tensor([1, 2, 3])),
        [torch.ones(2), "name"],
        {"x": torch.ones(2), "meta": {"id": torch.tensor([7])}},
        Pair(torch.ones(2), torch.zeros(2)),
        Custom(),
    ]
    for batch in batches:
        copy = copy_batch(batch)
        assert type(copy) is type(batch)
        original = dict(batch_layout_tensors(batch))
        copied = dict(batch_layout_tensors(copy))
        assert original.keys() == copied.keys()
        for path, tensor in original.items():
            assert torch.equal(tensor, copied[path])
            assert tensor.data_ptr() != copied[path].data_ptr(), path


def test_a_replayed_tensor_is_copied_as_it_was_whichever_way_it_is_copied() -> None:
    """Plain CPU tensors up to SERIAL_COPY_BYTES are copied by one memcpy (numpy's), the rest by
    torch's clone; either way the copy is the tensor's equal in its own memory, writable, with the
    tensor's type, dtype, strides and grad."""
    from fastload_cli.runner.child import batches

    class Image(torch.Tensor):  # a tensor subclass, as torchvision's tv_tensors are
        pass

    large = torch.zeros(batches.SERIAL_COPY_BYTES // 4 + 1)
    cases = {
        "plain": torch.arange(6 * 32 * 32, dtype=torch.float32).reshape(6, 32, 32),
        "uint8": torch.arange(256, dtype=torch.uint8),
        "bfloat16": torch.ones(4, 4, dtype=torch.bfloat16),  # numpy has no bfloat16: tried, then cloned
        "subclass": torch.ones(3, 2).as_subclass(Image),
        "strided": torch.arange(12.0).reshape(3, 4).t(),
        "grad": torch.ones(3, requires_grad=True),
        "large": large,
    }
    serial = {name for name, t in cases.items() if batches._serial_copy(t, torch)}
    assert serial == {"plain", "uint8", "bfloat16"}
    for name, tensor in cases.items():
        copy = copy_batch(tensor)
        assert type(copy) is type(tensor) and copy.dtype == tensor.dtype, name
        assert copy.stride() == tensor.stride() and copy.requires_grad == tensor.requires_grad, name
        assert torch.equal(copy.detach(), tensor.detach()) and copy.data_ptr() != tensor.data_ptr(), name
        if not copy.requires_grad:
            copy.add_(1)  # the step may change its inputs in place: the next replay must not see it
            assert not torch.equal(copy, tensor), name


def test_copies_without_their_tensors_are_new_containers_around_the_same_tensors() -> None:
    """The replay of a script that trains on CUDA: a host clone would cost as much as the copy to
    the GPU it measures, and a script that pops a key must not change the next replay."""
    batch = {"x": torch.ones(2), "meta": [torch.tensor([7])], "pair": Pair(torch.ones(2), torch.zeros(2))}
    copy = copy_batch(batch, tensors=False)
    assert copy is not batch and copy["meta"] is not batch["meta"] and type(copy["pair"]) is Pair
    assert copy["x"] is batch["x"] and copy["meta"][0] is batch["meta"][0] and copy["pair"][1] is batch["pair"][1]
    copy.pop("x")
    assert "x" in batch


def batch_layout_tensors(batch):
    from fastload_cli.runner.child.batches import tensor_leaves

    return list(tensor_leaves(batch))


def test_layout_describes_each_tensor() -> None:
    layout = batch_layout((torch.zeros(2, 3, dtype=torch.uint8), torch.zeros(2)))
    assert layout[0] == {
        "path": "[0]",
        "dtype": "uint8",
        "shape": [2, 3],
        "nbytes": 6,
        "pinned": False,
        "device": "cpu",
    }


def test_channel_writes_json_lines_and_is_silent_in_forked_children() -> None:
    read_fd, write_fd = os.pipe()
    channel = Channel(write_fd)
    channel.emit(EventKind.BATCH, loader_id=1)
    pid = os.fork()
    if pid == 0:  # a forked DataLoader worker: must not write
        channel.emit(EventKind.BATCH, loader_id=2)
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as reader:
        lines = reader.read().splitlines()
    assert [json.loads(line) for line in lines] == [{"loader_id": 1, "kind": "batch"}]


def test_options_round_trip() -> None:
    spec = ModeSpec(mode=Mode.WORKERS, workers=4, prefetch_factor=3, pin_memory=False)
    options = ChildSpec(mode=spec, warmup=3, keep_transforms=("A",), drop_transforms=("B",), breakdown_items=7)
    assert ChildSpec.from_json(options.to_json()) == options


def test_a_huge_list_in_a_batch_is_not_walked_in_full() -> None:
    batch = (torch.zeros(4, 2), ["file.jpg"] * 1_000_000)
    from fastload_cli.runner.child.batches import tensor_leaves

    assert [path for path, _ in tensor_leaves(batch)] == ["[0]"]


def test_the_framework_that_builds_a_loader_is_found_on_the_stack() -> None:
    import sys

    from fastload_cli.runner.child.hooks import framework_on_stack

    def called_from(*modules: str) -> str | None:
        """framework_on_stack as seen from code in ``modules``, outermost first."""
        call = "lambda: framework_on_stack(sys._getframe())"
        inner = eval(call, {"framework_on_stack": framework_on_stack, "sys": sys, "__name__": "torch.utils.data"})
        for name in reversed(modules):
            inner = eval("lambda: f()", {"f": inner, "__name__": name})
        return inner()

    assert called_from("__main__", "transformers.trainer", "accelerate.data_loader") == "transformers"
    assert called_from("__main__", "accelerate.accelerator") == "accelerate"
    assert called_from("__main__", "timm.data.loader") == "timm"
    assert called_from("__main__") is None


def test_the_loop_asking_past_an_epochs_last_batch_reports_the_epochs_end() -> None:
    from fastload_cli.runner.child.hooks import Hooks
    from fastload_cli.runner.child.modes import EpochState, LoaderState
    from tests.unit.child.test_interleave import Events

    events = Events()
    hooks = Hooks(channel=events, spec=ChildSpec(mode=ModeSpec(mode=Mode.REAL)))  # type: ignore[arg-type]
    epoch = EpochState(loader=LoaderState(loader_id=3, collated=True), iterator_id=7)
    assert hooks.timed(epoch, next, iter([torch.ones(2)]), synthetic=False).shape == (2,)
    try:
        hooks.timed(epoch, next, iter([]), synthetic=False)
    except StopIteration:
        pass
    else:
        raise AssertionError("the end of the epoch must reach the loop")
    kinds = [kind for kind, _ in events.seen]
    assert kinds[0] is EventKind.BATCH and kinds[-1] is EventKind.EPOCH_END
    batch, end = events.seen[0][1], events.seen[-1][1]
    assert (end["loader_id"], end["iterator_id"]) == (3, 7)
    assert end["ended_ns"] >= batch["wait_end_ns"]
