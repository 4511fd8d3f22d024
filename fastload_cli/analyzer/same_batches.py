"""Whether a fix trained on the same data as the unchanged script: a run with a fix claims to
change how batches are loaded (workers, prefetch, pinning, caching), never what they hold.

The generators are seeded alike as the first loader is built, so both runs draw the same shuffle
order and the same workers' seeds. In the real run and in every run with fixes the child notes
the sample indices each batch of a map-style loader was drawn for (an IterableDataset's: a digest
of its first and last samples), and fingerprints the first batches of the loader's first two
epochs (their tensors' paths, dtypes and shapes, and a digest of their bytes). The first epoch's
batches must be drawn for the same samples, wherever both runs measured them. Shapes and dtypes
must match. Values must match too where the pipeline draws nothing at random (a cache that keeps
the first epoch's samples where the script changes them shows there); where it does (random
augmentation), a different number of workers draws differently, and only the make-up is
compared, and so it is where the fix lets batches arrive out of order or computes them with fewer
threads (``VALUES_NOT_COMPARED``); kept workers carry their generators into later epochs, so
after ``persistent-workers`` only the first epoch is compared (``FIRST_EPOCH_ONLY``). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastload_cli.analyzer.window import loader_batches, primary_loader
from fastload_cli.records import BatchRecord, Fix, RunResult

# Fixes whose batches hold the same samples in other bytes or another order: only their make-up is compared.
VALUES_NOT_COMPARED = {
    Fix.IN_ORDER: "with in_order=False the batches arrive in another order",
    Fix.WORKER_THREADS: "with fewer threads in each worker, floating-point sums round in another order",
}
# Fixes after which a later epoch's workers draw other random numbers: workers kept from the first
# epoch carry on with their generators where the script's are seeded afresh. A pipeline drawing at
# random where fastload found no augmentation (a random sample made in ``__getitem__``) gives other
# values there, so only the first epoch's batches are compared.
FIRST_EPOCH_ONLY = {Fix.PERSISTENT_WORKERS}


@dataclass(frozen=True, slots=True)
class BatchesCheck:
    same: bool | None  # None: nothing to compare (no fingerprints in one of the runs)
    said: str


def compare(real: RunResult, fixed: RunResult) -> BatchesCheck:
    """The fixed run's batches against the real run's: the samples each was drawn for, wherever
    both runs measured the same batch of the first epoch; the fingerprinted batches (each epoch's
    first, of the first two) by their make-up and values, position by position."""
    drawn = _drawn(real, fixed)
    if drawn is not None:
        return drawn
    first_only = any(s.fix in FIRST_EPOCH_ONLY for s in fixed.spec.fix_specs)
    pairs = [(a, b) for a, b in zip(_keyed(real, first_only), _keyed(fixed, first_only), strict=False)]
    if not pairs:
        return BatchesCheck(None, "not compared: neither run fingerprinted its first batches (no warm-up)")
    count = f"{len(pairs)} batches compared"
    for a, b in pairs:
        if a.layout_key != b.layout_key:
            return BatchesCheck(
                False,
                f"changes the batches: {_place(real, a)} holds {b.layout_key}, the unchanged script's {a.layout_key}",
            )
    unread = _values_unread(real, fixed)
    if unread is not None:
        return BatchesCheck(True, f"the same make-up (dtypes and shapes) in the {count}; values not compared: {unread}")
    differ = next((a for a, b in pairs if a.values_key != b.values_key), None)
    if differ is None:
        return BatchesCheck(True, f"the same batches as the unchanged script's, values included ({count})")
    return BatchesCheck(
        False,
        f"{_place(real, differ)} holds other values than the unchanged script's, with the same dtypes and shapes: the "
        "fix changes what is trained (a cache that keeps samples the script changes, say), or the pipeline draws at "
        "random where fastload found no augmentation",
    )


def _values_unread(real: RunResult, fixed: RunResult) -> str | None:
    """Why the batches' values cannot be compared (the fix's, or the pipeline's randomness), or None."""
    why = next((VALUES_NOT_COMPARED[s.fix] for s in fixed.spec.fix_specs if s.fix in VALUES_NOT_COMPARED), None)
    if why is not None:
        return why
    loader = primary_loader(real)
    random = loader.augmentations if loader is not None else ()
    if not random:
        return None
    names = list(dict.fromkeys(r.split("(")[0] for r in random))
    return "the pipeline draws at random (" + ", ".join(names[:3]) + (", ..." if len(names) > 3 else "") + ")"


def _epochs(run: RunResult) -> dict[int, int]:
    """The training loader's epochs: each iterator's place among them (0: the first)."""
    return {i: n for n, i in enumerate(sorted({b.iterator_id for b in loader_batches(run)}))}


def _place(run: RunResult, batch: BatchRecord) -> str:
    """``batch 3 of epoch 2``: where a batch lies in its loader's epochs."""
    return f"batch {batch.index} of epoch {_epochs(run).get(batch.iterator_id, 0) + 1}"


def _keyed(run: RunResult, first_epoch_only: bool = False) -> list[BatchRecord]:
    """The fingerprinted batches, in order (of the loader's first epoch alone, where asked)."""
    epochs = _epochs(run)
    found = [b for b in loader_batches(run) if b.layout_key is not None]
    return [b for b in found if epochs[b.iterator_id] == 0] if first_epoch_only else found


def _drawn(real: RunResult, fixed: RunResult) -> BatchesCheck | None:
    """Where a batch both runs measured was drawn for other samples (map-style: its indices; an
    IterableDataset without random transforms: a digest of its first and last samples), that
    batch; None where every such batch matched, or none was compared."""
    loader = primary_loader(real)
    iterable = loader is not None and loader.iterable_dataset
    if iterable and loader is not None and loader.augmentations:
        return None
    mine, theirs = _draws(real, iterable), _draws(fixed, iterable)
    for index in sorted(mine.keys() & theirs.keys()):
        if mine[index] != theirs[index]:
            what = "yields other samples" if iterable else "was drawn for other samples (other indices)"
            return BatchesCheck(
                False,
                f"changes the samples trained on: batch {index} of epoch 1 {what} than the unchanged script's, with "
                "the generators seeded alike",
            )
    return None


def _draws(run: RunResult, iterable: bool) -> dict[int, str]:
    """Each measured batch of the loader's first epoch: its digest by its place in the epoch. Later
    epochs shuffle with generators a fix may have drawn from a different number of times (kept
    workers draw no new seed an epoch), so their order is the fix's to change."""
    epochs = _epochs(run)
    found = {}
    for b in loader_batches(run):
        key = b.samples_key if iterable else b.indices_key
        if key is not None and not b.synthetic and epochs[b.iterator_id] == 0:
            found[b.index] = key
    return found
