"""Inside the child: what a batch holds (samples, bytes, tensor layout) and fresh copies of it.

Only the stdlib, and torch once the script has imported it.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

MAX_LEAVES = 64  # tensors walked per batch (sizes and bytes); deeper structures are truncated
MAX_DEPTH = 6
MAX_ITEMS = 256  # items looked at per container: a list of a million file names is not walked
# A replayed tensor up to this size is copied by one memcpy in the loop's thread (``_cloned``);
# at memory bandwidth that is about a millisecond, and larger ones go to torch's parallel clone.
SERIAL_COPY_BYTES = 8 << 20


def _is_tensor(obj: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def tensor_leaves(batch: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(path, tensor) for the tensors in a batch: tensors, sequences, mappings, objects."""
    if _is_tensor(batch):
        yield path or "batch", batch
    elif depth >= MAX_DEPTH or isinstance(batch, (str, bytes)):
        return
    elif isinstance(batch, Mapping):
        for key, value in itertools.islice(batch.items(), MAX_ITEMS):
            yield from tensor_leaves(value, f"{path}[{key!r}]", depth + 1)
    elif isinstance(batch, Sequence):
        for i, value in enumerate(itertools.islice(batch, MAX_ITEMS)):
            yield from tensor_leaves(value, f"{path}[{i}]", depth + 1)
    elif hasattr(batch, "__dict__"):
        for key, value in itertools.islice(vars(batch).items(), MAX_ITEMS):
            yield from tensor_leaves(value, f"{path}.{key}", depth + 1)


def batch_size_and_bytes(batch: Any, collated: bool) -> tuple[int, int]:
    """Samples in the batch (first tensor's leading dimension when collated) and its bytes."""
    samples, nbytes = (0 if collated else 1), 0
    for _, tensor in itertools.islice(tensor_leaves(batch), MAX_LEAVES):
        if samples == 0 and tensor.dim() > 0:
            samples = int(tensor.shape[0])
        nbytes += tensor.element_size() * tensor.nelement()
    return max(samples, 1), nbytes


def is_pinned(tensor: Any) -> bool | None:
    torch = sys.modules["torch"]
    if tensor.device.type != "cpu":
        return False
    if not torch.cuda.is_initialized():  # pinning initialises CUDA: nothing can be pinned yet
        return False
    try:
        return bool(tensor.is_pinned())
    except RuntimeError:
        return None


def batch_layout(batch: Any) -> list[dict[str, Any]]:
    return [
        {
            "path": path,
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "nbytes": t.element_size() * t.nelement(),
            "pinned": is_pinned(t),
            "device": str(t.device),
        }
        for path, t in itertools.islice(tensor_leaves(batch), MAX_LEAVES)
    ]


FINGERPRINTED = 4  # a loader's first batches whose make-up and values are fingerprinted


def fingerprint(batch: Any, values: bool = True) -> tuple[str, str | None]:
    """(layout, values) of a batch: its tensors' paths, shapes and dtypes as text, and a digest of
    their bytes (None where a tensor is not on the CPU, or its bytes cannot be read, or where
    ``values`` is False). Two runs that trained on the same batch give the same pair."""
    import hashlib

    layout, digest = [], hashlib.blake2b(digest_size=12)
    readable = values
    for path, t in itertools.islice(tensor_leaves(batch), MAX_LEAVES):
        layout.append(f"{path} {str(t.dtype).removeprefix('torch.')} {list(t.shape)}")
        if not readable or t.device.type != "cpu":
            readable = False
            continue
        try:
            digest.update(t.detach().contiguous().view(-1).view(sys.modules["torch"].uint8).numpy().tobytes())
        except (RuntimeError, TypeError, ValueError):
            readable = False
    return "; ".join(layout), digest.hexdigest() if readable and layout else None


SAMPLE_BYTES = 512  # bytes of a sample that go into its digest: enough to tell samples apart


def samples_key(batch: Any) -> str | None:
    """A digest of a batch's first and last samples (the first bytes of each tensor's first and
    last rows): batches that repeat samples repeat it. None where no tensor on the CPU has rows."""
    import hashlib

    digest, found = hashlib.blake2b(digest_size=8), False
    for _, t in itertools.islice(tensor_leaves(batch), MAX_LEAVES):
        if t.device.type != "cpu" or t.dim() == 0 or t.shape[0] == 0:
            continue
        for row in (t[0], t[-1]):
            flat = row.detach().reshape(-1)[:SAMPLE_BYTES].contiguous()
            digest.update(flat.view(sys.modules["torch"].uint8).numpy().tobytes()[:SAMPLE_BYTES])
            found = True
    return digest.hexdigest() if found else None


BATCH_SEED = 0


def seed_everything() -> None:
    """Seed torch's, Python's and numpy's generators as the first DataLoader is built, so the runs
    whose batches are compared draw the same shuffle order and workers' seeds (a script that seeds
    later seeds both runs alike)."""
    import random

    random.seed(BATCH_SEED)
    for name in ("torch", "numpy"):
        module = sys.modules.get(name)
        with contextlib.suppress(Exception):
            if name == "torch" and module is not None:
                module.manual_seed(BATCH_SEED)
            elif module is not None:
                module.random.seed(BATCH_SEED)


def copy_batch(batch: Any, tensors: bool = True) -> Any:
    """A fresh copy of a batch; tensors are cloned, pinned tensors stay pinned. With ``tensors``
    False only the containers are new: every tensor is the batch's own."""
    return rebuilt(batch, _cloned if tensors else lambda t: t)


def to_cuda(batch: Any) -> Any:
    """A copy of a batch with every tensor on the current CUDA device, the containers rebuilt as
    ``copy_batch`` rebuilds them."""
    torch = sys.modules["torch"]
    device = torch.device("cuda", torch.cuda.current_device())
    return rebuilt(batch, lambda t: t.to(device))


def _cloned(tensor: Any) -> Any:
    """A copy of ``tensor``: pinned memory stays pinned. A plain, contiguous CPU tensor of up to
    ``SERIAL_COPY_BYTES`` is copied by one memcpy in this thread (through numpy): torch's clone of
    anything past its parallel grain hands the copy to its intra-op threads, which sleep through a
    step that waits (on a GPU, on storage) and take 0.5-8 ms to wake. gpu_paced.py's replays
    waited 8-13% of each 32 ms step on that, and read free inputs 1.32-1.41x as fast as its real
    loop where the step alone is 1.54x; copied serially they wait under 1% (1.45-1.50x)."""
    torch = sys.modules["torch"]
    if is_pinned(tensor):
        return torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True).copy_(tensor)
    if _serial_copy(tensor, torch):
        with contextlib.suppress(TypeError, RuntimeError):  # a dtype numpy lacks (bfloat16), a conj bit
            return torch.from_numpy(tensor.numpy().copy())
    return tensor.clone()


def _serial_copy(tensor: Any, torch: Any) -> bool:
    """``tensor`` is one a single memcpy copies as it is: a plain CPU tensor (not a subclass, which
    numpy would lose), contiguous, not requiring grad, of up to ``SERIAL_COPY_BYTES``."""
    return (
        type(tensor) is torch.Tensor
        and tensor.device.type == "cpu"
        and not tensor.requires_grad
        and tensor.is_contiguous()
        and tensor.numel() * tensor.element_size() <= SERIAL_COPY_BYTES
    )


def rebuilt(batch: Any, leaf: Callable[[Any], Any]) -> Any:
    """``batch`` with new containers (tuples, namedtuples, lists, dicts) and ``leaf(tensor)`` in
    place of each tensor; scalars and strings as they are, any other object deep-copied."""
    if _is_tensor(batch):
        return leaf(batch)
    if isinstance(batch, (str, bytes, int, float, bool)) or batch is None:
        return batch
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(rebuilt(v, leaf) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(rebuilt(v, leaf) for v in batch)
    if type(batch) is dict:
        return {k: rebuilt(v, leaf) for k, v in batch.items()}
    return copy.deepcopy(batch)


def safe_len(obj: Any) -> int | None:
    """len(obj), or None for what has no length (IterableDataset, samplers that raise)."""
    try:
        return len(obj)
    except Exception:
        return None
