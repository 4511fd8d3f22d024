"""``diagnose`` (and ``synthetic-compare``): the modes in order, the split, then what the
measurements ask for: real and synthetic again near the line, the job with its straggler's
input pipeline free, a short num_workers sweep, the breakdown, and the runs that verify the
advice within a time budget (``follow_ups``).

Each part is a pure function of the ``State``; the rules that say whether a part runs are here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import Analysis, ranks, search, split
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.cause import asleep_unexplained
from fastload_cli.analyzer.window import first_loader
from fastload_cli.config import (
    AGAIN_BUDGET_S,
    DEFAULT_BREAKDOWN_ITEMS,
    DEFAULT_FOLLOW_UP_BUDGET_S,
    DEFAULT_SWEEP_BATCHES,
    RunConfig,
)
from fastload_cli.plan import again, budget, follow_ups
from fastload_cli.plan.again import AGAIN, script_failed
from fastload_cli.plan.outcome import Outcome
from fastload_cli.plan.parts import next_in
from fastload_cli.plan.runs import (
    CACHING,
    breakdown_step,
    covered,
    in_turn_step,
    mode_step,
    split_step,
    split_unfit,
    why_skip,
)
from fastload_cli.plan.state import State
from fastload_cli.plan.step import Keep, Part, Step
from fastload_cli.plan.sweep import searched
from fastload_cli.records import Bottleneck, FindingKind, Mode, ModeSpec, RunResult

NOT_INPUT_BOUND = "loading is not the limit"


@dataclass(frozen=True, slots=True)
class Diagnose:
    """``diagnose``'s plan: the modes in order; then what ``after_modes`` asks for: a short
    num_workers sweep (never when ``max_workers`` is None) and the breakdown; then, with
    ``follow_ups``, the runs that verify the advice."""

    modes: Sequence[ModeSpec]
    max_workers: int | None
    breakdown: bool = False  # time each loading step even when the verdict is not cpu
    follow_ups: bool = False  # the cached run and the runs that verify fixes, when loading is the limit

    def start(self) -> Outcome:
        return Outcome()

    def sizing(self, base: RunConfig) -> RunConfig:
        """What the sweep's steps are sized from: the command's batches, at most ``DEFAULT_SWEEP_BATCHES``."""
        return replace(base, max_batches=min(base.max_batches, DEFAULT_SWEEP_BATCHES))

    def runs_from(self, state: State) -> RunConfig:
        """What every run starts from: where cached modes are asked for, with what they may decode
        into memory (``State.with_cache``)."""
        return state.with_cache(state.base) if any(s.mode in CACHING for s in self.modes) else state.base

    def next_step(self, state: State) -> Step | None:
        parts = (
            (Part.MODES, self._modes),
            (Part.SPLIT, self._split),
            (Part.AGAIN, self._again),
            (Part.STRAGGLER, self._straggler),
            (Part.AFTER_MODES, self._after_modes),
            (Part.SWEEP, self._sweep),
            (Part.AGAIN_LATE, self._again_late),
            (Part.BREAKDOWN, self._breakdown),
            *(
                follow_ups.parts(self.runs_from, lambda state: decided(state).cached, split=self.breakdown)
                if self.follow_ups
                else ()
            ),
        )
        return next_in(parts, state)

    def _config(self, state: State, spec: ModeSpec) -> RunConfig:
        return self.runs_from(state).with_mode(spec)

    def _modes(self, state: State) -> Step | None:
        done = covered(state.taken(Part.MODES))
        if done >= len(self.modes):
            return None
        spec = self.modes[done]
        if self.follow_ups and split_first(state, spec):
            return split_step(state, Part.MODES, Keep.SPLIT_MODES)
        return timing_loading(state, in_turn_step(state, self.modes[done:], self._config(state, spec)), self.breakdown)

    def _split(self, state: State) -> Step | None:
        if not wants_split(self.modes) or state.taken(Part.SPLIT) or state.outcome.split_run is not None:
            return None
        why = split_unfit(state)
        return split_step(state, Part.SPLIT) if why is None else Step(part=Part.SPLIT, notes=((None, why),))

    def _again(self, state: State) -> Step | None:
        taken = state.taken(Part.AGAIN)
        if not taken:
            why = again.measure_again(state.analysis, state.runs, state.elapsed_s)
            if why is None:
                return None
            if self._then(state).sweep and again.after_sweep(state.analysis, state.runs):
                return Step(part=Part.AGAIN, notes=((None, again.waiting(why)),), later=True)
            return self._pair(state, Part.AGAIN, why)
        return None if taken[0].later else self._pair(state, Part.AGAIN)

    def _again_late(self, state: State) -> Step | None:
        """The pair that waited for the sweep (``again.after_sweep``), unless the sweep settled the verdict."""
        if not waits_for_sweep(state):
            return None
        taken = state.taken(Part.AGAIN_LATE)
        if taken:
            return None if taken[0].config is None else self._pair(state, Part.AGAIN_LATE)
        why = again.settled(state.analysis)
        return (
            Step(part=Part.AGAIN_LATE, notes=((None, why),))
            if why
            else self._pair(state, Part.AGAIN_LATE, again.UNSETTLED)
        )

    def _pair(self, state: State, part: Part, why: str | None = None) -> Step | None:
        """The pair's next run; its first (``why`` given: its note) timing loading at its switch."""
        if why is None:
            done = covered(state.taken(part))
            if done >= len(AGAIN):
                return None
            return in_turn_step(state, AGAIN[done:], self._config(state, AGAIN[done]), part)
        step = timing_loading(state, in_turn_step(state, AGAIN, self._config(state, AGAIN[0]), part), self.breakdown)
        return replace(step, notes=((None, why), *step.notes))

    def _then(self, state: State) -> AfterModes:
        """What the measured modes, as they read now, ask for next (``after_modes``): never a
        sweep where ``max_workers`` is None."""
        return after_modes(state.analysis, may_sweep=self.max_workers is not None, breakdown_asked=self.breakdown)

    def _straggler(self, state: State) -> Step | None:
        if state.taken(Part.STRAGGLER):
            return None
        spec = freeing_the_straggler(state.analysis, state.runs, multi_node=state.multi_node)
        if spec is None:
            return None
        step = mode_step(state, spec, self._config(state, spec), Part.STRAGGLER)
        note = f"Rank {spec.ranks[0]} holds the job back: measuring the job with its input pipeline free."
        return replace(step, notes=((None, note), *step.notes))

    def _after_modes(self, state: State) -> Step | None:
        if state.taken(Part.AFTER_MODES):
            return None
        then = self._then(state)
        sweep = then.sweep and self.max_workers is not None  # None never sweeps (``_then``); said for the type
        limits = None
        if sweep:
            assert self.max_workers is not None
            limits = replace(
                state.sweep_limits(self.max_workers),
                min_workers=then.min_workers,
                guided=then.guided,
                budget_s=AGAIN_BUDGET_S - self._waiting_s(state),
            )
        notes = ((None, then.why),) if then.why else ()
        reserved = follow_ups.past_budget(state.analysis, state.runs) if sweep else 0
        return Step(
            part=Part.AFTER_MODES,
            notes=notes,
            limits=limits,
            sweep=sweep,
            breakdown=then.breakdown,
            cached=then.cached,
            reserved=reserved,
        )

    def _waiting_s(self, state: State) -> float:
        """What the pair that waits for the sweep would take: the sweep's budget leaves it room."""
        if not waits_for_sweep(state):
            return 0.0
        return again.pair_s(state.analysis.facts, apart=state.base.launcher is not None)

    def _sweep(self, state: State) -> Step | None:
        if not decided(state).sweep:
            return None
        limits = state.outcome.limits
        if limits is not None and limits.more_epochs and not budget.within_budget(state, limits):
            return Step(part=Part.SWEEP, limits=replace(limits, more_epochs=False))  # from now on, for the search
        if limits is not None and budget.cut_short(state, limits):
            return Step(part=Part.SWEEP, limits=replace(limits, finish_rounds=False))
        found = search.next_step(state.search_state)
        if found is not None and limits is not None and not budget.run_fits(state, found, limits):
            # a second run held: the search concludes from one; a further setting held: with those measured
            held = replace(limits, confirm=False) if found.second else replace(limits, more_settings=False)
            return Step(part=Part.SWEEP, limits=held)
        return searched(found, self.sizing(self.runs_from(state))) if found is not None else None

    def _breakdown(self, state: State) -> Step | None:
        if not decided(state).breakdown or state.taken(Part.BREAKDOWN):
            return None
        if state.outcome.held_breakdown is not None:  # timed at a real+synthetic run's switch
            return Step(part=Part.BREAKDOWN, keep=Keep.BREAKDOWN)
        return breakdown_step(self.runs_from(state))


def timing_loading(state: State, step: Step, asked: bool = False) -> Step:
    """``step``, where it runs real, then synthetic, in one run of the script (``Keep.MODES_IN_TURN``)
    and no breakdown was timed yet, asking that run to time each loading step at its switch
    (``DEFAULT_BREAKDOWN_ITEMS``): the breakdown a cpu verdict asks for then needs no run of
    its own, and a run whose verdict does not ask for it pays what ``RIDE_BUDGET_S`` allows. Not
    where the workers were busy less than ``LOADER_IDLE`` of their lives by then (unless the
    breakdown is ``asked`` for whatever the verdict): loading that sleeps is no cpu verdict's, and a
    verdict that asks for the breakdown after all gets its run."""
    if step.keep is not Keep.MODES_IN_TURN or step.config is None or state.outcome.held_breakdown is not None:
        return step
    busy = 0.0 if asked else th.LOADER_IDLE
    timed = step.config.with_child(breakdown_items=DEFAULT_BREAKDOWN_ITEMS, breakdown_busy=busy)
    return replace(step, config=timed)


def waits_for_sweep(state: State) -> bool:
    """Real and synthetic are to be measured again after the sweep (``again.after_sweep``)."""
    waited = state.taken(Part.AGAIN)
    return bool(waited) and waited[0].later


def decided(state: State) -> Step:
    """What diagnose decided once its modes were measured (its ``AFTER_MODES`` step)."""
    return state.taken(Part.AFTER_MODES)[0]


def split_first(state: State, spec: ModeSpec) -> bool:
    """No-aug is next, and the split run measures it, with cached, in one run of the script
    (``Keep.SPLIT_MODES``), where diagnose would follow it with the cached run and the split run:
    loading is the limit and its samples can be cached (``worth_caching``), the real run did not
    fail (``script_failed``), one process runs the script, no-aug has augmentation to replace,
    the script's loop outlasts the split run's turns (``split_unfit``), and the split run, every
    pipeline at the real run's pace, would end within ``DEFAULT_FOLLOW_UP_BUDGET_S`` of the
    command's start, and no sooner in runs of their own (``split.apart_sooner``)."""
    if spec.mode is not Mode.NO_AUG or state.base.launcher is not None or state.outcome.split_run is not None:
        return False
    if why_skip(spec, state.runs, state.base.child.drop_transforms) is not None:
        return False
    real = state.analysis.facts.real
    if real is None or script_failed(state.analysis) is not None or not worth_caching(state.analysis):
        return False
    if split_unfit(state) is not None or not state.outcome.timed:
        return False
    if split.apart_sooner(first_loader(state.runs), real, state.outcome.timed[0].start_s, state.base.warmup):
        return False
    expected = split.split_run_s(first_loader(state.runs), (real,))
    return expected is not None and state.elapsed_s + expected <= DEFAULT_FOLLOW_UP_BUDGET_S


def wants_split(modes: Sequence[ModeSpec]) -> bool:
    """Cached and no-aug are among ``modes``: the split of the real pipeline's time is asked for,
    and the split run measures it."""
    return {Mode.CACHED, Mode.NO_AUG} <= {spec.mode for spec in modes}


def why_not_sweep(analysis: Analysis) -> str | None:
    """Why measuring num_workers settings would not help, or None when it may.

    Workers that hand over batches cheaper to build than to hand over cost time by construction,
    a cost the comparison with free inputs barely resolves on a busy machine: fewer workers are
    measured whatever the verdict and however busy the cores are. So are they where the workers
    keep up while they take the step's cores (``_compete``), whatever cause the verdict names.
    Loading that waits on storage or latency (``io``) is swept however busy the cores are too: its
    workers sleep, and more of them keep more reads in flight without a core of their own. So are
    loaders asleep with nothing to show why (``asleep_unexplained``): the sweep tells latency from
    loaders that keep up.
    """
    facts = analysis.facts
    if facts.restarts_dominate:
        return "the workers' start-up every epoch is the limit, and more workers only start more of them"
    if facts.cheap_batches is not None:
        return None
    if _latency_suspected(analysis):
        return None
    if analysis.verdict.bottleneck not in (Bottleneck.CPU, Bottleneck.IO):
        return NOT_INPUT_BOUND
    if _compete(analysis):
        return None
    if facts.cores_saturated:
        assert facts.real is not None and facts.real.system_cpu_busy_fraction is not None
        return f"the cores were {100 * facts.real.system_cpu_busy_fraction:.0f}% busy: more workers cannot help"
    return None


def _latency_suspected(analysis: Analysis) -> bool:
    """Loading waits on storage or latency (``io``), or may: its loaders slept with nothing to show
    why (``asleep_unexplained``), which only more workers can tell from loaders that keep up."""
    return analysis.verdict.bottleneck is Bottleneck.IO or asleep_unexplained(analysis.verdict)


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
    failed = script_failed(analysis)
    if failed is not None:
        what = "num_workers setting or cache" if breakdown_asked else "num_workers setting, cache or loading step"
        why = f"{failed}: no {what} is measured against its rate, which its error cut short."
        return AfterModes(sweep=False, why=why, min_workers=0, breakdown=breakdown_asked)
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
    elif asleep_unexplained(analysis.verdict):
        why = "The loaders slept and nothing shows why: more of them gain only if they wait on latency"
    else:
        why = "Loading is the limit and the cores are not all busy"
    # Loading that waits on latency: fewer workers only put fewer reads in flight.
    io = _latency_suspected(analysis) and not cheap
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
