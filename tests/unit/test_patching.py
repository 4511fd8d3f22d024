"""Advice written as a change to the script's code: which recommendations are a change, the
rewrite of the loader's call (comments and layout kept, a call it cannot change safely refused
with the reason), the diff ``patch -p1`` applies, and the plain runs' rounds judged."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fastload_cli.patching.diff import unified
from fastload_cli.patching.edits import REMOVED, Edit, edits
from fastload_cli.patching.proof import UNCHANGED, Proven, chosen, order, proven
from fastload_cli.patching.rewrite import Unpatchable, rewrite
from fastload_cli.records import FixResult, Recommendation
from tests.unit import builders as b

SCRIPT = '''"""Train."""
import torch
from torch.utils.data import DataLoader  # the loader


def main(args, dataset):
    # the training loader
    loader = DataLoader(
        dataset,  # samples, one file each
        batch_size=16,
        num_workers=args.workers,  # from the command line
    )
    quick = DataLoader(dataset, batch_size=4)
    positional = torch.utils.data.DataLoader(dataset, 8, True, None, None, 2)
    starting = DataLoader(dataset, worker_init_fn=load_vocabulary, num_workers=2)
    forwarded = DataLoader(dataset, **options)
    return loader
'''


def line_of(text: str) -> int:
    return next(i for i, line in enumerate(SCRIPT.splitlines(), 1) if text in line)


def test_a_keyword_is_changed_in_place_and_one_added_in_the_calls_own_layout() -> None:
    edit = Edit(name="increase-num-workers", settings=(("num_workers", 8), ("persistent_workers", True)))
    after = rewrite(SCRIPT, line_of("loader = DataLoader("), "DataLoader", edit)
    assert (
        "        batch_size=16,\n"
        "        num_workers=8,  # from the command line\n"
        "        persistent_workers=True,\n"
        "    )\n"
    ) in after
    assert "dataset,  # samples, one file each\n" in after and "# the training loader" in after
    assert (
        after.replace("num_workers=8,  # from", "num_workers=args.workers,  # from").replace(
            "        persistent_workers=True,\n", ""
        )
        == SCRIPT
    )  # nothing else changed


def test_a_call_on_one_line_stays_on_one_line() -> None:
    edit = Edit(name="persistent-workers", settings=(("persistent_workers", True),))
    after = rewrite(SCRIPT, line_of("quick = "), "DataLoader", edit)
    assert "    quick = DataLoader(dataset, batch_size=4, persistent_workers=True)\n" in after


def test_a_positional_argument_is_changed_where_it_is_given() -> None:
    edit = Edit(name="reduce-num-workers", settings=(("num_workers", 0), ("persistent_workers", REMOVED)))
    after = rewrite(SCRIPT, line_of("positional = "), "DataLoader", edit)
    assert "torch.utils.data.DataLoader(dataset, 8, True, None, None, 0)\n" in after


def test_one_thread_per_worker_keeps_the_scripts_own_init_function_and_is_imported() -> None:
    after = rewrite(SCRIPT, line_of("starting = "), "DataLoader", Edit(name="one-thread-per-worker", worker_threads=1))
    assert "DataLoader(dataset, worker_init_fn=WorkerThreads(1, then=load_vocabulary), num_workers=2)" in after
    assert "from fastload_cli.fixes import WorkerThreads\n" in after
    compile(after, "train.py", "exec")


def test_a_wrapper_wraps_the_call_and_is_imported() -> None:
    after = rewrite(SCRIPT, line_of("quick = "), "DataLoader", Edit(name="thread-prefetch", wrapper="ThreadPrefetcher"))
    assert "quick = ThreadPrefetcher(DataLoader(dataset, batch_size=4))" in after
    assert "from fastload_cli.fixes import ThreadPrefetcher\n" in after


def test_arguments_passed_through_kwargs_are_refused_with_the_reason() -> None:
    with pytest.raises(Unpatchable, match=r"\*\*: fastload cannot tell whether num_workers is among them"):
        rewrite(SCRIPT, line_of("forwarded = "), "DataLoader", Edit(name="x", settings=(("num_workers", 8),)))


def test_a_line_without_the_call_is_refused() -> None:
    with pytest.raises(Unpatchable, match="no call of DataLoader was found on line 3"):
        rewrite(SCRIPT, 3, "DataLoader", Edit(name="x", settings=(("num_workers", 8),)))


def test_the_diff_applies_with_patch_p1(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    edit = Edit(name="persistent-workers", settings=(("persistent_workers", True),))
    after = rewrite(SCRIPT, line_of("quick = "), "DataLoader", edit)
    diff = unified({script: (SCRIPT, after)}, tmp_path)
    assert diff.startswith("--- a/train.py\n+++ b/train.py\n")
    subprocess.run(["patch", "-p1", "--quiet"], input=diff, text=True, cwd=tmp_path, check=True)
    assert script.read_text() == after


def test_a_file_without_a_last_newline_still_gives_a_diff_that_applies(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    before = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)"
    script.write_text(before)
    after = rewrite(before, 2, "DataLoader", Edit(name="x", settings=(("num_workers", 4),)))
    subprocess.run(["patch", "-p1", "--quiet"], input=unified({script: (before, after)}, tmp_path), text=True,
                   cwd=tmp_path, check=True)  # fmt: skip
    assert script.read_text() == after
    assert after == "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)"


def rec(rid: str, *, num_workers: int | None = None, measured: bool = True) -> Recommendation:
    return Recommendation(
        id=rid, title=rid, detail="", expected_speedup=1.5, measured=measured, num_workers=num_workers
    )


def test_the_recommendations_that_are_a_change_and_the_ones_that_are_not() -> None:
    found, left = edits(
        [
            rec("increase-num-workers", num_workers=8),
            rec("persistent-workers"),
            rec("one-thread-per-worker"),
            rec("reduce-augmentation-cost"),
            rec("step-is-the-limit"),
        ],
        None,
        b.loader(num_workers=2),
    )
    assert [e.name for e in found] == ["increase-num-workers", "persistent-workers", "one-thread-per-worker"]
    assert found[0].settings == (("num_workers", 8), ("persistent_workers", True))
    assert found[2].worker_threads == 1
    assert [(u.name, "transforms" in u.reason) for u in left] == [("reduce-augmentation-cost", True)]


def test_no_workers_takes_out_the_settings_that_need_them() -> None:
    [edit], _ = edits([rec("reduce-num-workers", num_workers=0)], None, b.loader(num_workers=2))
    assert dict(edit.settings) == {"num_workers": 0, "persistent_workers": REMOVED, "prefetch_factor": REMOVED}


def test_a_fix_a_run_found_to_change_the_batches_is_never_written() -> None:
    unsafe = FixResult(
        name="persistent-workers", speedup=1.4, spread=0.05, memory_bytes=None, measured=True, applies=True,
        reason="", code="", same_batches=False, batches="batch 0 of epoch 2 holds other values",
    )  # fmt: skip
    found, left = edits([rec("persistent-workers")], None, b.loader(num_workers=2), [unsafe])
    assert not found and left[0].reason == "unsafe: batch 0 of epoch 2 holds other values"


def test_edits_joined_keep_the_first_ones_value_where_both_set_one() -> None:
    workers = Edit(name="increase-num-workers", settings=(("num_workers", 8), ("persistent_workers", True)))
    joined = workers.joined(Edit(name="larger-prefetch-factor", settings=(("prefetch_factor", 4),)))
    assert joined.name == "increase-num-workers+larger-prefetch-factor"
    assert dict(joined.settings) == {"num_workers": 8, "persistent_workers": True, "prefetch_factor": 4}


def test_a_patch_wins_when_it_was_faster_in_every_round() -> None:
    found = proven({UNCHANGED: [10.0, 10.0, 10.0], "a": [15.0, 14.0, 16.0], "b": [12.0, 9.0, 13.0]})
    a, b_ = found
    assert a.wins and round(a.gain, 2) == 1.5 and round(a.low, 2) == 1.4
    assert not b_.wins  # one round slower: within the noise
    assert chosen(found, None) is a


def test_the_winners_combined_are_kept_only_where_they_gain_at_least_as_much() -> None:
    alone = (Proven(name="a", ratios=(1.5, 1.4, 1.6)), Proven(name="b", ratios=(1.2, 1.1, 1.3)))
    assert chosen(alone, Proven(name="a+b", ratios=(1.7, 1.6, 1.8))).name == "a+b"
    assert chosen(alone, Proven(name="a+b", ratios=(1.45, 1.3, 1.5))).name == "a"
    assert chosen((Proven(name="c", ratios=(0.9, 1.1)),), None) is None


def test_every_other_round_runs_in_the_other_order() -> None:
    assert order(["a", "b"], 0) == [UNCHANGED, "a", "b"] and order(["a", "b"], 1) == ["b", "a", UNCHANGED]


def test_a_patch_whose_plain_run_failed_never_wins_and_says_why() -> None:
    found = proven({UNCHANGED: [10.0, 10.0], "a": [15.0, 14.0]}, {"b": "ImportError: no module named x"})
    a, failed = found
    assert a.wins and not failed.wins and failed.said == "its plain run failed: ImportError: no module named x"
    assert chosen(found, None) is a
