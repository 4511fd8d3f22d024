"""Every section of the terminal report against its golden file (fixed width, no colour), from one
report that has all of them, assembled the way a command assembles it.

Regenerate with FASTLOAD_UPDATE_GOLDEN=1 after an intended change, and review the diff.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console, Group

from fastload_cli.analyzer import search
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.config import RunConfig
from fastload_cli.plan import Outcome
from fastload_cli.plan.report import build_report
from fastload_cli.records import (
    BatchLayout,
    Breakdown,
    BreakdownStep,
    Command,
    Environment,
    FixSpec,
    Measured,
    Pathology,
    PathologyKind,
    Profile,
    ProfileEntry,
    Recommendation,
    Report,
    RunResult,
    Substitution,
    TensorLeaf,
)
from fastload_cli.reporters import FORMATS, json_report, terminal
from tests.unit import builders as b

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "sections"
ENV = Environment(python="3.11.7", torch="2.14.1", cuda_available=False, gpus=(), cpu_count=2, nvml="unavailable: test")
LAYOUT = BatchLayout(
    loader_id=1,
    python_type="list",
    leaves=(
        TensorLeaf(
            path="[0]", dtype="float32", shape=(32, 3, 64, 64), nbytes=32 * 3 * 64 * 64 * 4, pinned=False, device="cpu"
        ),
        TensorLeaf(path="[1]", dtype="int64", shape=(32,), nbytes=256, pinned=False, device="cpu"),
    ),
)
BREAKDOWN = Breakdown(
    loader_id=1,
    items=64,
    threads=1,
    ms_per_sample=4.0,
    steps=(
        BreakdownStep(name="RandomResizedCrop(size=(64, 64))", location="dataset.transform.transforms[0]",
                      kind="transform", ms_per_sample=2.0, share=0.5, input_kind="image", input_shape=(500, 375)),
        BreakdownStep(name="read and decode (rest of __getitem__)", location="dataset.__getitem__",
                      kind="getitem", ms_per_sample=1.5, share=0.375),
        BreakdownStep(name="collate", location="loader.collate_fn", kind="collate", ms_per_sample=0.5, share=0.125),
    ),
)  # fmt: skip
PROFILE = Profile(
    role="workers",
    pids=(201, 202),
    samples=120,
    top=(
        ProfileEntry(function="resized_crop (torchvision/transforms/functional.py:600)", share=0.42),
        ProfileEntry(function="decode (PIL/ImageFile.py:250)", share=0.31),
    ),
)


def setting(workers: int, step_ms: float) -> RunResult:
    """A num_workers setting whose steps take ``step_ms``, the loop waiting for all but 10 ms."""
    batch_list = b.batches([100] + [step_ms - 10] * 29, 10)
    loader = dataclasses.replace(b.loader(num_workers=workers), original_num_workers=2)
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(0.9,) * workers, system_busy=0.6)
    return b.run(f"workers={workers}", batch_list, loaders=[loader], samples=samples)


def full_report() -> Report:
    real_batches = b.batches([100] + [30] * 29, 10)
    samples = b.host_samples(real_batches[-1].wait_end_ns, main_cores=0.4, worker_cores=(0.9, 0.9), system_busy=0.6)
    aug = b.loader(augmentations=("RandomResizedCrop(size=(64, 64))",))
    real = dataclasses.replace(
        b.run("real", real_batches, loaders=[aug], samples=samples), layouts=(LAYOUT,), profile=PROFILE
    )
    synthetic = b.run("synthetic", b.batches([100] + [1] * 29, 10))
    swap = Substitution(
        loader_id=1,
        location="dataset.transform.transforms[0]",
        original="RandomResizedCrop(size=(64, 64))",
        replacement="CenterCrop(size=(64, 64))",
    )
    no_aug = dataclasses.replace(
        b.run("no-aug", b.batches([100] + [14] * 29, 10), loaders=[aug]), substitutions=(swap,)
    )
    cached = b.run("cached", b.batches([100] + [22] * 29, 10), loaders=[aug])
    bare = b.run("cached-no-aug", b.batches([100] + [12] * 29, 10), loaders=[aug])
    fixes = (b.run("fix:thread-prefetch", b.batches([100] + [26] * 29, 10)),)
    runs = (real, synthetic, no_aug, cached, bare, setting(0, 60.0), setting(4, 20.0), setting(8, 20.0), *fixes)
    measured = tuple(Measured(run, summarize(run)) for run in runs)
    asked = (FixSpec.parse("thread-prefetch"), FixSpec.parse("pin-memory"))
    outcome = Outcome(measured=measured, breakdown=BREAKDOWN, limits=search.Limits(refine=0), fixes=asked)
    base = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", script_args=("--epochs", "1"))
    return dataclasses.replace(build_report(Command.SYNTHETIC_COMPARE, base, outcome, ENV), pathologies=(PATHOLOGY,))


PATHOLOGY = Pathology(
    kind=PathologyKind.SLOW_SAMPLES,
    title="Slow samples stall the batches behind them",
    finding="3 of 27 batches (11%) stalled the loop 400 ms on average, 95% of all its waiting.",
    advice="Let ready batches overtake a slow one: DataLoader(..., in_order=False).",
    recommendation="deliver-out-of-order",
    fix="in-order",
    values={"stalls": 3, "batches": 27},
)


def text(*parts: object) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None, force_terminal=False, record=True)
    console.print(Group(*parts))  # type: ignore[arg-type]
    return console.export_text()


@pytest.mark.parametrize("name", list(terminal.SECTIONS))
def test_each_section_matches_its_golden_file(name: str) -> None:
    parts = terminal.SECTIONS[name](full_report())
    assert parts, f"the sample report has nothing for the {name} section"
    found = text(*parts)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("FASTLOAD_UPDATE_GOLDEN") == "1":
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(found)
    assert found == golden.read_text()


def test_the_report_carries_a_timeline_per_run_the_json_leaves_out_unless_asked() -> None:
    report = full_report()
    assert [t.mode for t in report.timelines] == [r.mode for r in report.runs]
    for timeline, run in zip(report.timelines, report.runs, strict=True):
        assert timeline.batches and all(x.wait_start_ns <= x.wait_end_ns for x in timeline.batches)
        assert len(timeline.batches) >= run.batches  # every batch, warm-up included
    assert "timelines" not in json.loads(FORMATS["json"].render(report))
    with_timelines = json.loads(json_report.document(report, timelines=True))
    assert len(with_timelines["timelines"]) == len(report.runs)


def test_every_registered_format_renders_the_report() -> None:
    report = full_report()
    for name, fmt in FORMATS.items():
        assert fmt.render(report).strip(), name
    assert FORMATS["text"].render(report).startswith("╭─ fastload synthetic-compare train.py")


def test_the_json_carries_the_findings_beside_the_evidence_with_their_values_rounded() -> None:
    doc = json.loads(FORMATS["json"].render(full_report()))
    verdict = doc["verdict"]
    assert [f["sentence"] for f in verdict["findings"]] == verdict["evidence"]
    ceiling = next(f for f in verdict["findings"] if f["kind"] == "ceiling")["values"]["speedup_ceiling"]
    assert ceiling == 3.6364  # 2,909 / 800 samples/s, rounded to the JSON's 4 digits


def test_a_sweep_measured_after_the_first_epoch_says_so() -> None:
    report = full_report()
    assert report.sweep is not None
    assert "after the script's first epoch" not in text(*terminal.SECTIONS["sweep"](report))
    points = tuple(dataclasses.replace(p, after_first_epoch=True) for p in report.sweep.points)
    later = dataclasses.replace(report, sweep=dataclasses.replace(report.sweep, points=points))
    assert "Every setting was measured after the script's first epoch" in text(*terminal.SECTIONS["sweep"](later))


@pytest.mark.parametrize("timelines", [False, True])
def test_a_report_read_back_from_its_json_writes_the_same_json(timelines: bool) -> None:
    from fastload_cli.records.schema import check_report

    document = json.loads(json_report.document(full_report(), timelines=timelines))
    check_report(document)  # a sweep's prediction included: pairs of a whole number and a rate
    back = Report.from_json(document)
    assert back.runs[0].spec == full_report().runs[0].spec
    assert json.loads(json_report.document(back, timelines=timelines)) == document


def test_the_sweep_reads_whole_on_an_80_column_terminal() -> None:
    from rich.console import Console, Group

    from fastload_cli.reporters.sweep_table import sweep_lines

    report = full_report()
    assert report.sweep is not None
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    console.print(Group(*sweep_lines(report.sweep, report.runs)))
    text = console.export_text()
    assert "…" not in text
    for header in ("samples/s", "predicted", "vs own", "data wait", "CPU main/workers", "RSS", "start-up", "step p90"):
        assert header in text


def test_a_fix_reports_patch_is_read_back_from_its_json() -> None:
    from fastload_cli.records import NotWritten, PatchResult, ProvenChange
    from fastload_cli.records.schema import check_report

    kept = ProvenChange(name="persistent-workers", gain=1.5, low=1.4, high=1.6, rounds=3, wins=True, kept=True)
    failed = ProvenChange(
        name="one-thread-per-worker", gain=None, low=None, high=None, rounds=0, wins=False, kept=False,
        failed="ImportError: no module named fastload_cli",
    )  # fmt: skip
    patch = PatchResult(
        changes=(kept, failed),
        not_written=(NotWritten(name="faster-storage", reason="storage is where the data lives"),),
        diff="--- a/train.py\n+++ b/train.py\n",
        rounds=3,
        epochs=3,
        epoch_batches=50,
    )
    document = json.loads(json_report.document(dataclasses.replace(full_report(), patch=patch)))
    check_report(document)
    assert document["patch"]["changes"][0] == {
        "name": "persistent-workers", "gain": 1.5, "low": 1.4, "high": 1.6, "rounds": 3, "wins": True,
        "kept": True, "failed": None,
    }  # fmt: skip
    assert Report.from_json(document).patch == patch


def test_a_pathology_whose_fix_is_recommended_points_to_it_instead_of_saying_it_again() -> None:
    report = full_report()
    applying = Recommendation(
        id="deliver-out-of-order",
        title="Let ready batches overtake slow ones: DataLoader(in_order=False)",
        detail=f"{PATHOLOGY.advice}\nVerified by a run with in-order applied: measured 2.31x the real run's pace.",
        expected_speedup=1.9,
        measured=True,
        evidence=(PATHOLOGY.finding,),
    )
    listed = dataclasses.replace(report, recommendations=(*report.recommendations, applying))
    shown = text(*terminal.SECTIONS["pathologies"](listed), *terminal.SECTIONS["recommendations"](listed))
    number = len(listed.recommendations)
    assert f"What to change: recommendation {number}." in shown
    flat = " ".join(shown.split())
    assert flat.count("in_order=False).") == 1 and flat.count("stalled the loop") == 1
    # without it listed, the pathology says its advice itself
    alone = " ".join(text(*terminal.SECTIONS["pathologies"](report)).split())
    assert PATHOLOGY.advice in alone and "What to change" not in alone
