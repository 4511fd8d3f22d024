"""diagnose's plan driven with fake measurements and no process: which runs follow which, read
from the steps the plan gives, and the analysis each step reads computed at most once."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from fastload_cli import plan
from fastload_cli.analyzer import search, settle, split
from fastload_cli.analyzer import thresholds as th
from fastload_cli.config import DEFAULT_BREAKDOWN_ITEMS, DIAGNOSE_MODES, RunConfig
from fastload_cli.plan import Diagnose, Keep, Outcome, Part, Step, budget, follow_ups, runs
from fastload_cli.plan import state as plan_state
from fastload_cli.records import (
    Breakdown,
    IteratorInfo,
    Mode,
    ModeSpec,
    PhaseMark,
    RunResult,
    RunStatus,
    ScriptError,
    StopReason,
)
from tests.unit import builders as b

BASE = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", max_batches=20)
GIB = 2**30
PAIR = (Mode.REAL, Mode.SYNTHETIC)


def pipeline(config: RunConfig, *, own: int = 2, busy_cores: float = 0.9) -> RunResult:
    """What a run of a script measures whose loading scales with workers (a step takes
    max(10 ms, 80 ms / workers), 10 ms with free inputs); its two workers each keep ``busy_cores``
    of a core busy on a 16-core host, the machine 30% busy; its dataset has augmentation."""
    spec = config.spec
    if spec.mode is Mode.REAL_SYNTHETIC:  # the pair in turn, in one run
        real, synthetic = (pipeline(config.with_mode(ModeSpec(mode=m)), own=own, busy_cores=busy_cores) for m in PAIR)
        return b.in_turn(real, synthetic)
    if spec.mode is Mode.SPLIT:
        return split_run(config, own)
    if spec.mode is Mode.BREAKDOWN:
        return dataclasses.replace(
            b.run("real", []), breakdown=Breakdown(loader_id=1, items=8, threads=1, ms_per_sample=2.0, steps=())
        )
    workers = spec.workers if spec.workers is not None else own
    free = spec.mode in (Mode.SYNTHETIC, Mode.CACHED, Mode.CACHED_NO_AUG, Mode.NO_AUG)
    step = 10.0 if free else max(10.0, 80.0 / max(workers, 1))
    batch_list = b.batches([step - 5.0] * config.requested_batches, 5.0)
    loader = b.loader(num_workers=workers, augmentations=("ColorJitter()",))
    if spec.mode is Mode.WORKERS:
        loader = dataclasses.replace(loader, original_num_workers=own)
    samples = b.host_samples(
        batch_list[-1].wait_end_ns, worker_cores=(busy_cores,) * workers, system_busy=0.3, cpu_count=16
    )
    found = b.run(spec.label, batch_list, loaders=[loader], samples=samples, warmup=config.warmup)
    return dataclasses.replace(found, spec=spec, cpu_count=16)


def started_slowly(config: RunConfig) -> RunResult:
    """``pipeline``'s script where its first run takes 8 s to reach its loop (its libraries'
    import, its dataset built): a start that costs more than the split run's turns."""
    found = pipeline(config)
    if config.spec.mode is not Mode.REAL_SYNTHETIC:
        return found
    return dataclasses.replace(found, started_ns=found.started_ns - 8 * 10**9)


def split_run(config: RunConfig, own: int) -> RunResult:
    """The split run of ``pipeline``'s script: its pipelines in turns of the batches asked for,
    real .. cached-no-aug and back, the real one at the real run's pace and the others at 10 ms."""
    turn, warmup = config.child.phase_batches or 1, config.warmup
    order = ("real", "no-aug", "cached", "cached-no-aug")
    phases = [
        order[p if (n // 4) % 2 == 0 else 3 - p]
        for n in range((config.requested_batches - warmup) // turn)
        for p in [n % 4]
    ]
    paces = [max(10.0, 80.0 / own)] * warmup + [
        max(10.0, 80.0 / own) if p == "real" else 10.0 for p in phases for _ in range(turn)
    ]
    batch_list = b.batches([pace - 5.0 for pace in paces], 5.0)
    loader = b.loader(num_workers=own, augmentations=("ColorJitter()",))
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(0.9,) * own, system_busy=0.3, cpu_count=16)
    found = b.run("real", batch_list, loaders=[loader], samples=samples, warmup=warmup)
    marks = tuple(PhaseMark(loader_id=1, batch=warmup + n * turn, phase=p) for n, p in enumerate(phases))
    said = (b.NO_AUG_SUBSTITUTION, b.CACHED_SUBSTITUTION)
    return dataclasses.replace(found, spec=config.spec, cpu_count=16, phases=marks, substitutions=said)


def drive(
    command: plan.Plan,
    measure: Callable[[RunConfig], RunResult] = pipeline,
    elapsed_s: float | Callable[[list[Step]], float] = 0.0,
    until: Part | None = None,
) -> tuple[Outcome, list[Step], list[int]]:
    """The plan's steps executed as the session executes them, each run measured by ``measure``
    (no process), up to the first of part ``until``; the outcome, the steps, and how many analyses
    each step's state computed. ``elapsed_s``: the command's time so far, or what it is after the
    steps taken."""
    outcome, steps, analyses = command.start(), [], []
    counted = plan_state.analyze
    calls: list[int] = []

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return counted(*args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_state, "analyze", counting)
        while True:
            before = len(calls)
            now = elapsed_s(steps) if callable(elapsed_s) else elapsed_s
            step = command.next_step(plan.at(command, outcome, BASE, now, 8 * GIB))
            analyses.append(len(calls) - before)
            if step is None or step.part is until:
                return outcome, steps, analyses
            steps.append(step)
            run = measure(step.config) if step.config is not None else None
            if step.keep is Keep.BREAKDOWN:
                outcome = plan.recorded(outcome, step, raw=run)
            else:
                outcome = plan.recorded(outcome, step, plan.measured(run) if run is not None else None)


def with_epochs(run: RunResult, batches: int) -> RunResult:
    """``run`` of a script whose epochs are ``batches`` long."""
    return dataclasses.replace(
        run, loaders=tuple(dataclasses.replace(lo, batches_per_epoch=batches) for lo in run.loaders)
    )


def labels(steps: list[Step]) -> list[str]:
    """Each step that ran, as its run's label, in order."""
    return [s.config.spec.label for s in steps if s.config is not None]


def test_loading_on_free_cores_is_measured_modes_then_sweep_then_breakdown_then_follow_ups() -> None:
    outcome, steps, analyses = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), started_slowly)
    ran = labels(steps)
    # the modes in order (the device-resident replay only on CUDA), real and synthetic in one run
    # of the script; loading is the limit, so no-aug with cached in the split run's turns, in one
    # more: neither the cached run nor the split runs again among the follow-ups
    assert ran[:2] == ["real+synthetic", "split"]
    assert [r.spec.label for r in outcome.runs[:4]] == ["real", "synthetic", "no-aug", "cached"]
    assert ran.count("split") == 1 and "cached" not in ran and outcome.split_run is not None
    no_aug, cached = outcome.summaries[2:4]
    assert no_aug.throughput_batches_per_s == pytest.approx(100.0) == cached.throughput_batches_per_s  # 10 ms a batch
    # the split run is over once one round of turns decided no-aug's answer against the real run's rate
    splitting = next(s.config for s in steps if s.config is not None and s.config.spec.mode is Mode.SPLIT)
    assert splitting is not None and isinstance(splitting.settle, functools.partial)
    assert splitting.settle.func is split.decided
    assert splitting.settle.keywords["rate"] == pytest.approx(outcome.summaries[0].throughput_samples_per_s)
    parts = [s.part for s in steps]
    assert parts.index(Part.SWEEP) > parts.index(Part.AFTER_MODES) > parts.index(Part.MODES)
    # the sweep predicts from the script's own 2 workers: 8 keep up with the 10 ms step
    swept = [s.config.spec.workers for s in steps if s.part is Part.SWEEP and s.config is not None]
    assert swept and swept[0] == 8
    assert outcome.limits is not None and outcome.limits.memory_budget_bytes is not None
    # loading is CPU work: each loading step timed, after the sweep; then the follow-ups verify
    assert parts.index(Part.BREAKDOWN) > max(i for i, p in enumerate(parts) if p is Part.SWEEP)
    assert outcome.breakdown is not None and outcome.breakdown.items == 8
    assert Part.FOLLOW_UPS in parts and not outcome.unverified
    # every run's time accounted for: its parts add up to its wall time
    ran_steps = [s for s in steps if s.config is not None]
    assert len(outcome.timed) == len(ran_steps)
    assert all(min(t.start_s, t.warmup_s, t.measured_s, t.end_s) >= 0 for t in outcome.timed)
    assert sum(t.measured_s for t in outcome.timed) > 0 and outcome.timed[-1].breakdown is False
    # one question per step, the analysis it reads computed once at most, and only where read
    assert max(analyses) == 1
    assert sum(analyses) < len(steps) / 2


def test_follow_ups_past_the_budget_are_named_and_not_run() -> None:
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), elapsed_s=1e4)
    left = [s for s in steps if s.part is Part.FOLLOW_UPS and s.mode is not None and s.config is None]
    assert left and outcome.unverified == tuple(follow_ups.named(s.mode) for s in left if s.mode is not None)
    (note,) = [s for s in steps if s.part is Part.LEFT]
    assert note.notes[0][1].startswith("Not measured within diagnose's time budget: ")
    assert not [s for s in steps if s.part is Part.FOLLOW_UPS and s.config is not None]


def test_no_aug_runs_on_its_own_where_loading_is_not_the_limit_or_the_split_run_would_not_fit() -> None:
    def heavy_step(config: RunConfig) -> RunResult:  # a 40 ms step the loaders always keep up with
        if config.spec.mode is Mode.REAL_SYNTHETIC:
            return b.in_turn(*(heavy_step(config.with_mode(ModeSpec(mode=m))) for m in PAIR))
        found = pipeline(config)
        steps = b.batches([0.2] * config.requested_batches, 40.0)
        heavy = b.run(config.spec.label, steps, loaders=found.loaders, samples=found.host_samples, warmup=config.warmup)
        return dataclasses.replace(heavy, spec=config.spec, cpu_count=16)

    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), heavy_step)
    assert labels(steps)[:2] == ["real+synthetic", "no-aug"] and outcome.split_run is None
    # no-aug's answer is its rate against the real run's (40 ms steps: 800 samples/s), read against
    # augmentation's line: it stops once that is decided, not only once its own rate is known to 4%
    no_aug = next(s.config for s in steps if s.config is not None and s.config.spec.mode is Mode.NO_AUG)
    assert no_aug is not None and isinstance(no_aug.settle, functools.partial)
    assert no_aug.settle.keywords["rate"] == pytest.approx(outcome.summaries[0].throughput_samples_per_s)
    assert no_aug.settle.keywords["line"] == th.AUG_SPEEDUP_SIGNIFICANT
    late = Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True)
    _, steps, _ = drive(late, elapsed_s=24.0)  # the split run would end past diagnose's time budget
    assert labels(steps)[:2] == ["real+synthetic", "no-aug"]
    _, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32))  # modes asked for: each in a run of its own
    assert labels(steps)[:2] == ["real+synthetic", "no-aug"]


def test_runs_read_by_their_steady_windows_wait_for_no_next_epoch_where_the_real_window_crossed_none() -> None:
    # the real run's window holds no epoch's start: what an epoch costs besides its steps is read
    # from the real run alone, so no-aug and cached stop within an epoch; a window of theirs that
    # waited for the next epoch's start would hold a boundary the real window does not
    command = Diagnose(DIAGNOSE_MODES, max_workers=32)
    outcome, steps, _ = drive(command, until=Part.SWEEP)
    assert outcome.summaries[0].epoch_boundaries == 0
    no_aug = next(s.config for s in steps if s.config is not None and s.config.spec.mode is Mode.NO_AUG)
    assert no_aug is not None and isinstance(no_aug.settle, functools.partial)
    assert no_aug.settle.keywords["across_epochs"] is False
    state = plan.at(command, outcome, BASE, 0.0, 8 * GIB)
    cached = ModeSpec(mode=Mode.CACHED)
    ready = runs.mode_step(state, cached, BASE.with_mode(cached)).config
    assert ready is not None and isinstance(ready.settle, functools.partial)
    assert ready.settle.func is settle.settled and ready.settle.keywords == {"across_epochs": False}

    def crossing(config: RunConfig) -> RunResult:
        # epochs too short for a steady window (each counts whole, its start included), and the
        # real run's window holds its second epoch's start
        if config.spec.mode is not Mode.REAL_SYNTHETIC:
            return pipeline(config)
        real, synthetic = (pipeline(config.with_mode(ModeSpec(mode=m))) for m in PAIR)
        half = len(real.batches) // 2
        second = [dataclasses.replace(x, iterator_id=2, index=x.index - half) for x in real.batches[half:]]
        began = second[0].wait_start_ns
        epoch = IteratorInfo(loader_id=1, iterator_id=2, started_ns=began, ready_ns=began, worker_pids=(), reused=False)
        batches, iterators = (*real.batches[:half], *second), (*real.iterators, epoch)
        return b.in_turn(dataclasses.replace(with_epochs(real, half), batches=batches, iterators=iterators), synthetic)

    outcome, steps, _ = drive(command, crossing, until=Part.SWEEP)
    assert outcome.summaries[0].epoch_boundaries == 1
    no_aug = next(s.config for s in steps if s.config is not None and s.config.spec.mode is Mode.NO_AUG)
    assert no_aug is not None and isinstance(no_aug.settle, functools.partial)
    assert no_aug.settle.keywords["across_epochs"] is True
    state = plan.at(command, outcome, BASE, 0.0, 8 * GIB)
    ready = runs.mode_step(state, cached, BASE.with_mode(cached)).config
    assert ready is not None and ready.settle is settle.settled


def test_a_script_that_ends_before_the_split_runs_turns_measures_no_aug_and_cached_in_runs_of_their_own() -> None:
    first: list[RunResult] = []

    def short(config: RunConfig) -> RunResult:  # the script's loop ends with the first run's batches
        found = pipeline(config)
        if config.spec.mode is not Mode.REAL_SYNTHETIC:
            return found
        first.append(dataclasses.replace(found, stop_reason=StopReason.SCRIPT_ENDED))
        return first[-1]

    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), short)
    ran = labels(steps)
    assert ran[:2] == ["real+synthetic", "no-aug"] and "cached" in ran
    assert "split" not in ran and outcome.split_run is None
    said = [note for s in steps for _, note in s.notes if note.startswith("Not measured: split")]
    assert said == [
        f"Not measured: split (the script's training loop ended after {len(first[0].batches)} batches, fewer "
        "than its pipelines' turns need); no-aug and cached are measured in runs of their own."
    ]
    # where the script's loop outlasts the turns, the split run measures them, as before
    assert labels(drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), started_slowly)[1])[1] == "split"


def test_no_aug_and_cached_run_on_their_own_where_the_split_runs_turns_would_take_longer_than_a_start() -> None:
    """albumentations_train.py's shape: batches slow beside the script's start. The split run's
    turns (every pipeline twice, 176 batches at 40 ms here) would take longer than the two runs
    of their own (their warm-ups and as many batches as the real run's window) and one start
    more: they run on their own. A start of 8 s is worth the turns: the split run measures them.
    albumentations_train.py's numbers: one worker, 25 real batches at 80 ms, a 4.3 s start."""
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True))
    ran = labels(steps)
    assert ran[:2] == ["real+synthetic", "no-aug"] and "cached" in ran and "split" not in ran
    assert outcome.split_run is None
    assert labels(drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), started_slowly)[1])[1] == "split"
    one = b.loader(num_workers=1)
    real = dataclasses.replace(b.summary(throughput=400.0), batches=25, throughput_batches_per_s=12.5)
    assert split.apart_sooner(one, real, start_s=4.3, warmup=5)  # 152 batches: 12.2 s, against 4.8 s and a start
    assert not split.apart_sooner(one, real, start_s=8.0, warmup=5)  # where a start costs more than the difference


def test_the_sweep_holds_no_more_rounds_of_whole_epoch_pairs_past_diagnoses_time_budget() -> None:

    def short(config: RunConfig) -> RunResult:  # epochs short enough for rounds of pairs: 40 batches
        return with_epochs(pipeline(config), 40)

    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), short)
    assert outcome.limits is not None and outcome.limits.budget_s is not None and outcome.limits.more_epochs
    late, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), short, elapsed_s=39.0)
    assert late.limits is not None and not late.limits.more_epochs
    held = next(i for i, s in enumerate(steps) if s.part is Part.SWEEP and s.config is None)
    assert steps[held].limits is not None and steps[held].limits.more_settings
    after = steps[held + 1]
    assert after.part is Part.SWEEP and after.config is not None  # the search goes on, its rounds held
    swept, _, _ = drive(plan.Sweep(max_workers=32), elapsed_s=1e4)  # sweep-workers has no budget
    assert swept.limits is not None and swept.limits.budget_s is None and swept.limits.more_epochs


def test_a_round_of_pairs_cut_short_by_the_scripts_end_is_not_finished_past_the_budget_in_runs_of_their_own() -> None:
    def short(config: RunConfig) -> RunResult:  # 40-batch epochs; the in-process round ends with the script
        return with_epochs(pipeline(config), 40)

    # with time to spare, the round's rest runs in runs of its own after the in-process run
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), short)
    ran = labels(steps)
    assert outcome.in_process_short and ran[ran.index("in-process") + 1] == "workers=2"
    # the budget held the round as one run, not its rest as runs of their own: nothing more of it
    late, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), short, elapsed_s=30.0)
    ran = labels(steps)
    assert late.in_process_short and "in-process" in ran and "workers=2" not in ran
    assert late.limits is not None and not late.limits.more_epochs and not late.limits.finish_rounds


def test_a_second_run_of_a_setting_starts_only_within_diagnoses_time_budget_and_the_caveat_says_so() -> None:
    def six_workers(config: RunConfig) -> RunResult:  # 8 workers 1.33x the script's 6: each measured twice
        return pipeline(config, own=6)

    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), six_workers)
    swept = [s.config.spec.workers for s in steps if s.part is Part.SWEEP and s.config is not None]
    assert swept.count(8) == 2 and swept.count(6) == 1  # the best and the script's own (its real run) again
    assert outcome.limits is not None and outcome.limits.confirm
    # the plan's settings measured in time (8, 12, 18), its second runs past the budget
    late, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), six_workers, elapsed_s=sweeps(3))
    swept = [s.config.spec.workers for s in steps if s.part is Part.SWEEP and s.config is not None]
    assert swept == [8, 12, 18]  # every setting once
    assert late.limits is not None and not late.limits.confirm
    found = plan_state.State(outcome=late, base=BASE, elapsed_s=45.0).analysis.facts.sweep
    assert found is not None and found.recommended_workers is not None
    assert f"num_workers={found.best_workers} was measured once" in " ".join(found.caveats)
    assert not any("measured once" in c for c in outcome_caveats(outcome))
    swept_alone, steps, _ = drive(plan.Sweep(max_workers=32), six_workers, elapsed_s=1e4)  # no budget: confirmed
    assert swept_alone.limits is not None and swept_alone.limits.confirm
    alone = [s.config.spec.workers for s in steps if s.part is Part.SWEEP and s.config is not None]
    assert len(alone) > len(set(alone))  # a setting measured twice


def test_a_further_setting_starts_only_within_diagnoses_time_budget_once_the_sweep_has_one_to_advise() -> None:
    # with time to spare, the plan verifies its prediction: 8, then 12 and 18 above it, 6 below
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True))
    swept = [s.config.spec.workers for s in steps if s.part is Part.SWEEP and s.config is not None]
    assert swept == [8, 12, 18, 6] and outcome.limits is not None and outcome.limits.more_settings
    # past the budget, the first setting beside the script's own is still measured (without it the
    # sweep would advise nothing), and the search ends there, the caveat naming what came next
    late, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), elapsed_s=45.0)
    swept = [s.config.spec.workers for s in steps if s.part is Part.SWEEP and s.config is not None]
    assert swept == [8] and late.limits is not None and not late.limits.more_settings
    found = plan_state.State(outcome=late, base=BASE, elapsed_s=45.0).analysis.facts.sweep
    assert found is not None and found.recommended_workers == 8
    assert "would have measured num_workers=12 next" in " ".join(found.caveats)
    assert not any("would have measured" in c for c in outcome_caveats(outcome))
    # a further setting's run is estimated at the pace of the setting measured nearest it
    state = plan_state.State(outcome=late, base=BASE, elapsed_s=10.0)
    further = search.Step(specs=(ModeSpec(mode=Mode.WORKERS, workers=12),), warmup=5, max_batches=20)
    limits = dataclasses.replace(late.limits, more_settings=True)
    assert budget.budgeted(state, further) and budget.run_fits(state, further, limits)
    assert not budget.run_fits(dataclasses.replace(state, elapsed_s=39.9), further, limits)
    # sweep-workers has no budget: every setting measured
    alone, steps, _ = drive(plan.Sweep(max_workers=32), elapsed_s=1e4)
    assert alone.limits is not None and alone.limits.more_settings
    assert len([s for s in steps if s.part is Part.SWEEP and s.config is not None]) > 1


def sweeps(runs: int, late_s: float = 45.0) -> Callable[[list[Step]], float]:
    """A command's time that stays at 0 s until the sweep has measured ``runs`` settings, then is ``late_s``."""
    return lambda steps: late_s if sum(s.part is Part.SWEEP and s.config is not None for s in steps) >= runs else 0.0


def stalling(config: RunConfig) -> RunResult:
    """``pipeline``'s script with six workers, its real run's loop stalled 400 ms three times by
    slow samples behind which the other workers' batches were ready: a pathology whose fix
    (in_order=False) diagnose verifies, past its budget if it must."""
    if config.spec.mode is Mode.REAL_SYNTHETIC:
        real, synthetic = (stalling(config.with_mode(ModeSpec(mode=m))) for m in PAIR)
        return b.in_turn(real, synthetic)
    run = pipeline(config, own=6)
    if config.spec.mode is not Mode.REAL:
        return run
    batch_list = b.batches([400.0 if i in (9, 15, 22) else 8.3 for i in range(len(run.batches))], 5.0)
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(0.9,) * 6, system_busy=0.3, cpu_count=16)
    found = b.run("real", batch_list, loaders=list(run.loaders), samples=samples, warmup=config.warmup)
    return dataclasses.replace(found, spec=run.spec, cpu_count=16)


def test_the_sweep_leaves_the_fix_of_a_pathology_its_run_within_diagnoses_time_budget() -> None:
    # what the sweep's second runs and whole-epoch pairs may use of its budget is less one run, as
    # long as the median so far, for each pathology's fix still to verify: the fix comes first
    _, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), stalling)
    assert "fix:in-order" in labels(steps)
    swept, _, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), stalling, until=Part.FOLLOW_UPS)
    state = plan_state.State(outcome=swept, base=BASE, elapsed_s=10.0)
    assert [p.fix for p in state.analysis.pathologies] == ["in-order"]
    assert budget.reserved_s(state) == follow_ups.median_run_s(state) > 0
    plain_outcome, _, _ = drive(
        Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), lambda c: pipeline(c, own=6), until=Part.FOLLOW_UPS
    )
    assert budget.reserved_s(plan_state.State(outcome=plain_outcome, base=BASE, elapsed_s=10.0)) == 0.0
    # a second run of the script's own setting, and a round of pairs, that would just fit the budget
    # without the reserve do not with it
    limits = swept.limits
    assert limits is not None and limits.budget_s is not None
    second = search.Step(specs=(ModeSpec(mode=Mode.WORKERS, workers=6),), warmup=5, max_batches=20, second=True)
    fitting = [
        e
        for e in (x / 10 for x in range(400))
        if budget.run_fits(dataclasses.replace(state, elapsed_s=e), second, limits)
    ]
    last = max(fitting)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(budget, "reserved_s", lambda _: 0.0)
        assert budget.run_fits(
            dataclasses.replace(state, elapsed_s=last + 0.1 + follow_ups.median_run_s(state) / 2), second, limits
        )
    # ... and a round of pairs over epochs short enough to ask for them (40 batches)
    short, _, _ = drive(
        Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True),
        lambda c: with_epochs(stalling(c), 40),
        until=Part.FOLLOW_UPS,
    )
    at = plan_state.State(outcome=short, base=BASE, elapsed_s=10.0)
    needed, reserve = budget.round_s(at), budget.reserved_s(at)
    assert short.limits is not None and short.limits.budget_s is not None and needed is not None and reserve > 0
    pairs = [
        e
        for e in (x / 10 for x in range(400))
        if budget.within_budget(dataclasses.replace(at, elapsed_s=e), short.limits)
    ]
    assert max(pairs) == pytest.approx(short.limits.budget_s - reserve - needed, abs=0.1)


HELD = Breakdown(loader_id=1, items=64, threads=1, ms_per_sample=3.0, steps=())


def timing_at_the_switch(measure: Callable[[RunConfig], RunResult] = pipeline) -> Callable[[RunConfig], RunResult]:
    """``measure``'s script whose real+synthetic runs time the breakdown at their switch where
    asked (``ChildSpec.breakdown_items``), which takes 0.1 s."""

    def timing(config: RunConfig) -> RunResult:
        found = measure(config)
        if config.spec.mode is not Mode.REAL_SYNTHETIC or not config.child.breakdown_items:
            return found
        return dataclasses.replace(found, breakdown=HELD, breakdown_ns=100_000_000)

    return timing


def step_bound(config: RunConfig) -> RunResult:
    """A script whose 40 ms step is the limit: its loop waits half a millisecond for each batch,
    with free inputs or not; its two workers are nearly idle."""
    spec = config.spec
    if spec.mode is Mode.REAL_SYNTHETIC:
        return b.in_turn(*(step_bound(config.with_mode(ModeSpec(mode=m))) for m in PAIR))
    batch_list = b.batches([0.5] * config.requested_batches, 40.0)
    loader = b.loader(num_workers=2, augmentations=("ColorJitter()",))
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(0.1, 0.1), system_busy=0.3, cpu_count=16)
    found = b.run(spec.label, batch_list, loaders=[loader], samples=samples, warmup=config.warmup)
    return dataclasses.replace(found, spec=spec, cpu_count=16)


def test_the_breakdown_timed_at_the_switch_of_real_and_synthetic_spares_its_own_run() -> None:
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), timing_at_the_switch())
    assert steps[0].config is not None and steps[0].config.child.breakdown_items == DEFAULT_BREAKDOWN_ITEMS
    # ... only where the workers were busy: loading that sleeps asks for no cpu verdict's breakdown
    assert steps[0].config.child.breakdown_busy == th.LOADER_IDLE
    _, asked, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, breakdown=True), timing_at_the_switch())
    assert asked[0].config is not None and asked[0].config.child.breakdown_busy == 0  # --breakdown: wherever
    # loading is CPU work: the breakdown is the one timed at the switch, in its place among the parts
    assert "breakdown" not in labels(steps)
    breakdown = [s for s in steps if s.part is Part.BREAKDOWN]
    assert len(breakdown) == 1 and breakdown[0].config is None
    assert outcome.breakdown is HELD
    assert [s.part for s in steps].index(Part.BREAKDOWN) > [s.part for s in steps].index(Part.SWEEP)
    # no later real+synthetic run times it again; its time is the breakdown's, not the warm-up's
    again = [s for s in steps[1:] if s.keep is Keep.MODES_IN_TURN]
    assert all(s.config is not None and not s.config.child.breakdown_items for s in again)
    assert outcome.timed[0].breakdown_s == pytest.approx(0.1)
    # until the plan asks for it, nothing decided reads it: the same steps as with a run of its own
    _, own_run, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True))
    assert [label for label in labels(own_run) if label != "breakdown"] == labels(steps)


def test_a_breakdown_timed_at_the_switch_that_the_verdict_does_not_ask_for_is_not_reported() -> None:
    # the step is the limit: no breakdown is asked for
    command = Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True)
    outcome, steps, _ = drive(command, timing_at_the_switch(step_bound))
    assert plan_state.State(outcome=outcome, base=BASE).analysis.verdict.bottleneck.value == "compute"
    assert outcome.held_breakdown is HELD
    assert outcome.breakdown is None and not [s for s in steps if s.part is Part.BREAKDOWN]


def outcome_caveats(outcome: Outcome) -> tuple[str, ...]:
    found = plan_state.State(outcome=outcome, base=BASE).analysis.facts.sweep
    return found.caveats if found is not None else ()


def test_after_a_real_run_the_script_ended_by_raising_no_setting_cache_or_breakdown_is_measured() -> None:
    def raising(config: RunConfig) -> RunResult:  # the script raises at its 8th batch; replays go on
        if config.spec.mode is Mode.SYNTHETIC:
            return pipeline(config)
        real = config.with_mode(ModeSpec(mode=Mode.REAL)) if config.spec.mode is Mode.REAL_SYNTHETIC else config
        found = pipeline(real)
        kept = found.batches[:8]
        error = ScriptError(type_name="RuntimeError", message="received 0 items of ancdata", traceback="")
        return dataclasses.replace(
            found,
            spec=config.spec,
            status=RunStatus.FAILED,
            stop_reason=StopReason.SCRIPT_RAISED,
            batches=kept,
            ended_ns=kept[-1].wait_end_ns if kept else found.ended_ns,
            error=error,
            phases=tuple(m for m in found.phases if m.batch < len(kept)),  # a split run's turns up to the error
        )

    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True), raising)
    ran = labels(steps)
    assert ran[:2] == ["real+synthetic", "synthetic"]  # the modes asked for are measured
    assert not [label for label in ran if label.startswith("workers=") or label in ("cached", "split", "breakdown")]
    assert outcome.breakdown is None and outcome.split_run is None
    notes = " ".join(text for s in steps for _, text in s.notes)
    assert "The script failed in the real run: no num_workers setting, cache or loading step is measured" in notes
    # the same script where it does not raise: settings, the cache and the breakdown measured
    _, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32, follow_ups=True))
    assert any(label.startswith("workers=") for label in labels(steps))


def test_a_cached_run_decodes_a_settled_windows_worth_of_samples_not_every_batch_it_may_run() -> None:
    state = plan.at(Diagnose(DIAGNOSE_MODES, max_workers=32), Outcome(), BASE, 0.0, 8 * GIB)
    asked = dataclasses.replace(BASE, max_batches=50)  # diagnose's default: 55 batches with the warm-up
    cached = state.with_cache(asked.with_mode(ModeSpec(mode=Mode.CACHED))).child
    assert cached.cache_batches == asked.warmup + th.CACHE_FILL_BATCHES < asked.requested_batches
    assert cached.cache_bytes == int(8 * GIB * th.RAM_CACHE_SHARE)
    short = dataclasses.replace(BASE, max_batches=4)  # a run asking for fewer decodes no more than it asks
    assert state.with_cache(short).child.cache_batches == short.requested_batches


def near_the_line(gain: float) -> Callable[[RunConfig], RunResult]:
    """A script whose ceiling lies on the compute line: at its 2 workers a step of 11.5 ms, of which
    it waits 1.5 ms (13%), and 10 ms with free inputs; more workers train ``gain`` times as fast
    (a synthetic run slowed by the machine reads a ceiling below what the sweep finds)."""

    def measure(config: RunConfig) -> RunResult:
        spec = config.spec
        if spec.mode is Mode.REAL_SYNTHETIC:
            real, synthetic = (measure(config.with_mode(ModeSpec(mode=m))) for m in PAIR)
            return b.in_turn(real, synthetic)
        if spec.mode in (Mode.SPLIT, Mode.BREAKDOWN):
            return pipeline(config)
        workers = spec.workers if spec.workers is not None else 2
        faster = gain if workers > 2 else 1.0
        wait, compute = (0.05, 10.0) if spec.mode is Mode.SYNTHETIC else (1.5 / faster, 10.0 / faster)
        batch_list = b.batches([wait] * config.requested_batches, compute)
        loader = b.loader(num_workers=workers, augmentations=("ColorJitter()",))
        if spec.mode is Mode.WORKERS:
            loader = dataclasses.replace(loader, original_num_workers=2)
        samples = b.host_samples(
            batch_list[-1].wait_end_ns, worker_cores=(0.9,) * workers, system_busy=0.3, cpu_count=16
        )
        found = b.run(spec.label, batch_list, loaders=[loader], samples=samples, warmup=config.warmup)
        return dataclasses.replace(found, spec=spec, cpu_count=16)

    return measure


def test_a_ceiling_near_the_line_is_measured_again_after_the_sweep_only_where_the_sweep_leaves_it_open() -> None:
    # the sweep measures 3 workers 1.4x as fast: the verdict stands on it, whatever the ceiling
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32), near_the_line(1.4))
    parts = [s.part for s in steps]
    (waiting,) = [s for s in steps if s.part is Part.AGAIN]
    assert waiting.later and waiting.config is None and "after the num_workers sweep" in waiting.notes[0][1]
    (settled,) = [s for s in steps if s.part is Part.AGAIN_LATE]
    assert settled.config is None and "settles the verdict" in settled.notes[0][1]
    assert parts.index(Part.AGAIN_LATE) > max(i for i, p in enumerate(parts) if p is Part.SWEEP)
    assert [r.spec.label for r in outcome.runs].count("real") == 1
    found = plan_state.State(outcome=outcome, base=BASE, elapsed_s=0.0).analysis
    assert found.facts.sweep_confirms_input and not found.facts.pairs
    # the sweep finds nothing faster: real and synthetic are measured again after it, as the pair
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32), near_the_line(1.0))
    again = [s for s in steps if s.part is Part.AGAIN_LATE]
    assert [s.config.spec.label for s in again if s.config is not None] == ["real+synthetic"]
    assert "did not settle" in again[0].notes[0][1]
    assert [r.spec.label for r in outcome.runs].count("real") == 2
    assert sum(t.again for t in outcome.timed) == 1
    # without a sweep (synthetic-compare), the pair follows the modes at once
    outcome, steps, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=None), near_the_line(1.0))
    first = next(s for s in steps if s.part is Part.AGAIN)
    assert first.config is not None and first.config.spec.label == "real+synthetic" and not first.later
    assert not any(s.part is Part.AGAIN_LATE for s in steps)


def test_a_round_of_whole_epoch_pairs_is_reckoned_as_the_run_it_is() -> None:
    """40-batch epochs at 40 ms a step, a start of 3 s before the first iter(): a round is one run
    of the script, its start, a warm-up epoch and four (3 + 5 x 1.6 s and the workers' start-up),
    not four runs as long as the median one (4 x 4 s)."""

    def short_epochs(config: RunConfig) -> RunResult:
        run = with_epochs(pipeline(config), 40)
        return dataclasses.replace(run, started_ns=run.started_ns - 3_000_000_000)

    outcome, _, _ = drive(Diagnose(DIAGNOSE_MODES, max_workers=32), short_epochs, until=Part.SWEEP)
    assert outcome.limits is not None and outcome.limits.budget_s == 40.0
    at = functools.partial(plan_state.State, outcome=outcome, base=BASE)
    assert budget.round_s(at(elapsed_s=0.0)) == pytest.approx(3.0 + 5 * (1.6 + 0.035))
    assert budget.within_budget(at(elapsed_s=26.0), outcome.limits)  # four median runs would end at 42 s
    assert not budget.within_budget(at(elapsed_s=30.0), outcome.limits)
