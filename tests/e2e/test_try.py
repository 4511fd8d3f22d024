"""``fastload try`` and the ``cached`` mode on a real child: each fix is applied inside the
unmodified script (the script sees it), refused ones are reported with the reason and never run,
and the cached run splits a batch's time. No timing is asserted: the gains are benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SCRIPTS, run_fastload

pytestmark = pytest.mark.slow
SCRIPT = str(SCRIPTS / "try_train.py")


def test_try_applies_each_fix_inside_the_script_and_refuses_what_cannot_apply(tmp_path: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    fixes = ["--fix", "persistent-workers", "--fix", "cache-decoded", "--fix", "pin-memory", "--fix", "thread-prefetch"]
    done = run_fastload(
        "try", SCRIPT, *fixes, "--max-batches", "12", "--json", "-", "-q", "--", "--seen", str(seen), timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["command"] == "try"
    combined = "fix:persistent-workers+cache-decoded+thread-prefetch"
    modes = [r["mode"] for r in report["runs"]]
    assert modes == ["real", "fix:persistent-workers", "fix:cache-decoded", "fix:thread-prefetch", combined]
    assert all(r["status"] == "ok" and r["batches"] > 0 for r in report["runs"])
    fixes_found = {f["name"]: f for f in report["fixes"]}
    assert not fixes_found["pin-memory"]["applies"] and "CUDA is not available" in fixes_found["pin-memory"]["reason"]
    # 12 batches of a 32-batch epoch: neither window holds an epoch's start, all that keeping the workers saves
    kept = fixes_found["persistent-workers"]
    assert kept["applies"] and not kept["measured"] and kept["speedup"] is None, kept
    assert kept["reason"].startswith("its run's window or the real run's held no epoch's start")
    for name in ("cache-decoded", "thread-prefetch", combined.removeprefix("fix:")):
        fix = fixes_found[name]
        assert fix["applies"] and fix["measured"] and fix["speedup"] is not None and fix["spread"] >= 0.05, name
        # the same batches' make-up as the unchanged script's; values drawn at random by Jitter
        assert fix["same_batches"] is True and "values not compared" in fix["batches"], fix["batches"]
    assert "persistent_workers=True" in fixes_found["persistent-workers"]["code"]
    # what the script saw of its own loader, one line per run (a run disturbed by other processes is
    # made again): the real run first, then each fix in place, alone and together
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert lines[0] == {"persistent_workers": False, "dataset": "Reads", "transform": "Jitter"}
    seen_as = {(line["persistent_workers"], line["dataset"]) for line in lines}
    assert seen_as == {(False, "Reads"), (True, "Reads"), (False, "CachedView"), (True, "CachedView")}


def test_the_split_run_takes_turns_of_the_four_pipelines_and_splits_a_batchs_time(tmp_path: Path) -> None:
    seen, jittered = tmp_path / "seen.jsonl", tmp_path / "jittered.txt"
    done = run_fastload(
        "diagnose", SCRIPT, "--modes", "real,synthetic,no-aug,cached", "--max-batches", "12", "--json", "-", "-q",
        "--", "--seen", str(seen), "--jittered", str(jittered), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    # cached and no-aug asked for: the split run follows them, apart from the modes' runs
    assert [r["mode"] for r in report["runs"]] == ["real", "synthetic", "no-aug", "cached"]
    split = report["split"]
    assert split is not None and split["method"] == "interleaved" and split["turns"] == 2
    parts = ("storage_decode_ms", "augmentation_ms", "rest_ms", "step_ms", "residual_ms")
    assert None not in (split[part] for part in parts)
    total = split["storage_decode_ms"] + split["augmentation_ms"] + split["rest_ms"] + split["residual_ms"]
    assert total == pytest.approx(split["real_ms"], abs=1e-3)  # the JSON rounds each figure
    # with workers, the workers' CPU time per batch split the same way (no step of its own)
    cpu = split["workers_cpu"]
    assert cpu is not None and cpu["step_ms"] is None and cpu["real_ms"] > 0
    total = cpu["storage_decode_ms"] + cpu["augmentation_ms"] + cpu["rest_ms"] + cpu["residual_ms"]
    assert total == pytest.approx(cpu["real_ms"], abs=1e-3)
    # the split run's dataset switched pipelines while its workers ran: its batches come jittered
    # (real, cached), then not (no-aug, cached-no-aug), in turns of 22 batches (6 + 16), after 5
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    assert lines[-1]["dataset"] == "Switched" and lines[-1]["transform"] == "Jitter", lines
    last = jittered.read_text().splitlines()[-1]
    turns = [last[5 + 22 * k + 8 : 5 + 22 * (k + 1)] for k in range(8)]  # each turn past its first 8
    # fastload stops the script as its last batch is delivered: the script may not log that one
    assert turns[:7] == ["1" * 14, "0" * 14, "1" * 14, "0" * 14, "0" * 14, "1" * 14, "0" * 14], last
    assert turns[7] in ("1" * 13, "1" * 14), last


def test_try_without_a_fix_or_with_an_unknown_one_is_a_usage_error() -> None:
    done = run_fastload("try", SCRIPT, "--fix", "faster-disks", timeout=60)
    assert done.returncode == 2 and "unknown fix 'faster-disks'" in done.stderr and "cache-decoded" in done.stderr
    done = run_fastload("try", SCRIPT, timeout=60)
    assert done.returncode == 2 and "at least one --fix" in done.stderr


def test_a_cache_that_keeps_the_first_epochs_samples_is_refused_by_the_data_guard() -> None:
    # the script changes its samples every epoch (set_epoch); a cache keyed by index keeps epoch 1's
    done = run_fastload("try", str(SCRIPTS / "stale_cache.py"), "--fix", "cache-decoded", "--json", "-", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    [fix] = json.loads(done.stdout)["fixes"]
    assert fix["measured"] and fix["same_batches"] is False, fix["batches"]
    assert fix["batches"].startswith("batch 0 of epoch 2 holds other values"), fix["batches"]


def test_a_fix_that_keeps_the_data_is_not_refused_where_the_next_epoch_changes_it() -> None:
    # the same script kept its workers across epochs: each epoch's samples are made afresh
    done = run_fastload("try", str(SCRIPTS / "stale_cache.py"), "--fix", "persistent-workers", "--json", "-", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    [fix] = json.loads(done.stdout)["fixes"]
    assert fix["measured"] and fix["same_batches"] is True, fix["batches"]
