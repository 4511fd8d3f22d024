"""Decoded samples kept in RAM, the augmentation run every time: ``DecodedCache``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastload_cli.fixes.wrapping import map_leaves, passed_through

# Decoded samples kept in RAM, the augmentation run every time


class _Decoded:
    """What the dataset's transform was given: the decoded sample, marked in the dataset's output.
    A transform called with keywords (albumentations' ``transform(image=image)["image"]``) is
    given them all (``keywords``); the entries the dataset takes from its result are ``_Picked``."""

    __slots__ = ("keywords", "value")

    def __init__(self, value: Any = None, **keywords: Any) -> None:
        self.value, self.keywords = value, keywords

    def __getitem__(self, key: Any) -> _Picked:
        return _Picked(self, key)

    def applied(self, transform: Callable[..., Any]) -> Any:
        """What the transform gives for what it was given."""
        return transform(self.value, **self.keywords) if self.value is not None else transform(**self.keywords)


class _Picked:
    """One entry of a keyword-called transform's result, as the dataset took it: ``source``'s
    result at ``key``."""

    __slots__ = ("key", "source")

    def __init__(self, source: _Decoded, key: Any) -> None:
        self.source, self.key = source, key


class DecodedCache:
    """``dataset`` with each decoded sample kept in memory after its first read, up to ``max_bytes``.

    The dataset's ``transform`` (or the attribute named) is taken off it: the dataset reads and
    decodes, the cache keeps what the transform would have been given, and the transform (random
    augmentation included) runs on it at every access, as before. Items past the bound are read
    as usual. With DataLoader workers, ``fill()`` before the loader starts lets every worker share
    the cache (workers are forked with it); otherwise each worker caches its own items.
    ``attribute=None`` keeps the dataset's whole items: only for datasets with nothing random in them.
    """

    def __init__(self, dataset: Any, *, max_bytes: int | None = None, attribute: str | None = "transform") -> None:
        self.dataset, self.max_bytes = dataset, max_bytes
        self.transform: Callable[[Any], Any] | None = None
        if attribute is not None:
            owner = _owner_of(dataset, attribute)
            if owner is None:
                raise ValueError(
                    f"{type(dataset).__qualname__} has no '{attribute}' attribute (directly or through .dataset): "
                    "its decoding cannot be cached apart from its transform"
                )
            self.transform = getattr(owner, attribute)
            setattr(owner, attribute, _Decoded)  # the dataset now returns the decoded sample, marked
        self._restore = (owner, attribute) if attribute is not None else None
        self._cache: dict[int, Any] = {}
        self.cached_bytes = 0

    def __len__(self) -> int:
        return len(self.dataset)

    def __getattr__(self, name: str) -> Any:  # classes, targets, ...
        return passed_through(self, "dataset", name)

    def __getitem__(self, index: int) -> Any:
        found = self._cache.get(index)
        if found is None:
            found = self._read(index)
        return _transformed(found, self.transform)

    def read(self, index: int) -> Any:
        """Item ``index`` read and decoded from the dataset and transformed, as the dataset alone
        gives it: the cache is neither consulted nor filled."""
        return _transformed(self.dataset[index], self.transform)

    def _read(self, index: int) -> Any:
        item = self.dataset[index]
        size = sample_nbytes(item)
        if self.max_bytes is None or self.cached_bytes + size <= self.max_bytes:
            self._cache[index] = item
            self.cached_bytes += size
        return item

    def fill(self, indices: Sequence[int] | None = None, threads: int = 8) -> int:
        """Read and decode ``indices`` (all, by default) into the cache until the bound is reached,
        with ``threads`` reads in flight; returns how many items are cached."""
        todo = [i for i in (indices if indices is not None else range(len(self))) if i not in self._cache]
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            for index, item in zip(todo, pool.map(self.dataset.__getitem__, todo), strict=True):
                size = sample_nbytes(item)
                if self.max_bytes is not None and self.cached_bytes + size > self.max_bytes:
                    break
                self._cache[index] = item
                self.cached_bytes += size
        return len(self._cache)

    @property
    def cached(self) -> int:
        return len(self._cache)

    def release(self) -> Any:
        """Give the dataset its transform back and drop the cache; returns the dataset."""
        if self._restore is not None:
            owner, attribute = self._restore
            setattr(owner, attribute, self.transform)
            self._restore = None
        self._cache.clear()
        self.cached_bytes = 0
        return self.dataset

    def indices(self) -> list[int]:
        """The indices whose decoded samples are in memory, in order."""
        return sorted(self._cache)


def _owner_of(dataset: Any, attribute: str) -> Any:
    """The object holding ``attribute``: the dataset, or one it wraps (``Subset.dataset``, ...)."""
    seen = 0
    while dataset is not None and seen < 8:
        if hasattr(dataset, attribute):
            return dataset
        dataset, seen = getattr(dataset, "dataset", None), seen + 1
    return None


def _transformed(item: Any, transform: Callable[..., Any] | None) -> Any:
    """The dataset's output with the transform run on the decoded sample it marked: once for
    each call the dataset made, whatever entries of its result it took (an image and its mask
    get the same random crop)."""
    results: dict[int, Any] = {}

    def apply(marked: _Decoded | _Picked) -> Any:
        source = marked.source if isinstance(marked, _Picked) else marked
        if id(source) not in results:
            results[id(source)] = source.applied(transform) if transform is not None else _untransformed(source)
        found = results[id(source)]
        return found[marked.key] if isinstance(marked, _Picked) else found

    return map_leaves(item, lambda x: isinstance(x, (_Decoded, _Picked)), apply)


def _untransformed(source: _Decoded) -> Any:
    """What a dataset with no transform is given back: the sample, or the keywords as a dict."""
    return source.value if source.value is not None or not source.keywords else dict(source.keywords)


def sample_nbytes(item: Any) -> int:
    """Bytes a decoded sample holds: tensors and arrays by their data, images by their pixels,
    containers by their contents, anything else by ``sys.getsizeof``."""
    if isinstance(item, _Decoded):
        return sample_nbytes(item.value) + sample_nbytes(item.keywords)
    if isinstance(item, _Picked):
        return sample_nbytes(item.source)
    if hasattr(item, "element_size") and hasattr(item, "numel"):
        return int(item.element_size() * item.numel())
    if hasattr(item, "nbytes") and not isinstance(item, (bytes, bytearray)):
        return int(item.nbytes)
    if hasattr(item, "getbands") and hasattr(item, "size"):  # a PIL image
        width, height = item.size
        return int(width * height * len(item.getbands()))
    if isinstance(item, dict):
        return sum(sample_nbytes(v) for v in item.values())
    if isinstance(item, (tuple, list)):
        return sum(sample_nbytes(v) for v in item)
    return sys.getsizeof(item)
