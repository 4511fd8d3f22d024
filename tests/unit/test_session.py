"""The session executing plans: skips, retries of disturbed runs, what stops a command, the sweep's
and diagnose's steps as runs (run_mode replaced)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from fastload_cli import session
from fastload_cli.analyzer import Analysis, analyze, search, trials
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.analyzer.search.in_process import setting_settled
from fastload_cli.analyzer.verdict import Facts, decide
from fastload_cli.config import DEFAULT_FOLLOW_UP_BUDGET_S, DEFAULT_MAX_WORKERS, DIAGNOSE_MODES, RunConfig
from fastload_cli.errors import NoLoaderObservedError, ScriptFailedError
from fastload_cli.plan import Diagnose, Outcome, Part, State, Step, Sweep, diagnose, follow_ups
from fastload_cli.plan.runs import REAL, SYNTHETIC, mode_step
from fastload_cli.plan.step import FollowUp
from fastload_cli.plan.sweep import searched
from fastload_cli.records import (
    Bottleneck,
    FindingKind,
    Measured,
    Mode,
    ModeSpec,
    PhaseMark,
    Recommendation,
    RunResult,
    RunStatus,
    ScriptError,
    StopReason,
)
from tests.unit import builders as b
from tests.unit.builders import MS, fix_spec

BASE = RunConfig(script=Path("/x/train.py"), script_arg0="train.py")


def quiet_run(mode: str, augmented: bool = False) -> RunResult:
    batch_list = b.batches([50] + [10] * 19, 30)
    loaders = [b.loader(augmentations=("ColorJitter()",) if augmented else ())]
    samples = b.host_samples(batch_list[-1].wait_end_ns, main_cores=1.0, worker_cores=(0.4, 0.4), system_busy=0.95)
    return b.run(mode, batch_list, loaders=loaders, samples=samples)


def disturbed_run(mode: str) -> RunResult:
    batch_list = b.batches([50] + [10] * 19, 30)
    samples = b.host_samples(batch_list[-1].wait_end_ns, main_cores=0.5, worker_cores=(0.1,), system_busy=0.95)
    return b.run(mode, batch_list, samples=samples)  # 1.9 cores busy, 0.6 of them the run's


def fake(monkeypatch: pytest.MonkeyPatch, results: list[RunResult]) -> list[str]:
    calls: list[str] = []

    def run_mode(config, nvml, observer):
        calls.append(config.spec.label)
        if config.spec.mode is Mode.REAL_SYNTHETIC:  # the pair in turn, in one run
            return b.in_turn(results.pop(0), results.pop(0))
        return results.pop(0)

    monkeypatch.setattr(session, "run_mode", run_mode)
    return calls


@dataclasses.dataclass(frozen=True)
class ModesOnly:
    """A plan that runs ``modes`` in order and nothing else."""

    modes: tuple[ModeSpec, ...]

    def start(self) -> Outcome:
        return Outcome()

    def sizing(self, base: RunConfig) -> RunConfig:
        return base

    def next_step(self, state: State) -> Step | None:
        done = len(state.taken(Part.MODES))
        if done >= len(self.modes):
            return None
        return mode_step(state, self.modes[done], state.base.with_mode(self.modes[done]))


def run_modes(runner: session.StepRunner, modes: tuple[ModeSpec, ...]) -> Outcome:
    return session.execute(ModesOnly(modes), runner)


def run_sweep(runner: session.StepRunner, limits: search.Limits, done: Outcome | None = None) -> Outcome:
    """sweep-workers' search with ``limits``' grid and in-process, after the runs ``done`` (none:
    the search alone, without the script's own setting measured first)."""
    sweep = Sweep(DEFAULT_MAX_WORKERS, limits.grid, in_process=limits.in_process)
    return session.execute(sweep, runner, done or Outcome(taken=(Step(part=Part.MODES),)))


def run(notes: list[str] | None = None) -> Outcome:
    found = notes if notes is not None else []
    runner = session.StepRunner(BASE, None, lambda spec: None, lambda spec, m: found.append(m))
    return run_modes(runner, tuple(DIAGNOSE_MODES))


def test_no_aug_is_skipped_without_augmentation(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake(monkeypatch, [quiet_run("real"), quiet_run("synthetic")])
    notes: list[str] = []
    outcome = run(notes)
    assert calls == ["real", "synthetic"]
    assert [r.spec.mode for r in outcome.runs] == [Mode.REAL, Mode.SYNTHETIC]
    assert any("skipped" in n for n in notes)


def test_a_script_on_cuda_gets_the_device_resident_replay_and_one_on_the_cpu_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = quiet_run("real")
    on_cuda = dataclasses.replace(real, env=dataclasses.replace(real.env, cuda_in_use=True))
    calls = fake(monkeypatch, [on_cuda, quiet_run("synthetic"), quiet_run("synthetic-device")])
    notes: list[str] = []
    run(notes)
    assert calls == ["real", "synthetic", "synthetic-device"]
    calls = fake(monkeypatch, [quiet_run("real"), quiet_run("synthetic")])
    run(notes)
    assert calls == ["real", "synthetic"] and not any("synthetic-device" in n for n in notes)


def test_a_disturbed_run_is_measured_again_and_the_quieter_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    retry = quiet_run("synthetic")
    results = [quiet_run("real", augmented=True), disturbed_run("synthetic"), retry, quiet_run("no-aug")]
    calls = fake(monkeypatch, results)
    notes: list[str] = []
    outcome = run(notes)
    assert calls == ["real", "synthetic", "synthetic", "no-aug"]
    assert outcome.runs[1] is retry
    assert any("running it again" in n for n in notes)
    # the time of both synthetic runs is accounted for, as runs that measured again
    assert [t.again for t in outcome.timed] == [False, True, True, False]


def test_a_real_run_without_batches_stops_the_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    failed = dataclasses.replace(
        b.run("real", [], status=RunStatus.FAILED, stop=StopReason.SCRIPT_RAISED),
        error=ScriptError(type_name="OSError", message="no data", traceback=""),
    )
    fake(monkeypatch, [failed])
    with pytest.raises(ScriptFailedError, match="OSError: no data"):
        run()


def test_no_loader_is_its_own_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake(monkeypatch, [b.run("real", [], loaders=[], stop=StopReason.SCRIPT_ENDED)])
    with pytest.raises(NoLoaderObservedError, match="without iterating"):
        run()


def test_an_interrupted_run_ends_the_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    interrupted = b.run("synthetic", b.batches([10] * 5, 5), status=RunStatus.INTERRUPTED)
    calls = fake(monkeypatch, [quiet_run("real", augmented=True), interrupted])
    outcome = run()
    assert outcome.interrupted and calls == ["real", "synthetic"]


def fake_pipeline(
    monkeypatch: pytest.MonkeyPatch,
    own_workers: int = 2,
    known: bool = True,
    epoch: int | None = None,
    first_epoch: float = 1.0,
    free_ms: float = 10.0,
) -> list[RunConfig]:
    """run_mode replaced by a pipeline whose step takes max(10 ms, 80 ms / workers): loading
    scales with workers until the 10 ms step is the limit (at 8); the synthetic run's step is
    ``free_ms``. ``known``: the loaders say the script's own setting; ``epoch``: its batches per
    epoch; ``first_epoch``: how much longer a step takes in a run measured inside the first epoch."""
    calls: list[RunConfig] = []

    def run_mode(config, nvml, observer):
        calls.append(config)
        if config.spec.mode is Mode.IN_PROCESS:
            return in_process_run(config)
        if config.spec.mode is Mode.REAL_SYNTHETIC:
            return b.in_turn(one(config.with_mode(REAL)), one(config.with_mode(SYNTHETIC)))
        return one(config)

    def one(config):
        n = config.spec.workers if config.spec.workers is not None else own_workers
        step = free_ms if config.spec.mode is Mode.SYNTHETIC else max(10.0, 80.0 / max(n, 1))
        step *= first_epoch if epoch and config.warmup < epoch else 1.0
        batch_list = b.batches([step - 5.0] * config.requested_batches, 5.0)
        loader = dataclasses.replace(b.loader(num_workers=n), batches_per_epoch=epoch)
        if known and config.spec.mode is Mode.WORKERS:
            loader = dataclasses.replace(loader, original_num_workers=own_workers)
        return dataclasses.replace(b.run(config.spec.label, batch_list, loaders=[loader]), warmup_batches=config.warmup)

    def in_process_run(config):  # the settings in turn, as the child marks them
        batch_list, marks = [], []
        for workers, n in config.child.turns:
            step = max(10.0, 80.0 / max(workers, 1))
            start = batch_list[-1].wait_end_ns + 5 * MS if batch_list else 0
            part = b.batches([step - 5.0] * n, 5.0, start_ns=start)
            marks.append(PhaseMark(loader_id=1, batch=len(batch_list), phase=f"workers={workers}"))
            batch_list += [dataclasses.replace(x, index=x.index + len(batch_list)) for x in part]
        loader = dataclasses.replace(b.loader(num_workers=config.child.turns[0][0]), batches_per_epoch=epoch)
        loader = dataclasses.replace(loader, original_num_workers=own_workers) if known else loader
        run = b.run("in-process", batch_list, loaders=[loader])
        return dataclasses.replace(run, warmup_batches=config.warmup, phases=tuple(marks))

    monkeypatch.setattr(session, "run_mode", run_mode)
    return calls


def settings(calls: list[RunConfig]) -> list[object]:
    """Each run's setting; a points run's settings as a tuple."""
    return [tuple(w for w, _ in c.child.turns) if c.spec.mode is Mode.IN_PROCESS else c.spec.workers for c in calls]


def test_a_sweep_starts_from_the_prediction_and_verifies_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_pipeline(monkeypatch)
    runner = session.StepRunner(dataclasses.replace(BASE, max_batches=20), None, lambda spec: None)
    own = run_modes(runner, (ModeSpec(mode=Mode.REAL), ModeSpec(mode=Mode.SYNTHETIC)))
    outcome = run_sweep(runner, search.Limits(), done=own)
    # own 2 workers: 800 samples/s, 400 per worker; the step takes 3,200 (synthetic): 8 workers.
    # Then 6 (a quarter fewer): slower. 8 is the highest and the fastest, but it trains at the rate
    # the step takes with free inputs: no setting above it can do better, so none is measured.
    # 8 is four times as fast as the script's own 2: a second run of each could not change that
    assert settings(calls[2:]) == [8, 6]
    result = analyze(outcome.runs, search.Limits()).facts.sweep
    assert result is not None
    assert result.predicted_best == 8 and dict(result.predicted)[8] == pytest.approx(3200, rel=0.01)
    assert result.prediction_error == pytest.approx(0.0, abs=0.01)  # 6 and 8 measured as predicted
    assert result.recommended_workers == 8
    assert result.speedup == pytest.approx(4.0, rel=0.01)
    assert result.significant


@pytest.mark.parametrize("in_process", [False, True])
def test_each_step_of_a_sweep_computes_the_prediction_once(monkeypatch: pytest.MonkeyPatch, in_process: bool) -> None:
    from fastload_cli.analyzer.search import predict

    fake_pipeline(monkeypatch)
    runner = session.StepRunner(dataclasses.replace(BASE, max_batches=20), None, lambda spec: None)
    own = run_modes(runner, (ModeSpec(mode=Mode.REAL), ModeSpec(mode=Mode.SYNTHETIC)))
    predictions, steps = [], []
    made, asked = predict.from_runs, search.next_step

    def counted_prediction(*args: object, **kwargs: object) -> object:
        predictions.append(args)
        return made(*args, **kwargs)  # type: ignore[arg-type]

    def counted_step(state: search.State) -> search.Step | None:
        steps.append(state)
        return asked(state)

    monkeypatch.setattr(predict, "from_runs", counted_prediction)
    monkeypatch.setattr(search, "next_step", counted_step)
    run_sweep(runner, search.Limits(in_process=in_process), done=own)
    # one question per step, the last one answered "done"; each asked of a state that made one prediction
    assert len(steps) == (2 if in_process else 3)
    assert len(predictions) == len(steps)


def test_in_process_the_settings_known_in_advance_are_measured_in_one_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # free inputs take 9 ms a step (3,556 samples/s), the pipeline at most 10 ms (3,200): 9 workers
    # predicted, and 7 below them
    calls = fake_pipeline(monkeypatch, free_ms=9.0)
    runner = session.StepRunner(dataclasses.replace(BASE, max_batches=20), None, lambda spec: None)
    own = run_modes(runner, (ModeSpec(mode=Mode.REAL), ModeSpec(mode=Mode.SYNTHETIC)))
    outcome = run_sweep(runner, search.Limits(in_process=True), done=own)
    # 9 and 7 are known before either is measured: one run of the script measures both in turn;
    # 13 depends on what they measured (9 the fastest, short of the step's rate), so it runs after them
    assert settings(calls[2:]) == [(9, 7), 13]
    in_turn = calls[2]
    assert in_turn.child.turns == ((9, 18 + 27), (7, 14 + 21))
    assert in_turn.settle is setting_settled  # each setting hands over once its estimate is stable
    assert [r.label for r in outcome.runs[2:]] == ["workers=9", "workers=7", "workers=13"]
    result = analyze(outcome.runs, search.Limits()).facts.sweep
    assert result is not None and result.recommended_workers == 9
    assert result.prediction_error == pytest.approx(0.111, abs=0.01)  # 9 and 13 at 3,200, predicted 3,556


def test_a_pair_of_settings_at_epochs_is_one_run_of_exactly_its_epochs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_pipeline(monkeypatch, epoch=20)
    notes: list[str] = []
    runner = session.StepRunner(BASE, None, lambda spec: None, lambda spec, note: notes.append(note))
    pair = search.Step(
        specs=(ModeSpec(mode=Mode.WORKERS, workers=2), ModeSpec(mode=Mode.WORKERS, workers=0)),
        warmup=20,
        max_batches=40,
        turns=((2, 40), (0, 20)),
        fixed=True,
        at_epochs=True,
        note="an epoch of each",
    )
    outcome = runner.take(searched(pair, runner.base), Outcome())
    (config,) = calls
    assert config.child.turn_at_epochs and config.fixed_batches and config.settle is None
    assert config.requested_batches == 60 and notes == ["an epoch of each"]
    # each setting's run: one epoch after one of warm-up (the second's, the epoch before its turn)
    assert [(r.label, r.warmup_batches, r.requested_batches) for r in outcome.runs] == [
        ("workers=2", 20, 40),
        ("workers=0", 20, 40),
    ]


def test_without_the_scripts_own_setting_the_sweep_climbs(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_pipeline(monkeypatch, known=False)
    runner = session.StepRunner(dataclasses.replace(BASE, max_batches=20), None, lambda spec: None)
    outcome = run_sweep(runner, search.Limits())
    assert [c.spec.workers for c in calls] == [0, 1, 2, 4, 8, 16, 32, 6, 7]
    # each point's warm-up covers the start-up burst, and its window several rounds of batches
    assert (calls[2].warmup, calls[2].max_batches) == (5, 20)
    assert (calls[4].warmup, calls[4].max_batches) == (16, 24)  # 8 workers x 2 prefetched; x 3 rounds
    assert (calls[5].warmup, calls[5].max_batches) == (32, 48)
    result = analyze(outcome.runs, search.Limits()).facts.sweep
    assert result is not None and result.recommended_workers == 8 and result.predicted_best is None


def test_a_first_setting_whose_epochs_turn_out_too_short_is_measured_again_in_whole_epochs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = fake_pipeline(monkeypatch, known=False, epoch=20)
    notes: list[str] = []
    runner = session.StepRunner(
        dataclasses.replace(BASE, max_batches=20), None, lambda spec: None, lambda spec, note: notes.append(note)
    )
    run_sweep(runner, search.Limits(grid=(8, 1)))
    # 8 workers: before any run fastload does not know the loader: 16 batches of warm-up and 24
    # measured; the loader then shows epochs of 20 batches, too short for a steady window at 8
    # workers (a burst of 16 and as many drained): measured again, one epoch of warm-up and three
    # measured whole, with the next epoch's first batch (the third's end behind it); 1 worker has a
    # steady window inside an epoch, measured after the first epoch like the setting it is compared
    # with: one epoch of warm-up, then its window
    assert [(c.spec.workers, c.warmup, c.max_batches) for c in calls] == [(8, 16, 24), (8, 20, 61), (1, 20, 20)]
    assert any("whole epochs" in note for note in notes)
    # a loader with long epochs needs no second run
    calls = fake_pipeline(monkeypatch, known=False, epoch=200)
    run_sweep(runner, search.Limits(grid=(8, 1)))
    assert [c.spec.workers for c in calls] == [8, 1]


def test_settings_compared_with_one_measured_after_the_first_epoch_are_measured_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the script's own 8 workers and 10 both take 10 ms a batch (the step is the limit), the
    # first epoch's a quarter longer; epochs of 20 batches
    calls = fake_pipeline(monkeypatch, own_workers=8, epoch=20, first_epoch=1.25)
    notes: list[str] = []
    runner = session.StepRunner(
        dataclasses.replace(BASE, max_batches=20), None, lambda spec: None, lambda spec, note: notes.append(note)
    )
    own = run_modes(runner, (ModeSpec(mode=Mode.REAL),))  # inside the first epoch
    outcome = run_sweep(runner, search.Limits(grid=(10,)), done=own)
    # 10 workers have no steady window in 20 batches: whole epochs after one of warm-up. The
    # script's own 8, measured inside the first epoch, is measured again after it, once
    assert [(c.spec.workers, c.warmup) for c in calls[1:]] == [(10, 20), (8, 20)]
    assert any("again after the first epoch" in note for note in notes)
    result = analyze(outcome.runs, search.Limits()).facts.sweep
    assert result is not None
    assert {p.workers: p.after_first_epoch for p in result.points} == {8: True, 10: True}
    assert result.speedup == pytest.approx(1.0, rel=0.01)  # 1.25 against the first epoch's 12.5 ms
    assert not [c for c in result.caveats if "first epoch" in c]
    # the script's own 2 (40 ms, 50 in the first epoch) against 8 (10 ms): five times slower, which
    # the first epoch cannot explain; not measured again, and a caveat says so
    calls = fake_pipeline(monkeypatch, epoch=20, first_epoch=1.25)
    own = run_modes(runner, (ModeSpec(mode=Mode.REAL),))
    outcome = run_sweep(runner, search.Limits(grid=(8,)), done=own)
    assert [(c.spec.workers, c.warmup) for c in calls[1:]] == [(8, 20)]
    result = analyze(outcome.runs, search.Limits()).facts.sweep
    assert result is not None and [c for c in result.caveats if "first epoch" in c]
    # long epochs (2,000 batches, two minutes at the script's own 2 workers): every setting inside
    # the first epoch, none measured again
    calls = fake_pipeline(monkeypatch, epoch=2_000, first_epoch=1.5)
    own = run_modes(runner, (ModeSpec(mode=Mode.REAL),))
    run_sweep(runner, search.Limits(grid=(8,)), done=own)
    assert [(c.spec.workers, c.warmup) for c in calls[1:]] == [(8, 16)]


def test_diagnose_sweeps_only_when_loading_is_the_limit_and_cores_are_free(monkeypatch: pytest.MonkeyPatch) -> None:
    def real(system_busy: float, wait_ms: float = 35.0, loaders: float = 0.9) -> RunResult:
        samples = b.host_samples(2_000 * MS, worker_cores=(loaders, loaders), system_busy=system_busy)
        return b.run("real", b.batches([wait_ms] * 40, 5.0), samples=samples)

    synthetic = b.run("synthetic", b.batches([0.1] * 40, 5.0))
    assert diagnose.why_not_sweep(analyze([real(0.4), synthetic])) is None
    cpu_bound = analyze([real(0.97), synthetic])
    assert cpu_bound.verdict.bottleneck is Bottleneck.CPU
    assert diagnose.why_not_sweep(cpu_bound) == "the cores were 97% busy: more workers cannot help"
    assert diagnose.why_not_sweep(analyze([real(0.4, wait_ms=0.1), synthetic])) == diagnose.NOT_INPUT_BOUND
    # loaders asleep while the loop waits: latency, which more workers hide without cores of their own
    io_bound = analyze([real(0.97, loaders=0.1), synthetic])
    assert io_bound.verdict.bottleneck is Bottleneck.IO
    assert diagnose.why_not_sweep(io_bound) is None


def test_diagnose_sweeps_cheap_batches_on_busy_cores_but_not_restarting_workers() -> None:
    def analysis(f: Facts) -> Analysis:
        return Analysis(summaries=(), verdict=decide(f), recommendations=(), facts=f)

    base = Facts(
        real=b.summary(wait=0.3, busy=0.9, system=0.97),
        synthetic=b.summary("synthetic", throughput=300.0),
        loader=b.loader(),
        cpu_count=2,
    )
    assert diagnose.why_not_sweep(analysis(base)) is not None  # busy cores: more workers cannot help
    cheap = dataclasses.replace(base, loader=dataclasses.replace(b.loader(), dataset_type="TensorDataset"))
    assert diagnose.why_not_sweep(analysis(cheap)) is None  # fewer workers can
    # ... even where the wait and the ceiling read the step as the limit: the handoff is a cost the
    # comparison with free inputs barely resolves, and a workers=0 point measures it
    compute = dataclasses.replace(
        cheap, real=b.summary(wait=0.07, busy=0.05, system=0.97), synthetic=b.summary("synthetic", throughput=104.0)
    )
    assert decide(compute).bottleneck is Bottleneck.COMPUTE
    then = diagnose.after_modes(analysis(compute), may_sweep=True, breakdown_asked=False)
    assert then.sweep and then.min_workers == 0 and "Handing batches over" in then.why
    assert not then.guided  # the prediction does not model the handoff: the climb from 0 measures it
    plain = dataclasses.replace(compute, loader=b.loader())
    assert not diagnose.after_modes(analysis(plain), may_sweep=True, breakdown_asked=False).sweep
    restarting = dataclasses.replace(
        base, real=b.summary(wait=0.3, busy=0.1, system=0.5), epoch_startup_s=(40.0, 42.0), startup_busy=0.0
    )
    why = diagnose.why_not_sweep(analysis(restarting))
    assert why is not None and "start-up every epoch" in why


def test_diagnose_sweeps_workers_that_keep_up_but_take_the_steps_cores_however_busy_they_are() -> None:
    # workers asleep on a full queue, cores 97% busy, the step 1.7x slower beside them: fewer
    # workers, down to none, may train faster, and only a sweep can say
    competing = Facts(
        real=b.summary(wait=0.12, busy=0.15, system=0.97, compute_ms=17.0),
        synthetic=b.summary("synthetic", throughput=180.0, compute_ms=10.0),
        loader=b.loader(),
        cpu_count=2,
    )
    verdict = decide(competing)
    assert verdict.of(FindingKind.LOADERS_COMPETE)
    analysis = Analysis(summaries=(), verdict=verdict, recommendations=(), facts=competing)
    then = diagnose.after_modes(analysis, may_sweep=True, breakdown_asked=False)
    assert then.sweep and then.min_workers == 0 and "take the step's cores" in then.why and then.guided
    # augmentation named the cause (no-aug 1.4x faster): the workers still take the step's cores
    augmented = dataclasses.replace(competing, no_aug=b.summary("no-aug", throughput=140.0))
    verdict = decide(augmented)
    assert verdict.of(FindingKind.AUGMENTATION) and not verdict.of(FindingKind.LOADERS_COMPETE)
    analysis = Analysis(summaries=(), verdict=verdict, recommendations=(), facts=augmented)
    then = diagnose.after_modes(analysis, may_sweep=True, breakdown_asked=False)
    assert then.sweep and then.min_workers == 0 and "take the step's cores" in then.why
    # workers busy on a CPU most of the time: loading is the work, more of them cannot help on full cores
    busy = dataclasses.replace(augmented, real=b.summary(wait=0.12, busy=0.7, system=0.97, compute_ms=17.0))
    assert diagnose.why_not_sweep(Analysis(summaries=(), verdict=decide(busy), recommendations=(), facts=busy))


def test_diagnose_sweeps_workers_partly_busy_on_full_cores_while_the_loop_keeps_up() -> None:
    """timm's training on 2 cores: two workers on a CPU 37% of the time, every core busy, the loop
    waiting 4%. Loading is CPU work, and the workers still take the step's cores: plain runs train
    1.14x faster with 0 workers, which only a sweep can say."""

    def analysis(busy: float, wait: float) -> Analysis:
        found = Facts(
            real=b.summary(wait=wait, busy=busy, system=0.98, compute_ms=80.0),
            synthetic=b.summary("synthetic", throughput=196.0, compute_ms=45.0),
            loader=b.loader(),
            cpu_count=2,
        )
        return Analysis(summaries=(), verdict=decide(found), recommendations=(), facts=found)

    partly = analysis(0.37, 0.04)
    assert partly.facts.loaders_compete and diagnose.why_not_sweep(partly) is None
    then = diagnose.after_modes(partly, may_sweep=True, breakdown_asked=False)
    assert then.sweep and then.min_workers == 0 and "take the step's cores" in then.why
    # the loop waits a fifth of the time: those workers do not keep up; and workers busy most of
    # the time are the loading itself: on full cores, no sweep
    for behind in (analysis(0.37, 0.25), analysis(0.65, 0.04)):
        assert not behind.facts.loaders_compete
        assert diagnose.why_not_sweep(behind) == "the cores were 98% busy: more workers cannot help"


def test_diagnose_sweeps_loaders_asleep_with_nothing_to_show_why_and_reads_what_more_of_them_gain() -> None:
    """zoo/gpu_paced.py on 2 cores: two workers on a CPU 4% of the time, asleep on a storage round
    trip, the loop waiting 19% of the time (under the line where the wait alone shows latency) and
    free inputs 1.29x as fast. Nothing shows why the workers sleep, so the verdict cannot name the
    cause; more workers can (3 trained 1.26x as fast as 2 in plain runs)."""
    asleep = Facts(
        real=b.summary(throughput=320.0, wait=0.19, busy=0.04, system=0.2),
        synthetic=b.summary("synthetic", throughput=412.0),
        loader=b.loader(),
        cpu_count=2,
    )
    verdict = decide(asleep)
    assert verdict.bottleneck is Bottleneck.INCONCLUSIVE and verdict.of(FindingKind.LOADERS_IDLE)
    then = diagnose.after_modes(
        Analysis(summaries=(), verdict=verdict, recommendations=(), facts=asleep), may_sweep=True, breakdown_asked=False
    )
    assert then.sweep and then.min_workers == 2 and "nothing shows why" in then.why
    # the sweep measured 3 workers 1.24x as fast: they wait on latency
    faster = b.sweep_result(best_workers=3, recommended_workers=3, speedup=1.24, significant=True)
    swept = decide(dataclasses.replace(asleep, sweep=faster))
    assert swept.bottleneck is Bottleneck.IO
    assert "num_workers=3 trained 1.24x as fast as 2" in swept.of(FindingKind.LOADERS_IDLE)[0].sentence
    # none faster: the loaders kept up, and the cause stays unknown
    same = b.sweep_result(best_workers=3, recommended_workers=2, speedup=1.0)
    assert decide(dataclasses.replace(asleep, sweep=same)).bottleneck is Bottleneck.INCONCLUSIVE


def test_diagnose_sweeps_io_bound_loading_from_the_scripts_own_setting_up(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_pipeline(monkeypatch)
    measured = session.run_mode

    def sleeping_workers(config, nvml, observer):  # loading sleeps: the workers idle, the wait is latency
        run = measured(config, nvml, observer)
        workers = run.loaders[0].num_workers
        samples = b.host_samples(run.ended_ns, worker_cores=(0.05,) * workers, system_busy=0.3)
        return dataclasses.replace(run, host_samples=samples)

    monkeypatch.setattr(session, "run_mode", sleeping_workers)
    plan = Diagnose(modes=DIAGNOSE_MODES, max_workers=32)
    runner = session.StepRunner(dataclasses.replace(BASE, max_batches=20), None, lambda spec: None)
    outcome = session.execute(plan, runner)
    swept = [c.spec.workers for c in calls if c.spec.mode is Mode.WORKERS]
    analysis = analyze(outcome.runs, outcome.limits)
    assert analysis.verdict.bottleneck is Bottleneck.IO
    assert swept and min(swept) >= 2  # fewer workers than the script's 2 would hide less latency
    limits = outcome.limits
    assert limits is not None and limits.min_workers == 2


def follow_up(
    runner: session.StepRunner, done: Outcome, *, cached: bool, left_s: float, breakdown: bool = False
) -> Outcome:
    """diagnose's follow-ups after the runs ``done``, with ``left_s`` of their time budget left
    (``breakdown``: ``--breakdown`` given)."""
    decided = Step(part=Part.AFTER_MODES, cached=cached)
    plan = Diagnose(modes=(), max_workers=None, breakdown=breakdown, follow_ups=True)
    started = time.monotonic() - (DEFAULT_FOLLOW_UP_BUDGET_S - left_s)
    return session.execute(plan, runner, dataclasses.replace(done, taken=(*done.taken, decided)), started=started)


def test_follow_up_runs_start_only_within_the_time_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # an io-bound script whose epochs restart their workers: persistent-workers is worth a run
    calls = fake(monkeypatch, [quiet_run("cached"), quiet_run("fix:persistent-workers")])
    runner = session.StepRunner(BASE, None, lambda spec: None)
    done = Outcome().adding(Measured(quiet_run("real"), summarize(quiet_run("real"))))
    monkeypatch.setattr(follow_ups, "verifications", lambda analysis, runs: (fix_spec("persistent-workers"),))
    late = follow_up(runner, done, cached=True, left_s=-1)
    assert calls == [] and late.unverified == ("cached", "persistent-workers")
    # a deadline a run fits in: both run, nothing is left unverified
    ample = follow_up(runner, done, cached=True, left_s=3600)
    assert calls == ["cached", "fix:persistent-workers"] and ample.unverified == ()


def test_where_no_aug_replaced_something_the_cached_run_is_followed_by_the_split_run_where_breakdown_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = session.StepRunner(BASE, None, lambda spec: None)
    monkeypatch.setattr(follow_ups, "verifications", lambda analysis, runs: ())
    done = Outcome()
    for mode in ("real", "no-aug"):  # the builders' no-aug run replaced a ColorJitter
        done = done.adding(Measured(quiet_run(mode, augmented=True), summarize(quiet_run(mode, augmented=True))))
    # by default the verdict and the advice are done: no-aug's and cached's runs give where a
    # batch's time goes, and the note says what --breakdown would add
    said: list[str] = []
    calls = fake(monkeypatch, [quiet_run("cached"), quiet_run("split")])
    unasked = follow_up(dataclasses.replace(runner, on_note=lambda spec, note: said.append(note)), done, cached=True,
                        left_s=3600)  # fmt: skip
    assert calls == ["cached"] and unasked.split_run is None and said[-1] == follow_ups.SPLIT_NOT_ASKED
    calls = fake(monkeypatch, [quiet_run("cached"), quiet_run("split")])
    configs: list = []
    measured = session.run_mode
    monkeypatch.setattr(session, "run_mode", lambda config, *rest: configs.append(config) or measured(config, *rest))
    after = follow_up(runner, done, cached=True, left_s=3600, breakdown=True)
    assert calls == ["cached", "split"]
    # the split run is kept apart from the modes' runs, sized by the loader: two workers, two batches
    # prefetched each, so 6 batches a turn may be left over from the turn before, then 16 measured
    assert [r.label for r in after.runs] == ["real", "no-aug", "cached"] and after.split_run is not None
    split = configs[-1]
    assert split.child.phase_batches == 22 and split.max_batches == 22 * 4 * 2 and split.fixed_batches
    assert split.settle is None  # no-aug measured on its own: the split run takes both its rounds
    # a deadline the cached run fits in (0.81 s, as the median run) but the split run does not:
    # 4 x 44 batches at 40 ms and 0.17 s of start-up, 7.2 s. It is named as not measured.
    notes: list[str] = []
    calls = fake(monkeypatch, [quiet_run("cached"), quiet_run("split")])
    short = follow_up(
        dataclasses.replace(runner, on_note=lambda spec, note: notes.append(note)),
        done,
        cached=True,
        left_s=4.0,
        breakdown=True,
    )
    assert calls == ["cached"] and short.split_run is None
    assert notes[-1] == "Not measured within diagnose's time budget: split."
    # without a no-aug run that replaced something, the split has nothing to take turns with
    only_real = Outcome().adding(Measured(quiet_run("real"), summarize(quiet_run("real"))))
    fake(monkeypatch, [quiet_run("cached")])
    alone = follow_up(runner, only_real, cached=True, left_s=3600)
    assert [r.label for r in alone.runs] == ["real", "cached"] and alone.split_run is None


def test_modes_asking_for_cached_and_no_aug_ask_for_the_split() -> None:
    asked = tuple(ModeSpec.parse(m) for m in ("real", "no-aug", "cached"))
    assert diagnose.wants_split(asked)
    assert not diagnose.wants_split(asked[:2])
    assert not diagnose.wants_split((asked[0], asked[2]))


def test_a_recommendation_left_unverified_says_so_and_how_to_measure_it() -> None:
    rec = Recommendation(
        id="persistent-workers", title="Keep workers", detail="d", expected_speedup=1.5, measured=False
    )
    other = dataclasses.replace(rec, id="reduce-augmentation-cost")
    marked = trials.not_verified((rec, other), ("persistent-workers",), b.loader())
    assert "Not verified" in marked[0].detail and "--fix persistent-workers" in marked[0].detail
    assert marked[1] == other
    assert trials.not_verified((rec,), (), b.loader()) == (rec,)


def test_a_transfer_verdict_verifies_pinned_memory_first_with_the_extra_time_a_pathology_gets() -> None:
    """Pinning is the first advice for copies to the GPU, and workers' batches must still be copied
    into pinned memory: whether it helps this script is measured, not left to the budget."""
    from fastload_cli.config import PATHOLOGY_FOLLOW_UP_EXTRA_S
    from fastload_cli.records import BatchInfo

    batch = BatchInfo(
        python_type="list", samples=64, bytes_per_batch=201_326_592, bytes_per_sample=3e6, pinned=False, leaves=()
    )
    f = Facts(
        real=b.summary(wait=0.03, compute_ms=70.0),
        synthetic=b.summary("synthetic", throughput=250.0, wait=0.01, compute_ms=27.0),
        device_replay=b.summary("synthetic-device", throughput=9000.0, wait=0.01, compute_ms=0.8),
        loader=b.loader(pin=False),
        cpu_count=16,
        cuda_in_use=True,
        batch=batch,
    )
    verdict = decide(f)
    assert verdict.bottleneck is Bottleneck.TRANSFER
    analysis = Analysis(summaries=(), verdict=verdict, recommendations=b.recommended(f, verdict), facts=f)
    real = b.run("real", b.batches([10] * 20, 5))
    real = dataclasses.replace(real, env=dataclasses.replace(real.env, cuda_available=True, cuda_in_use=True))
    runs = follow_ups.follow_ups(analysis, [real], cached=False)
    assert runs[0] == FollowUp(spec=ModeSpec(mode=Mode.FIX, fixes=("pin-memory",)), extra_s=PATHOLOGY_FOLLOW_UP_EXTRA_S)


def test_diagnose_measures_real_and_synthetic_again_when_the_ceiling_is_near_the_compute_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def pair(synthetic_ms: float) -> list[RunResult]:
        return [
            b.run("real", b.batches([0.2] * 40, 10.0), warmup=5),
            b.run("synthetic", b.batches([0.1] * 40, synthetic_ms), warmup=5),
        ]

    calls = fake(monkeypatch, [*pair(9.0), *pair(6.0)])
    notes: list[str] = []
    runner = session.StepRunner(BASE, None, lambda spec: None, lambda spec, m: notes.append(m))
    outcome = session.execute(Diagnose(DIAGNOSE_MODES, None), runner)
    assert calls == ["real+synthetic", "real+synthetic"]  # each pair in one run of the script
    assert [r.spec.label for r in outcome.runs] == ["real", "synthetic", "real", "synthetic"]
    assert any("measuring real and synthetic again" in n for n in notes)
    assert analyze(outcome.runs).facts.ceiling == pytest.approx(20.4 / 15.2, abs=0.03)  # both pairs, pooled
    calls = fake(monkeypatch, pair(5.0))  # 2x: far from the line, measured once
    session.execute(Diagnose(DIAGNOSE_MODES, None), runner)
    assert calls == ["real+synthetic"]
