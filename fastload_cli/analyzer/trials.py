"""Fixes measured by running them.

``fastload try``: which fixes apply to the script's loader (and why the others do not), what each
run with fixes applied measured against the real run, with the noise, the memory it cost and the
code change that makes it permanent (the cached split is ``split.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from fastload_cli.analyzer import noise, same_batches
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice.shared import loader_change
from fastload_cli.analyzer.window import Batches, folded, loader_batches, primary_loader, primary_loader_id
from fastload_cli.records import (
    UNCHANGED,
    Bottleneck,
    Fix,
    FixResult,
    FixSpec,
    LoaderInfo,
    Mode,
    Recommendation,
    RunResult,
    RunStatus,
    RunSummary,
    Verdict,
)

NO_CUDA = (
    "CUDA is not available here (torch.cuda.is_available() is False): pinned memory and side streams only "
    "speed up copies to a GPU"
)
LIBRARY = "from fastload_cli.fixes import "
# Recommendations diagnose verifies by running their fix, at most this many (each is one more run).
MAX_VERIFIED = 2
# Fixes that change only what an epoch's start costs: a window that holds no epoch's start cannot
# see them, however long it is.
AT_EPOCH_STARTS = frozenset({Fix.PERSISTENT_WORKERS})
NO_EPOCH_START = (
    "its run's window or the real run's held no epoch's start, and keeping the workers saves "
    "only what an epoch's start costs; `--max-batches N`, N past an epoch's batches, measures it"
)


def cuda_available(runs: Sequence[RunResult]) -> bool:
    """CUDA was available to the script in any of ``runs`` (a property of the machine)."""
    return any(r.env.cuda_available for r in runs)


def fix_for(recommendation_id: str, loader: LoaderInfo | None) -> FixSpec | None:
    """The fix that applies a recommendation inside the script, when fastload can apply it."""
    if recommendation_id == "persistent-workers":
        return FixSpec(Fix.PERSISTENT_WORKERS)
    if recommendation_id == "larger-prefetch-factor" and loader is not None:
        return FixSpec(Fix.PREFETCH_FACTOR, 2 * (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR))
    if recommendation_id == "pin-memory":
        return FixSpec(Fix.PIN_MEMORY)
    if recommendation_id == "deliver-out-of-order":
        return FixSpec(Fix.IN_ORDER)
    if recommendation_id == "one-thread-per-worker":
        return FixSpec(Fix.WORKER_THREADS, 1)
    return None


def to_verify(
    verdict: Verdict, recommendations: Sequence[str], loader: LoaderInfo | None, cuda: bool, done: Sequence[RunResult]
) -> tuple[FixSpec, ...]:
    """The fixes of an input-bound verdict's recommendations that no run has measured yet and that
    apply to the loader, at most ``MAX_VERIFIED``."""
    if verdict.bottleneck not in (Bottleneck.CPU, Bottleneck.IO, Bottleneck.TRANSFER):
        return ()
    ran = {text for r in done if r.spec.mode is Mode.FIX for text in r.spec.fixes}
    found = [fix for rid in recommendations if (fix := fix_for(rid, loader)) is not None and fix.text not in ran]
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    if real is not None and not epoch_starts(real):  # a run like it would hold none either
        found = [f for f in found if f.fix not in AT_EPOCH_STARTS]
    return tuple(f for f in found if refusal((f,), f, loader, cuda) is None)[:MAX_VERIFIED]


def only_at_epoch_starts(fixes: Sequence[FixSpec]) -> bool:
    """``fixes`` change nothing but what an epoch's start costs (``AT_EPOCH_STARTS``)."""
    return bool(fixes) and {f.fix for f in fixes} <= AT_EPOCH_STARTS


def epoch_starts(run: Batches) -> int:
    """The epochs that began inside ``run``'s training window (``metrics.training_throughput``'s:
    from its warm-up's last batch on), folded ones included."""
    batches = loader_batches(run)
    fold = folded(run)
    return sum(1 for b in batches[max(run.warmup_batches, 1) :] if b.index == 0) + (fold.epochs if fold else 0)


def refusal(fixes: Sequence[FixSpec], fix: FixSpec, loader: LoaderInfo | None, cuda: bool) -> str | None:
    """Why ``fix`` cannot apply to ``loader`` (with the other ``fixes`` applied beside it), or None."""
    if loader is None:
        return "no DataLoader batch was measured"
    workers = next((f.value for f in fixes if f.fix is Fix.WORKERS), None)
    workers = loader.num_workers if workers is None else workers
    match fix.fix:
        case Fix.PERSISTENT_WORKERS if workers == 0:
            return "num_workers=0: there are no workers to keep alive"
        case Fix.PERSISTENT_WORKERS if loader.persistent_workers:
            return "persistent_workers is already True"
        case Fix.PREFETCH_FACTOR if workers == 0:
            return "num_workers=0: prefetch_factor only applies to worker processes"
        case Fix.PREFETCH_FACTOR if (loader.prefetch_factor or th.DEFAULT_PREFETCH_FACTOR) == fix.value:
            return f"prefetch_factor is already {fix.value}"
        case Fix.WORKERS if loader.num_workers == fix.value:
            return f"num_workers is already {fix.value}"
        case Fix.PIN_MEMORY | Fix.CUDA_PREFETCH if not cuda:
            return NO_CUDA
        case Fix.PIN_MEMORY if loader.pin_memory:
            return "pin_memory is already True"
        case Fix.CACHE_DECODED if loader.iterable_dataset:
            return "an IterableDataset has no indices to cache decoded samples by"
        case Fix.IN_ORDER | Fix.WORKER_THREADS if workers == 0:
            return "num_workers=0: batches are made in the main process, one at a time"
    return None


def code(fixes: Sequence[FixSpec], loader: LoaderInfo | None) -> str:
    """The change that makes ``fixes`` permanent, as the user writes it: the loader's settings in
    one line, then each fix from ``fastload_cli.fixes``."""
    settings = [(name, value) for fix in fixes for name, value in loader_settings(fix)]
    lines = [loader_change(loader, settings)] if settings else []
    threads = next((f.value for f in fixes if f.fix is Fix.WORKER_THREADS), 1)
    wrappers = {
        Fix.THREAD_PREFETCH: f"{LIBRARY}ThreadPrefetcher\nloader = ThreadPrefetcher(loader)",
        Fix.CUDA_PREFETCH: f"{LIBRARY}CudaPrefetcher\nloader = CudaPrefetcher(loader)  # with pin_memory=True",
        Fix.WORKER_THREADS: (
            f"{LIBRARY}WorkerThreads\n"
            f"DataLoader(..., worker_init_fn=WorkerThreads({threads}))  # then=your own worker_init_fn, if any"
        ),
        Fix.CACHE_DECODED: (
            f"{LIBRARY}DecodedCache\ndataset = DecodedCache(dataset, max_bytes=...)\n"
            "dataset.fill()  # before the DataLoader starts its workers, so they share it"
        ),
    }
    lines += [wrappers[fix.fix] for fix in fixes if fix.fix in wrappers]
    return "\n".join(lines)


def loader_settings(fix: FixSpec) -> list[tuple[str, object]]:
    """The DataLoader arguments ``fix`` sets, as the user writes them (none for a wrapper)."""
    found = {
        Fix.PERSISTENT_WORKERS: ("persistent_workers", True),
        Fix.PREFETCH_FACTOR: ("prefetch_factor", fix.value),
        Fix.PIN_MEMORY: ("pin_memory", True),
        Fix.WORKERS: ("num_workers", fix.value),
        Fix.IN_ORDER: ("in_order", False),
    }.get(fix.fix)
    return [found] if found is not None else []


def results(
    requested: Sequence[FixSpec], runs: Sequence[RunResult], summaries: Sequence[RunSummary]
) -> tuple[FixResult, ...]:
    """Each requested fix, refused or measured, then their combination when one ran."""
    pairs = list(zip(runs, summaries, strict=True))
    real = next(((r, s) for r, s in pairs if r.spec.mode is Mode.REAL), None)
    if real is None:
        return ()
    loader, cuda = primary_loader(real[0]), cuda_available(runs)
    found: list[FixResult] = []
    for fix in requested:
        why = refusal(requested, fix, loader, cuda)
        if why is not None:
            found.append(_unmeasured(fix.text, why, code((fix,), loader)))
    for run, summary in pairs:
        if run.spec.mode is Mode.FIX:
            changes = code(run.spec.fix_specs, loader)
            measured = _measured(run, summary, real, changes)
            check = same_batches.compare(real[0], run) if measured.measured else None
            found.append(replace(measured, same_batches=check.same, batches=check.said) if check else measured)
    return tuple(found)


def _unmeasured(name: str, why: str, change: str, *, applies: bool = False) -> FixResult:
    """A fix refused (or not applied inside the script), or applied in a run that measured nothing."""
    return FixResult(
        name=name,
        speedup=None,
        spread=None,
        memory_bytes=None,
        measured=False,
        applies=applies,
        reason=why,
        code=change,
    )


def _measured(run: RunResult, summary: RunSummary, against: tuple[RunResult, RunSummary], change: str) -> FixResult:
    name = "+".join(run.spec.fixes)
    unchanged = _not_applied(run)
    if unchanged is not None:
        return _unmeasured(name, unchanged, change)
    if run.status is not RunStatus.OK or summary.training_samples_per_s is None:
        why = summary.error or f"the run ended {run.status.value} before a steady window was measured"
        return _unmeasured(name, why, change, applies=True)
    real_run, real = against
    if only_at_epoch_starts(run.spec.fix_specs) and not (epoch_starts(run) and epoch_starts(real_run)):
        return _unmeasured(name, NO_EPOCH_START, change, applies=True)
    base = real.training_samples_per_s  # start-ups included: persistent workers save exactly those
    speedup = summary.training_samples_per_s / base if base else None
    spread = noise.between_runs(summary, real)
    memory = summary.rss_bytes - real.rss_bytes if summary.rss_bytes and real.rss_bytes else None
    return FixResult(
        name=name,
        speedup=speedup,
        spread=spread,
        memory_bytes=memory,
        measured=True,
        applies=True,
        reason=judge(speedup, spread),
        code=change,
    )


def _not_applied(run: RunResult) -> str | None:
    """What the child said it could not change on the training loader, or None."""
    loader_id = primary_loader_id(run)
    kept = [s for s in run.substitutions if s.loader_id == loader_id and s.replacement == UNCHANGED]
    return "; ".join(s.original for s in kept) or None


def judge(speedup: float | None, spread: float) -> str:
    """A measured gain in words, against the noise of the two runs."""
    if speedup is None:
        return "the real run measured no throughput to compare with"
    if abs(speedup - 1) <= spread:
        return f"no measurable gain: {speedup:.2f}x is within the runs' noise (±{100 * spread:.0f}%)"
    if speedup > 1:
        return f"measured {speedup:.2f}x the real run's throughput (noise ±{100 * spread:.0f}%)"
    return f"slower: {speedup:.2f}x the real run's throughput (noise ±{100 * spread:.0f}%); do not adopt it"


def not_verified(
    recommendations: Sequence[Recommendation], unverified: Sequence[str], loader: LoaderInfo | None
) -> tuple[Recommendation, ...]:
    """The recommendations, each whose verifying run was left out (past diagnose's time budget)
    saying so and how to measure it."""
    found = []
    for rec in recommendations:
        spec = fix_for(rec.id, loader)
        fix = "cached" if rec.id == "cache-decoded-samples" else spec.text if spec is not None else None
        if rec.measured or fix not in unverified:
            found.append(rec)
            continue
        name = "cache-decoded" if fix == "cached" else fix
        line = (
            "Not verified: the run that measures it would have ended past diagnose's time budget; "
            f"`fastload try SCRIPT --fix {name}` measures it."
        )
        found.append(replace(rec, detail=f"{rec.detail}\n{line}"))
    return tuple(found)
