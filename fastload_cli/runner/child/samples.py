"""Inside the child: what a dataset's first sample is made of, to check that no-aug's stand-ins
(``transforms``) and try's decoded-sample cache leave it the same; the stand-ins are undone when
they do not."""

from __future__ import annotations

from typing import Any

from fastload_cli.runner.child.transforms import MAX_DEPTH, Walk


def signature(value: Any, depth: int = 0) -> object:
    """What a sample is made of, for comparing two pipelines' outputs: each tensor's or array's
    shape and dtype, each image's size and mode, the structure around them."""
    if depth > MAX_DEPTH:
        return "..."
    if isinstance(value, dict):
        return tuple((str(k), signature(v, depth + 1)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(signature(v, depth + 1) for v in value))
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return ("array", tuple(shape), str(dtype))
    if type(value).__module__.startswith("PIL"):
        return ("image", getattr(value, "size", None), getattr(value, "mode", None))
    return type(value).__name__


def probe(dataset: Any) -> object | None:
    """The signature of the dataset's first sample: ``dataset[0]``, or for a Hugging Face iterable
    dataset (which starts again at each ``iter()``) its first example. None when the first sample
    fails or cannot be had without consuming the script's stream (any other iterable dataset)."""
    try:
        if _is_iterable_dataset(dataset):
            return signature(next(iter(dataset))) if _restartable(dataset) else None
        return signature(dataset[0]) if hasattr(dataset, "__getitem__") else None
    except Exception:  # the script's own dataset: whatever it raises, there is nothing to compare
        return None


def _restartable(dataset: Any) -> bool:
    """A Hugging Face ``datasets.IterableDataset``: a description of a stream, read from its start
    by every ``iter()``, so reading its first example takes nothing from the script's epochs."""
    return type(dataset).__module__.startswith("datasets.") and hasattr(dataset, "_ex_iterable")


def _is_iterable_dataset(dataset: Any) -> bool:
    return any(base.__name__ == "IterableDataset" for base in type(dataset).__mro__)


def check_on_sample(dataset: Any, walk: Walk, before: object | None) -> str | None:
    """After ``derandomize``: None when the stand-ins give the first sample the same make-up as
    the original pipeline did (``before``); otherwise every replacement is undone and the reason
    returned."""
    if before is None or not walk.undo:
        return None
    after = probe(dataset)
    if after == before:
        return None
    walk.restore()
    if after is None:
        return "with the stand-ins the first sample failed to load"
    return f"the stand-ins changed the first sample ({_short(before)} -> {_short(after)})"


def _short(sig: object) -> str:
    text = str(sig)
    return text if len(text) <= 160 else text[:157] + "..."
