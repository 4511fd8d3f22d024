"""The fixes library (``fastload_cli.fixes``): each fix keeps what it wraps working and does what it
says. No timing: the gains are what ``fastload try`` measures."""

from __future__ import annotations

import multiprocessing
import threading
from collections import namedtuple
from typing import Any

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, Subset

from fastload_cli.fixes import CudaPrefetcher, DecodedCache, GpuNormalize, ThreadPrefetcher, map_tensors, sample_nbytes
from fastload_cli.runner.child.fixing import CachedView

Pair = namedtuple("Pair", "x y")


class Source:
    """An iterable whose items say when they were fetched."""

    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.fetched = [threading.Event() for _ in range(n)]
        self.batch_size = 7

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Any:
        for i in range(self.n):
            if i == self.fail_at:
                raise KeyError(f"item {i} is broken")
            self.fetched[i].set()
            yield i


def test_thread_prefetcher_keeps_order_length_and_attributes() -> None:
    source = Source(20)
    prefetched = ThreadPrefetcher(source, depth=2)
    assert len(prefetched) == 20 and prefetched.batch_size == 7
    assert list(prefetched) == list(range(20))
    assert list(prefetched) == list(range(20))  # every iter() is a new epoch
    with pytest.raises(AttributeError):
        _ = prefetched.no_such_attribute


def test_thread_prefetcher_fetches_the_next_item_before_it_is_asked_for() -> None:
    source = Source(5)
    epoch = iter(ThreadPrefetcher(source, depth=1))
    assert next(epoch) == 0
    assert source.fetched[1].wait(timeout=10)  # fetched by the thread while the step would run
    assert list(epoch) == [1, 2, 3, 4]


def test_thread_prefetcher_raises_the_loaders_error_where_the_loop_asks() -> None:
    epoch = iter(ThreadPrefetcher(Source(5, fail_at=3)))
    assert [next(epoch) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(KeyError, match="item 3 is broken"):
        next(epoch)
    with pytest.raises(StopIteration):
        next(epoch)


def test_thread_prefetcher_thread_ends_when_the_loop_breaks_out() -> None:
    epoch = iter(ThreadPrefetcher(Source(1000), depth=1))
    next(epoch)
    thread = epoch._thread  # type: ignore[attr-defined]
    epoch.close()  # type: ignore[attr-defined]
    thread.join(timeout=10)
    assert not thread.is_alive()
    with pytest.raises(ValueError, match="depth"):
        ThreadPrefetcher([], depth=0)


def test_thread_prefetcher_over_a_dataloader_with_workers() -> None:
    data = torch.arange(64.0).view(32, 2)
    loader = DataLoader(data, batch_size=4, num_workers=2)
    batches = list(ThreadPrefetcher(loader))
    assert torch.equal(torch.cat(batches), data)


class Images(Dataset):
    """A dataset that 'decodes' by building a tensor, counts its reads, and applies ``transform``."""

    def __init__(self, n: int = 10, transform: Any = None) -> None:
        self.n, self.transform, self.reads = n, transform, [0] * n
        self.all_reads = multiprocessing.Value("i", 0)  # counted in every process (workers are forked)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        self.reads[index] += 1
        with self.all_reads.get_lock():
            self.all_reads.value += 1
        image = torch.full((3, 4, 4), float(index))
        if self.transform is not None:
            image = self.transform(image)
        return image, index % 2


class Jitter:
    """A random transform: adds a different value at each call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return image + self.calls


def test_decoded_cache_reads_each_sample_once_and_augments_every_time() -> None:
    jitter = Jitter()
    dataset = Images(transform=jitter)
    cached = DecodedCache(dataset)
    first = [cached[i] for i in range(10)]
    second = [cached[i] for i in range(10)]
    assert dataset.reads == [1] * 10  # decoded once
    assert jitter.calls == 20  # augmented at every access
    assert first[3][1] == second[3][1] == 1  # the target passes through
    assert not torch.equal(first[3][0], second[3][0])  # the random transform ran again
    assert torch.equal(second[3][0], torch.full((3, 4, 4), 3.0) + 14)
    assert len(cached) == 10 and cached.n == 10 and cached.cached == 10
    assert cached.cached_bytes == 10 * (3 * 4 * 4 * 4 + sample_nbytes(0))


class Segmentation(Dataset):
    """A dataset written as albumentations' users write it: the transform called with keywords,
    its result's entries taken by name (``transform(image=..., mask=...)["image"]``)."""

    def __init__(self, transform: Any) -> None:
        self.transform, self.reads = transform, [0] * 6

    def __len__(self) -> int:
        return 6

    def __getitem__(self, index: int) -> tuple[Any, Any, int]:
        self.reads[index] += 1
        image, mask = torch.full((3, 4, 4), float(index)), torch.zeros(4, 4)
        out = self.transform(image=image, mask=mask)
        return out["image"], out["mask"], index


class KeywordJitter:
    """A random transform called with keywords: the same random shift on the image and its mask."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *, image: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        self.calls += 1
        return {"image": image + self.calls, "mask": mask + self.calls}


def test_decoded_cache_caches_a_transform_called_with_keywords_and_runs_it_once_per_call() -> None:
    jitter = KeywordJitter()
    dataset = Segmentation(jitter)
    cached = DecodedCache(dataset)
    first = [cached[i] for i in range(6)]
    second = [cached[i] for i in range(6)]
    assert dataset.reads == [1] * 6  # decoded once
    assert jitter.calls == 12  # one call per access: the image and its mask share it
    image, mask, index = second[2]
    assert (
        index == 2 and torch.equal(image, torch.full((3, 4, 4), 2.0) + 9) and torch.equal(mask, torch.full((4, 4), 9.0))
    )
    assert not torch.equal(first[2][0], image)  # the random transform ran again
    assert cached.cached_bytes >= 6 * (3 * 4 * 4 * 4 + 4 * 4 * 4)  # the image and the mask kept
    assert cached.release() is dataset and dataset[0][0].shape == (3, 4, 4)  # its transform back


def test_decoded_cache_stays_within_its_memory_bound() -> None:
    dataset = Images(transform=None)
    one = sample_nbytes(Images()[0])
    cached = DecodedCache(dataset, max_bytes=3 * one)
    for _ in range(2):
        for i in range(10):
            cached[i]
    assert cached.cached == 3 and cached.cached_bytes <= 3 * one
    assert dataset.reads[:3] == [1, 1, 1] and dataset.reads[3:] == [2] * 7  # past the bound: read as usual


def test_decoded_cache_fill_then_workers_share_it() -> None:
    dataset = Images(n=16, transform=Jitter())
    cached = DecodedCache(Subset(dataset, range(16)))  # the transform is found through .dataset
    assert cached.fill(threads=4) == 16 and dataset.reads == [1] * 16
    loader = DataLoader(cached, batch_size=4, num_workers=2)
    images = torch.cat([x for x, _ in loader])
    assert images.shape == (16, 3, 4, 4)
    assert dataset.all_reads.value == 16  # the forked workers read nothing again
    loader = DataLoader(DecodedCache(Images(n=16)), batch_size=4, num_workers=2)
    unfilled = loader.dataset.dataset
    assert len(list(loader)) == 4 and unfilled.all_reads.value == 16  # without fill(), the workers read


def test_a_cached_view_filled_with_fewer_samples_than_its_loader_draws_serves_them_again_from_memory() -> None:
    dataset = Images(n=32, transform=lambda image: image)
    view = CachedView(DecodedCache(dataset))
    assert view.fill(8) == 8 and dataset.reads == [1] * 8 + [0] * 24
    loader = DataLoader(view, batch_size=4, num_workers=2, shuffle=True)
    images = torch.cat([x for x, _ in loader])
    assert len(view) == 32 and images.shape == (32, 3, 4, 4)  # the epoch the script expects
    assert dataset.all_reads.value == 8  # every sample past the first 8 was one of them, from memory
    assert {int(image.min()) for image in images} == set(range(8))  # each image is one of theirs


def test_decoded_cache_refuses_a_dataset_without_the_attribute() -> None:
    with pytest.raises(ValueError, match="no 'transform' attribute"):
        DecodedCache(torch.utils.data.TensorDataset(torch.zeros(4)))


def test_gpu_normalize_matches_normalising_floats_on_the_host() -> None:
    images = torch.randint(0, 256, (2, 3, 5, 5), dtype=torch.uint8)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    expected = (images.float() / 255 - torch.tensor(mean).view(3, 1, 1)) / torch.tensor(std).view(3, 1, 1)
    normalised = GpuNormalize(mean, std)(images)
    assert normalised.dtype is torch.float32
    assert torch.allclose(normalised, expected, atol=1e-6)
    assert GpuNormalize(mean, std)(images[0].double()).dtype is torch.float64  # a float input keeps its dtype
    with pytest.raises(ValueError, match="3 channels"):
        GpuNormalize(mean, std)(torch.zeros(2, 1, 5, 5))
    with pytest.raises(ValueError, match="std cannot be 0"):
        GpuNormalize((0.5,), (0.0,))


def test_map_tensors_keeps_the_batch_structure() -> None:
    batch = {"image": torch.zeros(2), "pair": Pair(torch.ones(1), "label"), "list": [torch.ones(2), 3]}
    doubled = map_tensors(batch, lambda t: t * 2 + 1)
    assert isinstance(doubled["pair"], Pair) and doubled["pair"].y == "label"
    assert torch.equal(doubled["image"], torch.ones(2)) and doubled["list"][1] == 3


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_cuda_prefetcher_refuses_without_cuda() -> None:
    with pytest.raises(RuntimeError, match="needs CUDA"):
        CudaPrefetcher([torch.zeros(1)])


@pytest.mark.gpu
def test_cuda_prefetcher_hands_over_device_batches_in_order() -> None:
    data = torch.arange(40.0).view(20, 2)
    loader = DataLoader(data, batch_size=4, pin_memory=True)
    batches = list(CudaPrefetcher(loader))
    assert all(b.is_cuda for b in batches)
    assert torch.equal(torch.cat(batches).cpu(), data)
    with pytest.warns(UserWarning, match="not in pinned memory"):
        list(CudaPrefetcher(DataLoader(data, batch_size=4)))
