"""Which recommendations fastload can write into the script, and as what change: the DataLoader
arguments they set where the loader is built, the fixes library's ``WorkerThreads`` as its
``worker_init_fn``, or a fixes-library wrapper around the loader. What cannot be written is said
with the reason, never dropped. Pure."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from fastload_cli.analyzer.advice.shared import variant_settings
from fastload_cli.analyzer.trials import fix_for, loader_settings
from fastload_cli.records import Fix, FixResult, LoaderInfo, NotWritten, Recommendation, SweepResult

REMOVED = "removed"  # a setting's value: the argument is taken out of the call


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit:
    """A change to the call that builds the training loader."""

    name: str  # the recommendation it writes (several joined by "+")
    settings: tuple[tuple[str, object], ...] = ()  # DataLoader arguments and their values (or REMOVED)
    worker_threads: int | None = None  # worker_init_fn=WorkerThreads(N, then=the script's own, if any)
    wrapper: str | None = None  # the loader wrapped in this class of ``fastload_cli.fixes``

    def joined(self, other: Edit) -> Edit:
        """Both edits at once; where both set an argument, this one's value stays."""
        named = dict(other.settings) | dict(self.settings)
        return Edit(
            name=f"{self.name}+{other.name}",
            settings=tuple(named.items()),
            worker_threads=self.worker_threads if self.worker_threads is not None else other.worker_threads,
            wrapper=self.wrapper or other.wrapper,
        )


# Recommendations that change more than the loader's call, with what they need instead.
NOT_A_SETTING = {
    "cache-decoded-samples": "the cache needs a memory bound and filling before the workers start: its code is shown",
    "faster-storage": "storage is a change to where the data lives, not to the script",
    "reduce-augmentation-cost": "cheaper augmentation is a change to the transforms, which fastload does not choose",
    "augmentation-on-gpu": "moving augmentation to the GPU is a change to the training step",
    "decode-on-gpu": "decoding on the GPU is a change to the dataset",
    "resize-offline": "resizing the data set once is done outside the script",
    "index-whole-batches": "indexing whole batches is a change to the dataset",
}
NO_CHANGE = ("step-is-the-limit", "cores-saturated", "straggler-input", "straggler-step")


def edits(
    recommendations: Sequence[Recommendation],
    sweep: SweepResult | None,
    loader: LoaderInfo | None,
    fixes: Sequence[FixResult] = (),
) -> tuple[tuple[Edit, ...], tuple[NotWritten, ...]]:
    """Each recommendation as an edit, or why it is not one. A recommendation whose fix a run found
    to change the batches is never written."""
    found: list[Edit] = []
    left: list[NotWritten] = []
    unsafe = {f.name: f.batches for f in fixes if f.same_batches is False}
    for rec in recommendations:
        if rec.id in NO_CHANGE:
            continue
        edit = _edit(rec, sweep, loader)
        if edit is None:
            why = NOT_A_SETTING.get(rec.id, "not a change fastload can write at the loader's call")
            left.append(NotWritten(name=rec.id, reason=why))
            continue
        spec = fix_for(rec.id, loader)
        if spec is not None and spec.text in unsafe:
            left.append(NotWritten(name=rec.id, reason=f"unsafe: {unsafe[spec.text]}"))
            continue
        found.append(edit)
    return tuple(found), tuple(left)


def _edit(rec: Recommendation, sweep: SweepResult | None, loader: LoaderInfo | None) -> Edit | None:
    if rec.num_workers is not None:
        return Edit(name=rec.id, settings=_workers(rec, sweep, loader))
    spec = fix_for(rec.id, loader)
    if spec is None:
        return None
    if spec.fix is Fix.WORKER_THREADS:
        return Edit(name=rec.id, worker_threads=spec.value)
    if spec.fix in (Fix.THREAD_PREFETCH, Fix.CUDA_PREFETCH):
        return Edit(name=rec.id, wrapper="ThreadPrefetcher" if spec.fix is Fix.THREAD_PREFETCH else "CudaPrefetcher")
    settings = loader_settings(spec)
    return Edit(name=rec.id, settings=tuple(settings)) if settings else None


def _workers(
    rec: Recommendation, sweep: SweepResult | None, loader: LoaderInfo | None
) -> tuple[tuple[str, object], ...]:
    """num_workers as the recommendation's snippet writes it: kept alive across epochs where there
    are workers, with the sweep's variant where the sweep measured this setting; none of the
    settings that need workers where there are none."""
    n = rec.num_workers
    assert n is not None
    if n == 0:
        return (("num_workers", 0), ("persistent_workers", REMOVED), ("prefetch_factor", REMOVED))
    settings: list[tuple[str, object]] = [("num_workers", n)]
    if loader is None or not loader.persistent_workers:
        settings.append(("persistent_workers", True))
    if sweep is not None and rec.measured and sweep.recommended_workers == n:
        settings += [(k, ast.literal_eval(str(v))) for k, v in variant_settings(sweep.recommended_variant)]
    return tuple(settings)
