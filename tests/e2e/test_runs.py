"""Real child runs: plain-python semantics, failures, interrupts, and the modes' promises."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SCRIPTS, run_fastload

pytestmark = pytest.mark.slow
TOY = str(SCRIPTS / "toy_train.py")


def report_of(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("warm", ["1", "0"], ids=["forked-warm", "started-cold"])
def test_the_script_sees_what_plain_python_shows_it(tmp_path: Path, warm: str) -> None:
    (tmp_path / "sub").mkdir()
    shutil.copy(SCRIPTS / "toy_train.py", tmp_path / "sub" / "train.py")
    args = ["sub/train.py", "--steps", "3", "--view"]
    plain = subprocess.run([sys.executable, *args, "plain.json"], cwd=tmp_path, capture_output=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    done = run_fastload(
        "diagnose", "sub/train.py", "--modes", "real", "--", "--steps", "3", "--view", "under.json",
        cwd=tmp_path, env={"FASTLOAD_WARM_START": warm},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen_plain = json.loads((tmp_path / "plain.json").read_text())
    seen_under = json.loads((tmp_path / "under.json").read_text())
    seen_plain["argv"][-1] = seen_under["argv"][-1] = "VIEW"
    assert seen_under == seen_plain
    assert seen_under["name"] == "__main__"
    assert seen_under["argv"][:3] == ["sub/train.py", "--steps", "3"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P (no working directory on sys.path) is 3.11+")
@pytest.mark.parametrize("warm", ["1", "0"], ids=["forked-warm", "started-cold"])
def test_modules_in_the_working_directory_are_not_imported(tmp_path: Path, warm: str) -> None:
    # plain `python sub/train.py` puts sub/ first on sys.path, never the working directory: a
    # ctypes.py or torch.py planted there (a shared /tmp, cluster scratch) is someone else's code
    (tmp_path / "sub").mkdir()
    shutil.copy(SCRIPTS / "toy_train.py", tmp_path / "sub" / "train.py")
    for name in ("ctypes", "torch", "json"):
        marker = tmp_path / f"{name}.imported"
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('planted')\n")
    # fastload itself as the console script starts it: its own sys.path without the working directory
    command = [sys.executable, "-P", "-m", "fastload_cli", "diagnose", "sub/train.py", "--modes", "real",
               "--max-batches", "3", "--", "--steps", "5"]  # fmt: skip
    env = {**os.environ, "FASTLOAD_WARM_START": warm}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("*.imported")), "a module planted in the working directory was imported"


def test_a_script_that_fails_before_its_first_batch() -> None:
    done = run_fastload("diagnose", TOY, "--", "--fail-at", "0")
    assert done.returncode == 1
    assert "RuntimeError: failing before the first batch" in done.stderr  # the script's traceback tail
    assert "Error: the script failed before its first batch" in done.stderr
    assert "Hint:" in done.stderr


def test_a_script_that_fails_after_some_batches_keeps_what_was_measured() -> None:
    done = run_fastload("diagnose", TOY, "--modes", "real,synthetic", "--max-batches", "40", "--fixed-batches",
                        "--json", "-", "--", "--fail-at", "25")  # fmt: skip
    report = report_of(done)
    real, synthetic = report["runs"]
    assert real["status"] == "failed" and real["batches"] > 10
    assert "ValueError: failing at step 25" in real["error"]
    assert synthetic["status"] == "failed"  # the script fails the same way: each mode still ran
    assert any("real run failed" in c for c in report["verdict"]["caveats"])


def test_a_child_killed_mid_run_loses_nothing_it_measured() -> None:
    done = run_fastload("diagnose", TOY, "--modes", "real", "--max-batches", "60", "--fixed-batches", "--json", "-",
                        "--", "--workers", "2", "--kill-at", "30")  # fmt: skip
    run = report_of(done)["runs"][0]
    assert run["status"] == "failed"
    assert run["error"].startswith("killed by SIGKILL")
    assert run["batches"] >= 20  # the batches before the kill are all there


def test_no_dataloader_is_an_error_with_a_hint() -> None:
    done = run_fastload("diagnose", TOY, "--", "--no-loader")
    assert done.returncode == 1
    assert "without iterating a torch DataLoader" in done.stderr
    assert "Hint:" in done.stderr and "DALI" in done.stderr


def test_a_script_that_ends_early_is_reported_with_a_caveat() -> None:
    report = report_of(run_fastload("diagnose", TOY, "--modes", "real", "--json", "-", "--", "--steps", "12"))
    assert report["runs"][0]["status"] == "ok"
    assert any("finished after 12 batches" in c for c in report["verdict"]["caveats"])


def test_unmeasured_numbers_are_null_with_a_caveat() -> None:
    report = report_of(run_fastload("diagnose", TOY, "--max-batches", "10", "--json", "-"))
    run = report["runs"][0]
    assert run["gpu_util_percent"] is None
    assert any("GPU busy % not measured" in c for c in report["verdict"]["caveats"])
    assert report["environment"]["nvml"].startswith("unavailable: ")


def test_a_timeout_before_the_first_batch_stops_a_sleeping_script() -> None:
    started = time.monotonic()
    done = run_fastload("diagnose", TOY, "--timeout", "6", "--", "--load-ms", "600000")
    assert done.returncode == 1
    assert "no DataLoader batch arrived before the timeout" in done.stderr
    assert time.monotonic() - started < 60


def test_a_batch_a_worker_could_not_hand_over_stops_the_run_not_the_timeout() -> None:
    # the worker's third batch holds a lock: its queue cannot pickle it, Python drops it, and the
    # DataLoader would wait for it forever; the run is stopped well inside its 200 s timeout
    done = run_fastload("diagnose", TOY, "--modes", "real", "--timeout", "200", "--json", "-",
                        "--", "--workers", "1", "--unpicklable-at", "3")  # fmt: skip
    report = report_of(done)
    run = report["runs"][0]
    assert (run["status"], run["stop_reason"]) == ("failed", "batch-lost")
    assert "could not hand a batch over (TypeError: cannot pickle '_thread.lock' object)" in run["error"]
    assert any("Hint: where /dev/shm was full" in c for c in report["verdict"]["caveats"])
    # before the first batch: an error with its hint, as for a script that raised
    done = run_fastload("diagnose", TOY, "--timeout", "200", "--", "--workers", "1", "--unpicklable-at", "1")
    assert done.returncode == 1
    assert "Error: before its first batch, a DataLoader worker could not hand a batch over" in done.stderr
    assert "Hint: where /dev/shm was full" in done.stderr


def test_synthetic_mode_replays_fresh_copies_of_one_batch(tmp_path: Path) -> None:
    seen_path = tmp_path / "seen.json"
    done = run_fastload("diagnose", str(SCRIPTS / "synthetic_check.py"), "--modes", "real,synthetic", "--warmup", "3",
                        "--max-batches", "20", "--fixed-batches", "--json", "-", "--", str(seen_path))  # fmt: skip
    report_of(done)
    seen = json.loads(seen_path.read_text())  # written by the one run: real, then synthetic
    assert seen["same_object"] == 0 and seen["shared_memory"] == 0
    assert seen["saw_modified"] == 0  # in-place changes by the script never reach the next batch
    # the real run's batches (its warm-up and 20 more), each another; then its last, replayed
    # from then on: 20 replays at least
    sums = seen["sums"]
    switch = next(i for i in range(1, len(sums)) if sums[i] == sums[i - 1])
    assert switch >= 23 and len(set(sums[:switch])) == switch
    assert len(set(sums[switch - 1 :])) == 1 and len(sums) - switch >= 20


def starts_of(report: dict) -> int:
    """The starts of a one-run diagnose's script: two where a disturbed run was measured again."""
    return 2 if report["time_spent"]["again_s"] else 1


def test_real_and_synthetic_take_one_start_and_keep_their_figures_apart(tmp_path: Path) -> None:
    started = tmp_path / "started"
    done = run_fastload("diagnose", TOY, "--modes", "real,synthetic", "--max-batches", "12", "--json", "-",
                        "--", "--load-ms", "1.5", "--step-ms", "1", "--started", str(started))  # fmt: skip
    report = report_of(done)
    # one start of the script for both modes (two where other processes disturbed it: measured again)
    starts = starts_of(report)
    assert len(started.read_text().splitlines()) == starts
    assert report["time_spent"]["runs"] == starts
    real, synthetic = report["runs"]
    assert (real["mode"], synthetic["mode"]) == ("real", "synthetic")
    # loading (a sleep per sample in the loop's own process) is most of a real step and none of a
    # replay's: the real run's figures hold no replay, and the synthetic run's no real batch
    assert real["data_wait_fraction"] > 0.5
    assert synthetic["data_wait_fraction"] < 0.2
    assert real["stop_reason"] in ("settled", "enough-batches") and real["status"] == "ok"


def test_a_background_thread_loader_stops_cleanly() -> None:
    done = run_fastload("diagnose", str(SCRIPTS / "thread_prefetch.py"), "--modes", "real", "--warmup", "2",
                        "--max-batches", "20", "--fixed-batches", "--json", "-", timeout=120)  # fmt: skip
    report = report_of(done)
    assert report["runs"][0]["status"] == "ok"
    assert report["runs"][0]["batches"] == 20  # after 2 warm-up batches (the epoch's first among them)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_writes_the_partial_report_and_leaves_nothing_behind(tmp_path: Path, sig: int, code: int) -> None:
    marker, out = tmp_path / "marker", tmp_path / "report.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fastload_cli", "diagnose", TOY, "--max-batches", "100000", "--fixed-batches",
         "--json", str(out), "--", "--workers", "2", "--load-ms", "5", "--marker", str(marker), "--marker-after", "20"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the script never reached its 20th batch"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    report = json.loads(out.read_text())
    assert report["interrupted"] is True
    assert report["runs"][0]["status"] == "interrupted"
    assert report["runs"][0]["batches"] > 0


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_runs_leave_no_multiprocessing_folder_behind(tmp_path: Path, method: str) -> None:
    """A DataLoader worker that hands a tensor over makes a ``pymp-*`` folder for the socket it
    passes the descriptor on, which python removes as the worker exits; fastload kills the workers
    as a run stops, and none of those folders may stay, however the workers were started
    (forkserver: python 3.14's default)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = run_fastload("diagnose", str(SCRIPTS / "started_workers.py"), "--modes", "real", "--max-batches", "20",
                        "--json", "-", "--", method, env={"TMPDIR": str(temp)})  # fmt: skip
    assert report_of(done)["runs"][0]["num_workers"] == 2
    assert sorted(p.name for p in temp.glob("pymp-*")) == []


def test_objects_that_resist_introspection_do_not_break_the_script() -> None:
    report = report_of(run_fastload("diagnose", str(SCRIPTS / "hostile_objects.py"), "--modes", "real,synthetic",
                                    "--max-batches", "10", "--fixed-batches", "--json", "-"))  # fmt: skip
    assert [run["status"] for run in report["runs"]] == ["ok", "ok"]
    assert all(run["batches"] == 10 for run in report["runs"])


def _waits_of_the_real_run(tmp_path: Path, *options: str, size: int) -> int:
    """Batches the real run of toy_train.py on 2 workers saw (its data waits in the trace), with 20
    measured batches and 5 of warm-up asked for, ``size`` samples an epoch (4 a batch), 30-ms steps."""
    trace = tmp_path / f"trace-{size}{''.join(options)}.json"
    done = run_fastload(
        "diagnose", TOY, "--modes", "real", "--max-batches", "20", "--trace", str(trace), "-q", *options,
        "--", "--size", str(size), "--workers", "2", "--epochs", "3", "--step-ms", "30",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    return sum(1 for e in events if e.get("cat") == "wait" and e.get("ph") == "X")


def test_a_real_run_goes_on_to_its_epochs_end_when_it_is_near(tmp_path: Path) -> None:
    # 28-batch epochs against 25 batches asked for: the run goes on to the epoch's end, so what an
    # epoch costs besides its steps is measured whole
    assert _waits_of_the_real_run(tmp_path, size=28 * 4) >= 28
    # asked for exactly the batches, it stops there (a batch may arrive while it stops); and an
    # end that is not near is not waited for
    assert _waits_of_the_real_run(tmp_path, "--fixed-batches", size=28 * 4) <= 26
    assert _waits_of_the_real_run(tmp_path, size=60 * 4) <= 26


def test_a_run_settled_before_a_pause_stops_in_it_not_at_the_next_epoch(tmp_path: Path) -> None:
    # 50 batches an epoch, each 2 ms of reading and 1 ms of step, then 30 s of something else (an
    # evaluation): the settle rule, asked at most every 0.2 s, reads the epoch's last batches
    # during the pause, and the run stops there, not once the next epoch starts its iterator
    trace = tmp_path / "trace.json"
    done = run_fastload(
        "diagnose", TOY, "--modes", "real", "--max-batches", "500", "--trace", str(trace), "--json", "-", "-q",
        "--", "--size", "200", "--step-ms", "1", "--load-ms", "0.5", "--epochs", "2", "--pause-s", "30",
    )  # fmt: skip
    run = report_of(done)["runs"][0]
    assert run["stop_reason"] == "settled"
    events = json.loads(trace.read_text())["traceEvents"]
    started = sum(1 for e in events if e.get("cat") == "startup")
    # on a machine busy enough that the first epoch's steps were too uneven to settle on, the rule
    # reads the next epoch's too: then that epoch started, whatever the check does
    assert started == 1 or run["batches"] > 50 - 5, (started, run["batches"])  # 5 batches of warm-up


def test_a_stop_the_script_swallows_is_asked_again_at_its_next_batch(tmp_path: Path) -> None:
    # the stop lands in the step (50 ms of it against no loading), which catches everything and
    # goes on: the run still stops at its next batch, not after the grace fastload gives a stop
    trace = tmp_path / "trace.json"
    done = run_fastload(
        "diagnose", TOY, "--modes", "real", "--max-batches", "10", "--trace", str(trace), "--json", "-", "-q",
        "--", "--swallow", "--step-ms", "50", "--load-ms", "0", "--size", "400", "--epochs", "1",
    )  # fmt: skip
    assert report_of(done)["runs"][0]["stop_reason"] == "enough-batches"
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e.get("cat") == "wait" and e.get("ph") == "X") <= 17  # 15 asked for


ENDS_BY_ITSELF = """import atexit
import os
import sys
import threading
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset

out = Path(sys.argv[1])


class Marker:
    def __init__(self, path):  # what __del__ needs, kept: a teardown clears the module's names
        self.path, self.flags, self.open, self.close = path, os.O_CREAT | os.O_WRONLY, os.open, os.close

    def __del__(self):
        self.close(self.open(self.path, self.flags))


kept = Marker(str(out / "torn-down"))  # alive until the interpreter tears the module down
log = open(out / "log.txt", "a")  # never closed: python's exit flushes it
atexit.register(lambda: (out / "atexit").write_text("ran"))
for epoch in range(2):
    for (x,) in DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=4, num_workers=1):
        log.write("step\\n")


def save_later():
    time.sleep(0.3)
    (out / "saved").write_text("a non-daemon thread finished")


threading.Thread(target=save_later).start()
"""


def test_a_script_that_ends_by_itself_leaves_as_python_would_short_of_the_teardown(tmp_path: Path) -> None:
    """Its non-daemon thread joined, its atexit handler run, its open file flushed, and its exit
    code kept; not the interpreter's teardown, which with torch imported takes a CPU for 1-2 s
    that the next mode would wait for (an object alive at exit is not deleted: python does not
    promise it)."""
    script = tmp_path / "ends.py"
    script.write_text(ENDS_BY_ITSELF)
    done = run_fastload("diagnose", str(script), "--modes", "real", "--max-batches", "50", "--warmup", "2",
                        "--json", "-", "--", str(tmp_path))  # fmt: skip
    report = report_of(done)
    assert report["runs"][0]["stop_reason"] == "script-ended"
    assert (tmp_path / "saved").read_text() == "a non-daemon thread finished"
    assert (tmp_path / "atexit").read_text() == "ran"
    # each start of the script flushed its 32 steps: one, or two where other processes disturbed the
    # run and fastload measured it again
    assert (tmp_path / "log.txt").read_text() == "step\n" * 32 * starts_of(report)
    assert not (tmp_path / "torn-down").exists()
