"""scripts/gpu_validation.py, which checks fastload on a GPU machine, cannot rot where there is none:
its dry run checks every command it would run, and its runner stops what overruns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import gpu_validation as validation


def test_the_dry_run_checks_every_command_it_would_run(tmp_path) -> None:
    done = subprocess.run(
        [sys.executable, "scripts/gpu_validation.py", "--dry-run", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    steps = json.loads((tmp_path / "summary.json").read_text())["steps"]
    examples = {f"example-{p.stem}" for p in (ROOT / "fastload_cli" / "examples").glob("[!_]*.py")}
    zoo = {f"zoo-{case}" for case in validation.GPU_CASES.split(",")}
    first = {s["step"] for s in steps if s["call"] == 1}
    assert first == {"gpu-tests", *zoo, "truth", "reference-cuda"}
    assert {s["step"] for s in steps if s["call"] == 2} == {"transfer-fixes", "prefetchers", *examples}
    assert all(s["status"] == "checked" for s in steps), steps
    summary = (tmp_path / "summary.md").read_text()
    assert "# fastload GPU validation (dry run" in summary and "| call 1 | 460 s of steps in 465 s |" in summary


def test_each_call_fits_the_machine_and_every_step_has_a_limit(tmp_path) -> None:
    steps = validation.plan(tmp_path)
    assert validation.over_budget(steps) == []
    # the device allows a command 10 minutes: the first call at most 8, the second at most 4
    assert validation.CALL_BUDGET_S[1] <= 8 * 60 and validation.CALL_BUDGET_S[2] <= 4 * 60
    assert all(0 < s.timeout_s <= validation.CALL_BUDGET_S[s.call] for s in steps)
    # the most telling first: the GPU tests, then each zoo case once
    assert [s.name for s in steps[:2]] == ["gpu-tests", "zoo-gpu-transfer"]
    # three diagnoses of each zoo case do not fit one call: the dry run says so
    problems = validation.over_budget(validation.plan(tmp_path, zoo_repeats=3))
    assert problems and problems[0].startswith("call 1: its steps' limits add up to")


# A call of two steps that the machine's limit cuts while the second runs: the first writes its
# result and passes; the second never ends.
CUT_CALL = """
import sys, time
from pathlib import Path
sys.path.insert(0, {scripts!r})
import gpu_validation as validation
out = Path({out!r})
steps = [
    validation.Step("first", (sys.executable, "-c", "open({result!r}, 'w').write('measured')"), 30),
    validation.Step("second", (sys.executable, "-c", "import time; time.sleep(120)"), 120),
]
validation.run_steps(steps, out, time.monotonic() + 300, {{"commit": "test"}}, dry=False)
"""


def test_a_call_cut_short_keeps_every_finished_steps_results(tmp_path) -> None:
    result = tmp_path / "first-result.txt"
    code = CUT_CALL.format(scripts=str(ROOT / "scripts"), out=str(tmp_path), result=str(result))
    call = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "second.log").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "second.log").exists(), "the second step never started"
    finally:
        os.killpg(call.pid, signal.SIGTERM)  # as `timeout` ends a command past its limit
        call.wait(timeout=30)
    assert call.returncode == 128 + signal.SIGTERM
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [(s["step"], s["status"]) for s in summary["steps"]] == [("first", "passed")]
    assert summary["steps"][0]["wall_s"] is not None and result.read_text() == "measured"
    assert "| 1 | first | passed |" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (validation.fastload("try", "scripts/zoo/gpu_transfer.py", "--fixes", "pin-memory"), "--fixes"),
        (validation.fastload("diagnose", "scripts/zoo/gpu_transfer.py", "--max-batches", "many"), "'--max-batches'"),
        (validation.fastload("diagnoze", "scripts/zoo/gpu_transfer.py"), "no command 'diagnoze'"),
        (validation.fastload("diagnose", "scripts/zoo/gone.py"), "missing files: scripts/zoo/gone.py"),
        ((sys.executable, "scripts/bench_accuracy.py", "--cases", "gpu-transfr"), "unknown case(s): gpu-transfr"),
        ((sys.executable, "scripts/bench_prefetch.py", "--rounds", "x"), "invalid int value"),
        ((sys.executable, "-m", "pytest", "-m", "gpu", "tests/unit/test_config.py"), "exit 5"),  # no GPU test there
    ],
    ids=["option", "value", "command", "script", "case", "benchmark", "tests"],
)
def test_a_command_that_would_not_parse_or_start_fails_the_dry_run(argv, problem) -> None:
    checked = validation.dry_check(validation.Step("broken", argv, 60))
    assert not checked.ok and checked.status.startswith("failed") and problem in checked.status, checked.status


GONE_WITHIN_S = 10.0
SLEEPER = (
    "import subprocess, sys, time\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    "print(grandchild.pid, flush=True)\n"
    "time.sleep(120)"
)


def test_a_step_past_its_time_is_stopped_with_everything_it_started(tmp_path) -> None:
    step = validation.Step("sleeper", (sys.executable, "-c", SLEEPER), timeout_s=2)
    started = time.monotonic()
    done = validation.execute(step, tmp_path, deadline=time.monotonic() + 60)
    assert done.status == "timed out after 2 s" and time.monotonic() - started < 30
    grandchild = int((tmp_path / "sleeper.log").read_text().split()[0])
    deadline = time.monotonic() + GONE_WITHIN_S  # SIGKILL lands at once, the exit a moment later on a busy machine
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_step_the_budget_leaves_no_time_for_is_named_and_not_run(tmp_path) -> None:
    step = validation.Step("late", (sys.executable, "-c", "pass"), timeout_s=60)
    done = validation.execute(step, tmp_path, deadline=time.monotonic() + 1)
    assert done.status == "not run: the budget was spent" and done.wall_s is None


def test_without_a_gpu_it_measures_nothing_and_says_why(tmp_path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the validation would run")
    done = subprocess.run(
        [sys.executable, "scripts/gpu_validation.py", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 1 and "no CUDA GPU here" in done.stderr and not any(tmp_path.iterdir())
