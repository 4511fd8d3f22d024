"""What to run next, decided from what was measured so far: pure functions the session asks.

The session executes; these say whether a mode is worth running, whether ``diagnose`` follows
its modes with a num_workers sweep (and from which setting), a breakdown and a cached run, and
which fixes ``try`` and ``diagnose`` measure. What the sweep itself measures is ``search``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fastload_cli.analyzer import Analysis, ranks
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.trials import cuda_available, refusal, to_verify
from fastload_cli.analyzer.verdict import broken_comparison
from fastload_cli.analyzer.window import first_loader
from fastload_cli.config import AGAIN_BUDGET_S, PATHOLOGY_FOLLOW_UP_EXTRA_S
from fastload_cli.records import Bottleneck, FindingKind, FixSpec, Mode, ModeSpec, RunResult

NOT_INPUT_BOUND = "loading is not the limit"


def why_skip(spec: ModeSpec, done: Sequence[RunResult], drop_transforms: tuple[str, ...]) -> str | None:
    """Why a mode would measure nothing new, or None: no-aug (or cached-no-aug) without
    augmentation to remove."""
    if spec.mode not in (Mode.NO_AUG, Mode.CACHED_NO_AUG) or drop_transforms:
        return None
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    if real is not None and not any(lo.augmentations for lo in real.loaders):
        return "no random augmentation found in the datasets' transforms"
    return None


def applies(spec: ModeSpec, done: Sequence[RunResult]) -> bool:
    """Whether a mode means anything for this script: the device-resident replay only where the
    real run trained on CUDA (on the CPU nothing is copied to a device)."""
    if spec.mode is not Mode.SYNTHETIC_DEVICE:
        return True
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    return real is not None and bool(real.env.cuda_in_use)


AGAIN = (ModeSpec(mode=Mode.REAL), ModeSpec(mode=Mode.SYNTHETIC))  # the pair measured again near the line


def measure_again(analysis: Analysis, done: Sequence[RunResult], elapsed_s: float = 0.0) -> str | None:
    """Why the real and synthetic runs are measured again, or None: the ceiling is within the
    runs' noise of ``CEILING_COMPUTE_BOUND``, the line between a step that is the limit and loading
    that costs part of the time, where one run's luck would decide the verdict; or the synthetic
    run was slower than the real one beyond their noise (``broken_comparison``), which free inputs
    cannot be and a machine whose other load changed between the runs can; or the ceiling reads
    the step as the limit while the training process got its CPU back with free inputs on full
    cores (``Facts.step_starved``), as a machine that ran slower during the synthetic run reads.
    Once, and only while the pair would end within ``AGAIN_BUDGET_S`` of the command's start
    (``elapsed_s`` ago): the verdict then reads each mode's two runs pooled (``pooled``), and the
    ceiling and the step's slowdown pair by pair (``Facts.pairs``)."""
    f = analysis.facts
    ceiling = f.ceiling
    pair_s = sum(s.run_wall_s or 0.0 for s in (f.real, f.synthetic) if s is not None)
    if elapsed_s + pair_s > AGAIN_BUDGET_S or sum(r.spec.mode is Mode.REAL for r in done) != 1:
        return None
    if ceiling is None or f.restarts_dominate or f.transfer_bound:
        return None
    if broken_comparison(f) is not None and not f.disturbed:  # a disturbed run was measured again already
        return (
            f"With free inputs (synthetic) training ran {ceiling:.2f}x as fast as the real run, which free inputs "
            "cannot do: measuring real and synthetic again."
        )
    if analysis.verdict.bottleneck is Bottleneck.INCONCLUSIVE:
        return None
    if ceiling < th.CEILING_COMPUTE_BOUND and f.step_starved and f.cpu_regained is not None:
        return (
            f"The ceiling, {ceiling:.2f}x, reads the step as the limit, yet with free inputs the training process "
            f"had {f.cpu_regained:.2f}x the CPU it had beside the loaders, every core busy: measuring real and "
            "synthetic again."
        )
    if abs(ceiling / th.CEILING_COMPUTE_BOUND - 1) >= f.ceiling_noise:
        return None
    return (
        f"The ceiling, {ceiling:.2f}x, is within the runs' noise (±{100 * f.ceiling_noise:.0f}%) of "
        f"{th.CEILING_COMPUTE_BOUND:.2f}x: measuring real and synthetic again."
    )


def why_not_sweep(analysis: Analysis) -> str | None:
    """Why measuring num_workers settings would not help, or None when it may.

    Workers that hand over batches cheaper to build than to hand over cost time by construction,
    a cost the comparison with free inputs barely resolves on a busy machine: fewer workers are
    measured whatever the verdict and however busy the cores are. So are they where the workers
    keep up while they take the step's cores (``_compete``), whatever cause the verdict names.
    Loading that waits on storage or latency (``io``) is swept however busy the cores are too: its
    workers sleep, and more of them keep more reads in flight without a core of their own.
    """
    facts = analysis.facts
    if facts.restarts_dominate:
        return "the workers' start-up every epoch is the limit, and more workers only start more of them"
    if facts.cheap_batches is not None:
        return None
    if analysis.verdict.bottleneck not in (Bottleneck.CPU, Bottleneck.IO):
        return NOT_INPUT_BOUND
    if _compete(analysis) or analysis.verdict.bottleneck is Bottleneck.IO:
        return None
    if facts.cores_saturated:
        assert facts.real is not None and facts.real.system_cpu_busy_fraction is not None
        return f"the cores were {100 * facts.real.system_cpu_busy_fraction:.0f}% busy: more workers cannot help"
    return None


def _compete(analysis: Analysis) -> bool:
    """The workers keep up while they take the step's cores: the verdict's cause, or beside the
    cause it names (``Facts.loaders_compete``)."""
    return bool(analysis.verdict.of(FindingKind.LOADERS_COMPETE)) or analysis.facts.loaders_compete


@dataclass(frozen=True, slots=True)
class AfterModes:
    """What ``diagnose`` runs once its modes are measured."""

    sweep: bool  # a num_workers sweep
    why: str  # the note that says why it sweeps, or why not ("" when nothing is worth saying)
    min_workers: int  # the sweep's climb starts here
    breakdown: bool  # time each loading step
    cached: bool = False  # a run with every sample decoded into memory: what storage+decode cost
    # The sweep starts from a prediction; not where handing batches over is the cost, which the
    # prediction (what one worker produces) does not model: the climb from 0 measures it.
    guided: bool = True


def after_modes(analysis: Analysis, *, may_sweep: bool, breakdown_asked: bool) -> AfterModes:
    """The sweep and the breakdown that follow ``diagnose``'s modes."""
    breakdown = breakdown_asked or analysis.verdict.bottleneck is Bottleneck.CPU
    cached = worth_caching(analysis)
    why_not = why_not_sweep(analysis) if may_sweep else NOT_INPUT_BOUND
    if why_not is not None:
        note = "" if why_not == NOT_INPUT_BOUND else f"No num_workers sweep: {why_not}."
        return AfterModes(sweep=False, why=note, min_workers=0, breakdown=breakdown, cached=cached)
    facts = analysis.facts
    cheap = facts.cheap_batches is not None
    if cheap:
        why = "Handing batches over from workers may cost more than building them"
    elif _compete(analysis):
        why = "The workers keep up but take the step's cores, so fewer may train faster"
    else:
        why = "Loading is the limit and the cores are not all busy"
    # Loading that waits on latency: fewer workers only put fewer reads in flight.
    io = analysis.verdict.bottleneck is Bottleneck.IO and not cheap
    start = (facts.num_workers or 0) if io else 0
    return AfterModes(
        sweep=True,
        why=f"{why}: measuring num_workers settings.",
        min_workers=start,
        breakdown=breakdown,
        cached=cached,
        guided=not cheap,
    )


def freeing_the_straggler(analysis: Analysis, done: Sequence[RunResult], *, multi_node: bool) -> ModeSpec | None:
    """The run that measures what freeing a data-parallel job's straggler alone gives the job,
    when its own input pipeline holds the job back and that run was not made yet. Not across
    nodes: every node's fastload decides its runs alone, and only one that holds the straggler
    sees it."""
    spec = ranks.counterfactual(analysis.straggler) if analysis.straggler is not None else None
    if spec is None or multi_node or any(r.spec == spec for r in done):
        return None
    return spec


def worth_caching(analysis: Analysis) -> bool:
    """Loading is the limit and its samples are read from a map-style dataset that is not already
    in memory: a cached run measures what storage and decoding cost (and what RAM caching gives)."""
    facts = analysis.facts
    loader = facts.loader
    return (
        analysis.verdict.bottleneck in (Bottleneck.CPU, Bottleneck.IO)
        and loader is not None
        and not loader.iterable_dataset
        and facts.cheap_batches is None
        and not facts.restarts_dominate
        and facts.cached is None
    )


@dataclass(frozen=True, slots=True)
class FixRuns:
    """The runs ``try`` makes with fixes applied."""

    specs: tuple[ModeSpec, ...]
    notes: tuple[str, ...]  # the fixes asked for that are not measured, and why


def fix_runs(fixes: Sequence[FixSpec], done: Sequence[RunResult]) -> FixRuns:
    """``try``: a run per fix that applies to the measured loader, then all of those together;
    a note per fix that does not, with the reason (it is reported, never measured)."""
    loader, cuda = first_loader(done), cuda_available(done)
    applied, notes = [], []
    for fix in fixes:
        why = refusal(fixes, fix, loader, cuda)
        if why is None:
            applied.append(fix.text)
        else:
            notes.append(f"--fix {fix.text}: not measured, {why}.")
    specs = [ModeSpec(mode=Mode.FIX, fixes=(text,)) for text in applied]
    if len(applied) > 1:
        specs.append(ModeSpec(mode=Mode.FIX, fixes=tuple(applied)))
    return FixRuns(specs=tuple(specs), notes=tuple(notes))


def verifications(analysis: Analysis, done: Sequence[RunResult]) -> tuple[ModeSpec, ...]:
    """``diagnose``: a run with the fix applied for each recommendation fastload can apply itself."""
    cuda = cuda_available(done)
    named = {p.recommendation for p in analysis.pathologies}  # a pathology's fix is verified first
    ids = sorted((rec.id for rec in analysis.recommendations if not rec.measured), key=lambda i: i not in named)
    fixes = to_verify(analysis.verdict, ids, analysis.facts.loader, cuda, done)
    return tuple(ModeSpec(mode=Mode.FIX, fixes=(fix.text,)) for fix in fixes)


# The fix that a verdict's cause names first, verified as a pathology's is: pinned memory is what
# every guide says for copies to the GPU, and a run measures whether it helps this script (a batch
# handed over by workers must still be copied into pinned memory, on one thread).
CAUSE_FIXES = {Bottleneck.TRANSFER: "pin-memory"}


def follow_ups(analysis: Analysis, done: Sequence[RunResult], *, cached: bool) -> tuple[tuple[ModeSpec, float], ...]:
    """``diagnose``'s follow-up runs in the order they are worth making, each with the seconds it may
    end past the follow-up budget: a pathology's fix and the verdict's cause's (``CAUSE_FIXES``)
    first (``PATHOLOGY_FOLLOW_UP_EXTRA_S``), then the cached run, then the other recommendations'
    fixes."""
    verifying = verifications(analysis, done)
    named = {p.fix for p in analysis.pathologies} | {CAUSE_FIXES.get(analysis.verdict.bottleneck)}
    first = tuple((s, PATHOLOGY_FOLLOW_UP_EXTRA_S) for s in verifying if "+".join(s.fixes) in named)
    rest = tuple((s, 0.0) for s in verifying if "+".join(s.fixes) not in named)
    return (*first, *(((ModeSpec(mode=Mode.CACHED), 0.0),) if cached else ()), *rest)
