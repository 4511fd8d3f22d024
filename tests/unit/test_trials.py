"""``fastload try``: which fixes apply, what a fix run measured against the real one, the code
change, and the cached mode's split of a batch's time. Hand-built runs, hand-computed numbers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fastload_cli.analyzer import trials
from fastload_cli.analyzer.metrics import summarize, training_throughput
from fastload_cli.config import RunConfig, parse_fixes
from fastload_cli.errors import UsageError
from fastload_cli.plan.outcome import Outcome
from fastload_cli.plan.runs import holding_an_epoch_start
from fastload_cli.plan.state import State
from fastload_cli.plan.step import Part, Step
from fastload_cli.plan.try_fixes import TryFixes, fix_runs
from fastload_cli.records import (
    UNCHANGED,
    Bottleneck,
    ChildSpec,
    Fix,
    FixSpec,
    Mode,
    ModeSpec,
    RunStatus,
    Substitution,
    Verdict,
)
from tests.unit import builders as b

F = FixSpec.parse


def refused(
    fix: str, *, workers: int = 2, cuda: bool = False, others: tuple[str, ...] = (), **loader: object
) -> str | None:
    info = dataclasses.replace(b.loader(num_workers=workers), **loader)
    asked = tuple(F(x) for x in (fix, *others))
    return trials.refusal(asked, asked[0], info, cuda)


def test_a_fix_that_cannot_apply_to_the_loader_is_refused_with_the_reason() -> None:
    assert refused("persistent-workers", workers=0) == "num_workers=0: there are no workers to keep alive"
    assert refused("persistent-workers", persistent_workers=True) == "persistent_workers is already True"
    assert refused("persistent-workers", workers=0, others=("workers=2",)) is None  # workers=2 comes with it
    assert refused("prefetch-factor=4", workers=0) == "num_workers=0: prefetch_factor only applies to worker processes"
    assert refused("prefetch-factor=2") == "prefetch_factor is already 2"
    assert refused("workers=2") == "num_workers is already 2"
    assert refused("pin-memory") == trials.NO_CUDA and refused("cuda-prefetch") == trials.NO_CUDA
    assert refused("pin-memory", cuda=True, pin_memory=True) == "pin_memory is already True"
    assert refused("pin-memory", cuda=True) is None and refused("cuda-prefetch", cuda=True) is None
    assert refused("cache-decoded", iterable_dataset=True) is not None
    assert refused("thread-prefetch", workers=0) is None and refused("cache-decoded") is None


def test_fixes_parse_with_their_values_and_unknown_ones_list_the_known() -> None:
    assert F("prefetch-factor=4") == FixSpec(Fix.PREFETCH_FACTOR, 4) and F("workers=0").value == 0
    for bad, message in (
        ("prefetch-factor=0", "N >= 1"),
        ("workers", "N >= 0"),
        ("pin-memory=1", "takes no value"),
        ("faster", "known: persistent-workers, prefetch-factor=N"),
    ):
        with pytest.raises(ValueError, match=message):
            F(bad)
    with pytest.raises(UsageError, match="each fix may be given once"):
        parse_fixes(["prefetch-factor=2", "prefetch-factor=4"])
    with pytest.raises(UsageError, match="at least one --fix"):
        parse_fixes([])
    spec = ModeSpec(mode=Mode.FIX, fixes=("persistent-workers", "prefetch-factor=4"))
    assert spec.label == "fix:persistent-workers+prefetch-factor=4"
    child = ChildSpec(mode=spec, cache_batches=55, cache_bytes=1 << 30)
    assert ChildSpec.from_json(child.to_json()) == child


def test_each_fix_that_applies_runs_alone_then_all_together() -> None:
    real = b.run("real", b.batches([5.0] * 20, 10.0))
    asked = (F("persistent-workers"), F("pin-memory"), F("thread-prefetch"))
    planned = fix_runs(asked, [real])
    assert [s.label for s in planned.specs] == [
        "fix:persistent-workers",
        "fix:thread-prefetch",
        "fix:persistent-workers+thread-prefetch",
    ]
    assert planned.notes == (f"--fix pin-memory: not measured, {trials.NO_CUDA}.",)
    assert [s.label for s in fix_runs(asked[1:2], [real]).specs] == []


def measured(label: str, step_ms: float, epochs: int = 2, **changes: object) -> tuple:
    """A run of ``epochs`` epochs of 15 batches, each step ``step_ms``."""
    found: list = []
    for epoch in range(1, epochs + 1):
        found += b.batches([0.0] * 15, step_ms, iterator_id=epoch, start_ns=found[-1].wait_end_ns if found else 0)
    run = dataclasses.replace(b.run(label, found), **changes)
    return run, summarize(run)


def test_a_fix_run_is_judged_against_the_real_run_and_its_noise() -> None:
    real, real_summary = measured("real", 20.0)
    faster, same, slower = (
        measured("fix:thread-prefetch", 10.0),
        measured("fix:workers=4", 19.6),
        measured("fix:persistent-workers", 25.0),
    )
    broken = measured("fix:prefetch-factor=4", 20.0, substitutions=(
        Substitution(loader_id=1, location="DataLoader(prefetch_factor=...)", original="num_workers=0: no workers",
                     replacement=UNCHANGED),
    ))  # fmt: skip
    failed = measured("fix:cache-decoded", 20.0, status=RunStatus.FAILED, batches=())
    runs = [real, *(r for r, _ in (faster, same, slower, broken, failed))]
    summaries = [real_summary, *(s for _, s in (faster, same, slower, broken, failed))]
    asked = tuple(F(x) for x in ("thread-prefetch", "workers=4", "persistent-workers", "prefetch-factor=4"))
    found = {f.name: f for f in trials.results(asked, runs, summaries)}
    assert found["thread-prefetch"].speedup == pytest.approx(2.0, rel=0.02) and found["thread-prefetch"].measured
    assert found["thread-prefetch"].reason.startswith("measured 2.0")
    assert found["workers=4"].reason.startswith("no measurable gain: 1.02x is within the runs' noise (±5%)")
    assert found["persistent-workers"].reason.startswith("slower: 0.80x")
    assert not found["prefetch-factor=4"].applies and found["prefetch-factor=4"].reason == "num_workers=0: no workers"
    assert not found["cache-decoded"].measured and found["cache-decoded"].applies
    assert (
        found["thread-prefetch"].code
        == "from fastload_cli.fixes import ThreadPrefetcher\nloader = ThreadPrefetcher(loader)"
    )


def test_keeping_the_workers_is_measured_only_where_both_windows_hold_an_epochs_start() -> None:
    # what persistent workers save is an epoch's start: a window inside one epoch sees none of it
    asked = (F("persistent-workers"), F("thread-prefetch"))
    for real_epochs, fix_epochs in ((1, 1), (1, 2), (2, 1)):
        real, real_summary = measured("real", 20.0, epochs=real_epochs)
        kept, kept_summary = measured("fix:persistent-workers", 16.0, epochs=fix_epochs)
        other, other_summary = measured("fix:thread-prefetch", 16.0, epochs=fix_epochs)
        runs, summaries = [real, kept, other], [real_summary, kept_summary, other_summary]
        found = {f.name: f for f in trials.results(asked, runs, summaries)}
        assert not found["persistent-workers"].measured and found["persistent-workers"].applies
        assert (
            found["persistent-workers"].speedup is None and found["persistent-workers"].reason == trials.NO_EPOCH_START
        )
        assert found["thread-prefetch"].measured, (real_epochs, fix_epochs)  # a steady gain shows in any window
    real, real_summary = measured("real", 20.0)
    kept, kept_summary = measured("fix:persistent-workers", 16.0)
    [found] = trials.results(asked[:1], [real, kept], [real_summary, kept_summary])
    assert found.measured and found.speedup == pytest.approx(1.25, rel=0.02)


def test_diagnose_verifies_keeping_the_workers_only_where_the_real_runs_window_held_an_epochs_start() -> None:
    verdict = Verdict(bottleneck=Bottleneck.IO, label="", confidence=0.9, speedup_ceiling=1.5, evidence=(), caveats=())
    one, two = measured("real", 20.0, epochs=1)[0], measured("real", 20.0)[0]
    assert trials.to_verify(verdict, ["persistent-workers"], b.loader(), False, [one]) == ()
    assert trials.to_verify(verdict, ["persistent-workers"], b.loader(), False, [two]) == (F("persistent-workers"),)


def test_the_code_change_puts_every_loader_setting_in_one_line_where_the_framework_takes_it() -> None:
    fixes = (F("persistent-workers"), F("prefetch-factor=4"), F("cache-decoded"))
    change = trials.code(fixes, b.loader())
    assert change.splitlines()[0] == "DataLoader(dataset, ..., persistent_workers=True, prefetch_factor=4)"
    assert "dataset = DecodedCache(dataset, max_bytes=...)" in change
    hf = dataclasses.replace(b.loader(), framework="transformers")
    assert trials.code(fixes[:1], hf) == "TrainingArguments(..., dataloader_persistent_workers=True)"


def test_training_throughput_counts_every_epochs_start_up_after_warm_up() -> None:
    first = b.batches([0.0] * 10, 10.0, iterator_id=1)  # 9 steps of 10 ms
    second = b.batches([500.0] + [0.0] * 9, 10.0, iterator_id=2, start_ns=first[-1].wait_end_ns)  # a 500 ms start-up
    run = b.run("real", first + second, warmup=2)
    # after the warm-up batch at 10 ms: 18 batches of 32 samples until 90 + 500 + 90 ms
    assert training_throughput(run) == pytest.approx(18 * 32 / 0.670, rel=1e-3)
    assert summarize(run).throughput_samples_per_s > training_throughput(run)  # the steady window leaves it out


def test_a_run_that_measures_keeping_the_workers_is_not_over_before_its_window_holds_an_epochs_start() -> None:
    stable = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", max_batches=50, settle=lambda run: True)
    step = holding_an_epoch_start(Step(part=Part.FIXES, config=stable))
    assert step.config is not None and step.config.settle is not None
    assert not step.config.settle(measured("fix:persistent-workers", 16.0, epochs=1)[0])  # stable, but blind to it
    assert step.config.settle(measured("fix:persistent-workers", 16.0, epochs=2)[0])
    # try's real run too, where the fix is asked for; not where only others are
    state = State(outcome=Outcome(), base=stable)
    one_epoch = measured("real", 16.0, epochs=1, warmup_batches=2)[0]
    kept, other = (TryFixes((F(fix),))._real(state) for fix in ("persistent-workers", "thread-prefetch"))
    assert kept is not None and kept.config is not None and kept.config.settle is not None
    assert other is not None and other.config is not None and other.config.settle is not None
    assert other.config.settle(one_epoch) and not kept.config.settle(one_epoch)
