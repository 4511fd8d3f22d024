"""What a recommendation promises, held against what was measured: a steady-state gain as
training can count on it (``promise``: over whole epochs, at the low edge of its runs' noise), a
run with the fix applied (``verified``: at the low edge of its noise too), and the noise an
estimate must clear (``inside_noise``). A measured gain that its noise leaves at nothing is no
advice: it is said as evidence (``no_gain``, ``tried_without_gain``), unless a named pathology
advises it and its run read training faster (``held``). A fix whose run fed training other batches
than the script's own is never advice, however fast (``changes_the_data``)."""

from __future__ import annotations

from dataclasses import replace

from fastload_cli.analyzer import noise, trials
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.advice.shared import capped
from fastload_cli.analyzer.facts import Facts, speedup
from fastload_cli.records import Finding, FindingKind, Recommendation, RunSummary

# Measured at no gain by design: the step is the limit, and input work gains nothing. Its 1.00x is
# the advice itself, not a promise that its runs failed to keep.
NOTHING_TO_GAIN = frozenset({"step-is-the-limit"})


def promise(f: Facts, gain: float | None, run: RunSummary | None) -> tuple[float | None, str]:
    """A steady-state gain measured between the real run and ``run``, as training can count on it,
    and the sentences that say how it was made: over whole epochs (``Facts.over_epochs``), then
    divided by the two runs' noise. Each run was measured once, on a machine that may be busy; what
    a user gets by following the advice is at least what survives that noise, and that is what is
    promised: at 1 or less, nothing (``no_gain``)."""
    whole = f.over_epochs(gain)
    if whole is None or whole <= 1:
        return whole, epochs_line(f)
    told = noise.promised(f.noise_against(run))
    said = (
        f" The two runs it comes from are told apart to ±{100 * told:.0f}%: the gain given is what that leaves of it."
    )
    return whole / (1 + told), epochs_line(f) + said


def epochs_line(f: Facts) -> str:
    """Where a steady-state gain was turned into training's (``Facts.over_epochs``): how."""
    overhead, epoch = f.epoch_overhead_s, f.epoch_s
    if overhead is None or epoch is None or overhead < th.STARTUP_NOTABLE_SHARE * epoch:
        return ""  # the gain was adjusted by too little to say
    if not f.epoch_walls:
        what = f"the workers still start again every epoch ({overhead:.2f} s against {epoch:.2f} s of steps)"
    else:
        what = (
            f"each epoch took {overhead:.2f} s besides its {epoch:.2f} s of steps (measured over whole epochs: "
            "start-up, drain, and what the script does between epochs)"
        )
    return f" The gain given is over whole epochs: {what}, which this does not speed up."


def no_gain(rec: Recommendation) -> bool:
    """What the runs measured leaves ``rec`` no gain beyond their noise (its promise rounds to
    1.00x or less, a slowdown included): not advice."""
    gain = rec.expected_speedup
    return rec.measured and gain is not None and round(gain, 2) <= 1 and rec.id not in NOTHING_TO_GAIN


def tried_without_gain(rec: Recommendation) -> Finding:
    """``rec``, measured without a gain beyond its runs' noise (``no_gain``), as a line of evidence."""
    gain = rec.expected_speedup or 0.0
    return Finding(
        kind=FindingKind.NO_GAIN,
        sentence=(
            f"Measured, not advised: {rec.title[0].lower()}{rec.title[1:]} ({gain:.2f}x, "
            "no gain beyond the noise of the runs that measured it)."
        ),
        values={"speedup": round(gain, 2)},
    )


def changes_the_data(rec: Recommendation, f: Facts) -> bool:
    """The run with ``rec``'s fix applied fed training other batches than the unchanged script
    (``FixResult.same_batches``): however fast it read, not advice."""
    tried = _tried(rec, f)
    return tried is not None and tried.same_batches is False


def tried_on_other_data(rec: Recommendation, f: Facts) -> Finding:
    """``rec``, whose run changed the batches (``changes_the_data``), as a line of evidence."""
    tried = _tried(rec, f)
    assert tried is not None and tried.speedup is not None
    return Finding(
        kind=FindingKind.CHANGES_THE_DATA,
        sentence=(
            f"Measured {tried.speedup:.2f}x, not advised: {rec.title[0].lower()}{rec.title[1:]}, because the run with "
            f"{tried.name} applied {tried.batches}."
        ),
        values={"speedup": round(tried.speedup, 2)},
    )


def read_faster(rec: Recommendation, f: Facts) -> bool:
    """A run with ``rec``'s fix applied read training faster than the real run, whatever its noise."""
    tried = _tried(rec, f)
    return tried is not None and tried.speedup is not None and tried.speedup > 1


def held(rec: Recommendation) -> Recommendation:
    """A named pathology's fix that its run read faster (``read_faster``): the pathology's own
    evidence advises it, so it stays advice where the runs' noise leaves no gain to promise, at
    1.00x."""
    if not no_gain(rec):
        return rec
    line = "The pathology it fixes is measured: it is advised on that evidence."
    return replace(rec, expected_speedup=1.0, detail=f"{rec.detail}\n{line}")


def _tried(rec: Recommendation, f: Facts) -> trials.FixResult | None:
    """The run with ``rec``'s fix applied that measured a speedup, if one ran."""
    fix = trials.fix_for(rec.id, f.loader)
    return next((t for t in f.tried if fix is not None and t.name == fix.text and t.speedup is not None), None)


def verified(rec: Recommendation, f: Facts) -> Recommendation:
    """``rec`` with the gain a run with its fix applied measured, when one ran (the cached run for
    decoded-sample caching); as it was otherwise."""
    if rec.id == "cache-decoded-samples" and (cached := speedup(f.cached, f.real)) is not None:
        line = f"Measured: with every sample decoded into memory first (cached), training ran {cached:.2f}x as fast."
        gain, how = promise(f, capped(cached, f.ceiling), f.cached)  # steady states, as the ceiling: never above it
        return replace(rec, expected_speedup=gain, measured=True, detail=f"{rec.detail}\n{line}{how}")
    tried = _tried(rec, f)
    if tried is None or tried.speedup is None:
        return rec
    line = f"Verified by a run with {tried.name} applied: {tried.reason}."
    gain = tried.speedup
    if gain > 1:  # each run measured once: promised at the low edge of their noise
        spread = tried.spread or 0.0
        told = noise.promised(spread)
        gain = gain / (1 + told)
        line += (
            " The gain given is what that noise leaves of it."  # the reading above says the noise
            if told <= spread
            else f" Runs of one script differ by more (±{100 * told:.0f}%): the gain given is what that leaves of it."
        )
    if rec.id == "persistent-workers" and rec.expected_speedup is not None:
        # The runs' windows hold a part of an epoch: the real run's, one start-up in fewer batches
        # than an epoch has, overstates what keeping the workers saves. The estimate is per epoch.
        gain = min(gain, rec.expected_speedup)
    return replace(rec, expected_speedup=round(gain, 2), measured=True, detail=f"{rec.detail}\n{line}")


def inside_noise(rec: Recommendation, f: Facts) -> bool:
    """An estimated gain no run could tell from noise: not advice. Measured recommendations carry
    their own test (a sweep's significance; the step's, which says input work will not help)."""
    return not rec.measured and rec.expected_speedup is not None and rec.expected_speedup < 1 + f.noise
