"""Real and synthetic measured again, where one pair's luck could decide the verdict
(``measure_again``), and where that pair waits for the num_workers sweep, which may decide the
verdict whatever the ceiling says (``after_sweep``). Pure functions of the analysis and the runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastload_cli.analyzer import Analysis
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts import Facts
from fastload_cli.analyzer.settle import rough_error
from fastload_cli.analyzer.verdict import broken_comparison
from fastload_cli.config import AGAIN_BUDGET_S
from fastload_cli.formatting import pct
from fastload_cli.records import Bottleneck, Mode, ModeSpec, RunResult, RunStatus

AGAIN = (ModeSpec(mode=Mode.REAL), ModeSpec(mode=Mode.SYNTHETIC))  # the pair measured again near the line
LINES = (th.CEILING_COMPUTE_BOUND, th.CEILING_INPUT_BOUND)  # the lines the verdict draws on the ceiling
MEASURING_AGAIN = "measuring real and synthetic again"  # how each reason to measure the pair again ends


def measure_again(analysis: Analysis, done: Sequence[RunResult], elapsed_s: float = 0.0) -> str | None:
    """Why the real and synthetic runs are measured again, or None: the ceiling is within the
    runs' noise of ``CEILING_COMPUTE_BOUND``, the line between a step that is the limit and loading
    that costs part of the time, where one run's luck would decide the verdict; or the synthetic
    run was slower than the real one beyond their noise (``broken_comparison``), which free inputs
    cannot be and a machine whose other load changed between the runs can; or the ceiling reads
    the step as the limit while the training process got its CPU back with free inputs on full
    cores (``Facts.step_starved``), as a machine that ran slower during the synthetic run reads;
    or the ceiling reads loading as the limit where nothing in the loop could have cost it that
    (``_contradicted``); or a real run that stopped short of settling left the ceiling within
    twice its error of a line (``_rough_near_line``). Once, and only while the pair would end
    within ``AGAIN_BUDGET_S`` of the command's start (``elapsed_s`` ago): the verdict then reads
    each mode's two runs pooled (``pooled``), and the ceiling and the step's slowdown pair by pair
    (``Facts.pairs``)."""
    f = analysis.facts
    ceiling = f.ceiling
    # the pair reckoned as two runs, however it runs: the budget's cautious reckoning
    if elapsed_s + pair_s(f, apart=True) > AGAIN_BUDGET_S or sum(r.spec.mode is Mode.REAL for r in done) != 1:
        return None
    if ceiling is None or f.restarts_dominate or f.transfer_bound or script_failed(analysis) is not None:
        return None
    if broken_comparison(f) is not None and not f.disturbed:  # a disturbed run was measured again already
        return (
            f"With free inputs (synthetic) training ran {f.steady_ceiling:.2f}x as fast as the real run, which free "
            f"inputs cannot do: {MEASURING_AGAIN}."
        )
    if analysis.verdict.bottleneck is Bottleneck.INCONCLUSIVE:
        return None
    return _contradicted(f, ceiling) or _near_line(f, ceiling) or _rough_near_line(done, ceiling, _lines(f))


def _contradicted(f: Facts, ceiling: float) -> str | None:
    """Why the ceiling contradicts what the loop shows, or None: the step read as the limit while
    the training process got its CPU back with free inputs on full cores; or loading read as the
    limit while the loop waited for data less than ``WAIT_COMPUTE_BOUND`` and nothing loads
    beside the step (num_workers=0, no pinning), so that loading, all inside that wait, cannot
    have cost the rest: a slow stretch of the machine during the real run reads so."""
    if ceiling < th.CEILING_COMPUTE_BOUND and f.step_starved and f.cpu_regained is not None:
        return (
            f"The ceiling, {ceiling:.2f}x, reads the step as the limit, yet with free inputs the training process "
            f"had {f.cpu_regained:.2f}x the CPU it had beside the loaders, every core busy: {MEASURING_AGAIN}."
        )
    wait = f.real.data_wait_fraction if f.real is not None else None
    if ceiling < th.CEILING_INPUT_BOUND or wait is None or wait >= th.WAIT_COMPUTE_BOUND or f.concurrent_loading:
        return None
    return (
        f"The ceiling, {ceiling:.2f}x, reads loading as the limit, yet the loop waited for data {pct(wait)} of the "
        f"time and nothing loads beside its step: {MEASURING_AGAIN}."
    )


def _near_line(f: Facts, ceiling: float) -> str | None:
    """Why a ceiling within the runs' noise of ``CEILING_COMPUTE_BOUND`` is measured again, or None:
    not one under it where the loop's wait caps what free inputs can give under it too
    (``Facts.wait_caps_ceiling``), nor one where the verdict reads compute-bound on either side of
    the line (``Facts.compute_either_side``): no second pair can turn those."""
    if abs(ceiling / th.CEILING_COMPUTE_BOUND - 1) >= f.ceiling_noise:
        return None
    if (ceiling < th.CEILING_COMPUTE_BOUND and f.wait_caps_ceiling) or f.compute_either_side:
        return None
    return (
        f"The ceiling, {ceiling:.2f}x, is within the runs' noise (±{100 * f.ceiling_noise:.0f}%) of "
        f"{th.CEILING_COMPUTE_BOUND:.2f}x: {MEASURING_AGAIN}."
    )


def _lines(f: Facts) -> tuple[float, ...]:
    """The lines on the ceiling that could turn the verdict: not ``CEILING_COMPUTE_BOUND`` where it
    reads compute-bound on either side (``Facts.compute_either_side``)."""
    return tuple(x for x in LINES if x != th.CEILING_COMPUTE_BOUND or not f.compute_either_side)


def _rough_near_line(done: Sequence[RunResult], ceiling: float, lines: Sequence[float]) -> str | None:
    """Why a ceiling read from a real run that stopped short of settling (``settle.real_settled``'s
    looser rule, or ``--max-batches``) is measured again, or None: it lies within twice the real
    estimate's error (``settle.rough_error``) of one of ``lines`` the verdict draws on the ceiling,
    where more batches could have turned the verdict."""
    real = next((r for r in done if r.spec.mode is Mode.REAL), None)
    error = rough_error(real) if real is not None else None
    if error is None:
        return None
    line = next((x for x in lines if abs(ceiling / x - 1) < 2 * error), None)
    if line is None:
        return None
    return (
        f"The ceiling, {ceiling:.2f}x, is within twice the real run's error (±{100 * error:.0f}%) of {line:.2f}x: "
        f"{MEASURING_AGAIN}."
    )


def script_failed(analysis: Analysis) -> str | None:
    """Why nothing is measured against the real run's rate, or None: the script raised (or exited
    with an error) in its real run, so the batches before the error are no rate to weigh a
    setting, a cache or a loading step against (in runs that raise in turn); the error, and a
    pathology's fix where one is named, are what the report is for."""
    real = analysis.facts.real
    if real is None or real.status is not RunStatus.FAILED:
        return None
    return "The script failed in the real run"


def after_sweep(analysis: Analysis, done: Sequence[RunResult]) -> bool:
    """The pair ``measure_again`` asks for can wait for the num_workers sweep: the ceiling is only
    near a line (``_near_line``, ``_rough_near_line``; not a broken or contradicted comparison,
    which the sweep's reading would rest on too) and the loop waited at least
    ``WAIT_COMPUTE_BOUND``, so that either side of the line reads loading as costing time and
    sweeps alike. A setting the sweep then measures ``SWEEP_CONFIRMS_INPUT`` as fast decides the
    verdict whatever the ceiling (``settled``), and the pair would change nothing."""
    f = analysis.facts
    ceiling, wait = f.ceiling, f.real.data_wait_fraction if f.real is not None else None
    if ceiling is None or wait is None or wait < th.WAIT_COMPUTE_BOUND:
        return False
    if broken_comparison(f) is not None or _contradicted(f, ceiling) is not None:
        return False
    return _near_line(f, ceiling) is not None or _rough_near_line(done, ceiling, _lines(f)) is not None


def waiting(why: str) -> str:
    """``measure_again``'s note for a pair that waits for the sweep (``after_sweep``)."""
    confirms = th.SWEEP_CONFIRMS_INPUT
    return why.removesuffix(f"{MEASURING_AGAIN}.") + (
        f"{MEASURING_AGAIN} after the num_workers sweep, unless a setting it measures {confirms:.2f}x as fast settles "
        "the verdict."
    )


def settled(analysis: Analysis) -> str | None:
    """Why a pair that waited for the sweep is not measured, or None: the sweep measured a setting
    ``SWEEP_CONFIRMS_INPUT`` as fast as the script's own beyond its noise (``sweep_confirms_input``),
    which the verdict reads as input-bound whatever the ceiling."""
    found = analysis.facts.sweep
    if found is None or not analysis.facts.sweep_confirms_input or found.speedup is None:
        return None
    return (
        f"The sweep measured num_workers={found.recommended_workers} {found.speedup:.2f}x as fast as the script's own "
        "setting, which settles the verdict whatever the ceiling: real and synthetic are not measured again."
    )


UNSETTLED = f"The sweep did not settle the verdict: {MEASURING_AGAIN}."


def pair_s(f: Facts, *, apart: bool) -> float:
    """What measuring real and synthetic again would take: as long as their first pair, one run
    of the script (the synthetic part's run ends it), or two where they ran ``apart``."""
    walls = [s.run_wall_s or 0.0 for s in (f.real, f.synthetic) if s is not None]
    return sum(walls) if apart else max(walls, default=0.0)
