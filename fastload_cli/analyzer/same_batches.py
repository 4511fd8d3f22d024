"""Whether a fix trained on the same batches as the unchanged script: a run with a fix claims to
change how batches are loaded (workers, prefetch, pinning, caching), never what they hold.

The child fingerprints a loader's first batches in the real run and in every run with fixes (their
tensors' paths, dtypes and shapes, and a digest of their bytes), with the generators seeded alike
as the first loader is built, so both runs draw the same shuffle order and the same workers' seeds.
Shapes and dtypes must match. Values must match too where the pipeline draws nothing at random;
where it does (random augmentation), a different number of workers draws differently, and only the
make-up is compared, and so it is where the fix lets batches arrive out of order or computes them
with fewer threads (``VALUES_NOT_COMPARED``). Pure.
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


@dataclass(frozen=True, slots=True)
class BatchesCheck:
    same: bool | None  # None: nothing to compare (no fingerprints in one of the runs)
    said: str


def compare(real: RunResult, fixed: RunResult) -> BatchesCheck:
    """The fixed run's first batches against the real run's, position by position."""
    pairs = [(a, b) for a, b in zip(_keyed(real), _keyed(fixed), strict=False)]
    if not pairs:
        return BatchesCheck(None, "not compared: neither run fingerprinted its first batches (no warm-up)")
    for position, (a, b) in enumerate(pairs):
        if a.layout_key != b.layout_key:
            return BatchesCheck(
                False,
                f"changes the batches: batch {position} holds {b.layout_key}, the unchanged script's {a.layout_key}",
            )
    why = next((VALUES_NOT_COMPARED[s.fix] for s in fixed.spec.fix_specs if s.fix in VALUES_NOT_COMPARED), None)
    if why is not None:
        return BatchesCheck(
            True,
            f"the same make-up (dtypes and shapes) for the first {len(pairs)} batches; values not compared: {why}",
        )
    loader = primary_loader(real)
    random = loader.augmentations if loader is not None else ()
    if random:
        names = list(dict.fromkeys(r.split("(")[0] for r in random))
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return BatchesCheck(
            True,
            f"the same make-up (dtypes and shapes) for the first {len(pairs)} batches; values not compared: "
            f"the pipeline draws at random ({shown})",
        )
    differ = next((i for i, (a, b) in enumerate(pairs) if a.values_key != b.values_key), None)
    if differ is None:
        return BatchesCheck(True, f"the same first {len(pairs)} batches as the unchanged script's, values included")
    return BatchesCheck(
        False,
        f"batch {differ} holds other values than the unchanged script's, with the same dtypes and shapes: the fix "
        "changes what is trained, or the pipeline draws at random where fastload found no augmentation",
    )


def _keyed(run: RunResult) -> list[BatchRecord]:
    return [b for b in loader_batches(run) if b.layout_key is not None]
