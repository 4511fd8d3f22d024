"""``fastload fix`` on scripts whose best change is known: the diagnosis's recommendation written
into the script where it builds its loader, proven in plain runs, and delivered as a diff that
``patch -p1`` applies (comments and layout kept), or applied with a backup; a loader a framework
builds gets the advice and the reason, not a patch; Ctrl-C during the plain runs leaves nothing
running and writes no patch (the diagnosis's report still).

What the plain runs measured is a timing, asserted only as what the report says of it (a kept
change won every round; its gain lies in its interval); ``scripts/bench_advice.py --patches``
checks that following the patch gives that gain."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, SCRIPTS, run_fastload

pytestmark = pytest.mark.slow
QUICK = ("--rounds", "2", "--epochs", "2", "--epoch-batches", "20")
PROVEN = re.compile(r"^  (\S+)\s+([\d.]+)x \(([\d.]+)x-([\d.]+)x over 2 rounds\)\s+(kept|.*)$", re.MULTILINE)


def copied(tmp_path: Path, *files: Path) -> Path:
    for f in files:
        shutil.copy(f, tmp_path / f.name)
    return tmp_path


def kept(stdout: str) -> tuple[str, float, float, float]:
    """The change ``fix`` kept: its name, gain and interval, as its summary says."""
    found = [m for m in PROVEN.finditer(stdout) if m.group(5) == "kept"]
    assert len(found) == 1, stdout[-3000:]
    name, gain, low, high, _ = found[0].groups()
    return name, float(gain), float(low), float(high)


def test_more_workers_for_slow_storage_as_a_patch_that_applies(tmp_path: Path) -> None:
    folder = copied(tmp_path, EXAMPLES / "storage_latency.py", EXAMPLES / "_example_common.py")
    original = (folder / "storage_latency.py").read_text()
    done = run_fastload(
        "fix", "storage_latency.py", *QUICK, "--patch", "fix.diff", "--json", "report.json", cwd=folder, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((folder / "report.json").read_text())
    advised = next(r for r in report["recommendations"] if r["id"] == "increase-num-workers")
    name, gain, low, high = kept(done.stdout)
    assert name.startswith("increase-num-workers") and 1 < low <= gain <= high
    diff = (folder / "fix.diff").read_text()
    assert diff.startswith("--- a/storage_latency.py\n+++ b/storage_latency.py\n")
    assert (folder / "storage_latency.py").read_text() == original  # --patch writes the diff, not the file
    subprocess.run(["patch", "-p1", "--quiet"], input=diff, text=True, cwd=folder, check=True)
    patched = (folder / "storage_latency.py").read_text()
    assert f"num_workers={advised['num_workers']}, persistent_workers=True" in patched
    assert "time.sleep(self.latency_s)  # the storage round trip" in patched  # comments kept
    [written] = [c for c in report["patch"]["changes"] if c["kept"]]  # the JSON says what the terminal does
    # the terminal prints the gain to two digits, the JSON to four: rounding the JSON's again can differ
    # by a hundredth (3.51496 prints 3.51, is 3.515 in the JSON), so compare within both roundings
    assert written["name"] == name and abs(written["gain"] - gain) <= 0.005 + 0.00005
    assert report["patch"]["diff"] == diff
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 2 and all("DataLoader(" in line for line in changed)  # the one call, nothing else
    plain = subprocess.run([sys.executable, "storage_latency.py", "--steps", "5"], cwd=folder, capture_output=True)
    assert plain.returncode == 0, plain.stderr[-2000:]


def test_persistent_workers_for_workers_started_every_epoch_applied_with_a_backup(tmp_path: Path) -> None:
    zoo = ROOT / "scripts" / "zoo"
    folder = copied(tmp_path, zoo / "worker_startup.py", zoo / "_zoo_data.py")
    original = (folder / "worker_startup.py").read_text()
    done = run_fastload("fix", "worker_startup.py", *QUICK, "--apply", "--yes", cwd=folder, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    name, _, low, _ = kept(done.stdout)
    assert name == "persistent-workers" and low > 1
    assert (folder / "worker_startup.py.orig").read_text() == original
    patched = (folder / "worker_startup.py").read_text()
    assert "worker_init_fn=load_vocabulary, persistent_workers=True)" in patched
    assert patched.replace(", persistent_workers=True)", ")") == original
    assert "--- a/worker_startup.py" in done.stdout  # the diff applied is shown


@pytest.mark.skipif(
    any(__import__("importlib.util").util.find_spec(m) is None for m in ("transformers", "datasets")),
    reason="the frameworks extra is not installed: pip install '.[frameworks]'",
)
def test_a_loader_built_by_a_framework_gets_advice_and_the_reason_not_a_patch(tmp_path: Path) -> None:
    frameworks = SCRIPTS / "frameworks"
    subprocess.run(
        [sys.executable, str(frameworks / "make_jpegs.py"), "--per-class", "48", "--classes", "4", str(tmp_path / "j")],
        check=True,
        capture_output=True,
    )
    script = copied(tmp_path, frameworks / "hf_image_classification.py") / "hf_image_classification.py"
    before = script.read_text()
    # one worker waiting on reads: more workers is the advice on any host, busy or not
    reads = ("--workers", "1", "--read-ms", "8")
    done = run_fastload(
        "fix", str(script), *QUICK, "-q", "--", str(tmp_path / "j"), "--max-steps", "300", *reads, timeout=400
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Not written as a change:" in done.stdout and "No patch" in done.stdout
    assert "increase-num-workers: the loader is built inside transformers, not in the script's code" in done.stdout
    assert "--- a/" not in done.stdout and script.read_text() == before


def test_ctrl_c_during_the_plain_runs_stops_them_and_writes_nothing(tmp_path: Path) -> None:
    zoo = ROOT / "scripts" / "zoo"
    folder = copied(tmp_path, zoo / "worker_startup.py", zoo / "_zoo_data.py")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastload_cli", "fix", "worker_startup.py", "--patch", "fix.diff", "--json", "r.json"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 300
    for line in proc.stderr:
        if line.startswith("Plain run, round 1") or time.monotonic() > deadline:
            break
    time.sleep(1.0)  # inside the plain run
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=60)
    assert proc.returncode == 130, rest[-2000:]
    assert "Interrupted: no patch written." in rest
    assert not (folder / "fix.diff").exists()
    report = json.loads((folder / "r.json").read_text())  # what the diagnosis measured is kept
    assert report["patch"] is None and report["runs"][0]["batches"] > 0
