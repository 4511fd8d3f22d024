"""Runs forked warm from a process that imported torch once: the script finds torch imported and
fresh random state; a script that sets environment variables starts cold; no starter outlives
the command. No timing is asserted: the time saved is in docs/benchmarks.md."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import psutil
import pytest

from tests.conftest import SCRIPTS, TEST_ID_ENV, run_fastload

pytestmark = pytest.mark.slow
SCRIPT = SCRIPTS / "warm_check.py"


def starters() -> list[psutil.Process]:
    """This test's warm starters: they carry its id; another fastload's on the machine do not."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any("fastload_cli.runner.child.starter import serve" in part for part in proc.info["cmdline"] or ()):
            with contextlib.suppress(psutil.Error):
                if proc.environ().get(TEST_ID_ENV) == os.environ[TEST_ID_ENV]:
                    found.append(proc)
    return found


def seen_runs(tmp_path: Path, script: Path) -> list[dict]:
    seen = tmp_path / "seen.jsonl"
    done = run_fastload(
        "diagnose", str(script), "--modes", "real,synthetic", "--max-batches", "12", "--json", "-", "-q",
        "--", "--seen", str(seen), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    statuses = [r["status"] for r in json.loads(done.stdout)["runs"]]  # a near-line pair is measured twice
    assert len(statuses) in (2, 4) and set(statuses) == {"ok"}
    return [json.loads(line) for line in seen.read_text().splitlines()]


def test_runs_fork_from_a_starter_that_imported_torch_and_none_outlives_the_command(tmp_path: Path) -> None:
    before = {p.pid for p in starters()}
    runs = seen_runs(tmp_path, SCRIPT)  # real, synthetic, and any run diagnose adds (the breakdown)
    assert len(runs) >= 2 and all(r["pre_imported"] for r in runs)
    assert all(r["compiler_imported"] for r in runs)  # what its optimizer imports, once for every run
    assert all(r["named_imported"] for r in runs)  # what it imports from torch by name, likewise
    draws = [r["draw"] for r in runs]
    assert len(set(draws)) == len(draws)  # each run's random state is its own, as a fresh process has
    assert {p.pid for p in starters()} <= before


def test_a_script_that_sets_environment_variables_starts_cold(tmp_path: Path) -> None:
    script = tmp_path / "sets_env.py"
    sets = 'import sys\nimport os\n\nos.environ["OMP_NUM_THREADS"] = "1"\n'
    source = SCRIPT.read_text().replace("import sys\n", sets, 1)
    script.write_text(source)
    runs = seen_runs(tmp_path, script)
    assert len(runs) >= 2 and not any(r["pre_imported"] for r in runs)


def test_a_starter_that_cannot_import_its_preloads_leaves_the_runs_cold(monkeypatch: pytest.MonkeyPatch) -> None:
    from fastload_cli.config import RunConfig
    from fastload_cli.runner import launch, warm

    preloads = ("torch", "no_such_module_for_fastload")
    monkeypatch.setattr(warm, "preloads_for", lambda script: preloads)
    config = RunConfig(script=SCRIPT, script_arg0=str(SCRIPT), script_args=("--seen", "/dev/null"), max_batches=12)
    before = {p.pid for p in starters()}
    try:
        result = launch.run_mode(config)
        assert result.status.value == "ok" and len(result.batches) >= 12  # measured, cold
        failed = [key for key in warm._FAILED if key[2] == preloads]
        assert failed and not any(key[2] == preloads for key in warm._STARTERS)
        assert {p.pid for p in starters()} <= before  # the failed starter is gone
    finally:
        warm.close_all()
        warm._FAILED.clear()
