"""Data-parallel jobs: the job's figures, the straggler told from its victims, the verdict that
names it, node reports merged into the job's, and the launcher's options."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fastload_cli.analyzer import analyze, ranks
from fastload_cli.analyzer.merge import MergeError, merge
from fastload_cli.analyzer.metrics import summarize
from fastload_cli.cli.launcher import LaunchOptions
from fastload_cli.config import Launcher
from fastload_cli.errors import UsageError
from fastload_cli.plan.diagnose import freeing_the_straggler
from fastload_cli.records import (
    Bottleneck,
    ChildSpec,
    Command,
    FindingKind,
    Mode,
    ModeSpec,
    ProcRole,
    RunResult,
    RunStatus,
    ScriptError,
)
from fastload_cli.reporters import json_report
from fastload_cli.runner.job import ROOT_CAUSE, as_rank
from tests.unit import builders as b


def rank_run(
    mode: str, rank: int, wait_ms: float, compute_ms: float, *, grouped: bool = True, busy: float | None = None
) -> RunResult:
    """One rank's run: 40 steps of ``compute_ms`` outside the wait, each waiting ``wait_ms`` for data;
    ``busy``: the share of each step's compute its loop is on a CPU (blocked for the rest)."""
    batch_list = b.batches([wait_ms] * 40, compute_ms, step_busy_fraction=busy)
    busy = 0.05  # the loaders sleep: latency
    samples = b.host_samples(batch_list[-1].wait_end_ns, worker_cores=(busy,), system_busy=0.1)
    run = b.run(mode, batch_list, samples=samples)
    env = dataclasses.replace(run.env, process_group=True if grouped else None)
    return dataclasses.replace(run, rank=rank, local_rank=rank, world_size=2, env=env)


def job(*members: RunResult) -> RunResult:
    return dataclasses.replace(members[0], ranks=members)


def balanced(mode: str = "real", wait_ms: float = 45.0) -> RunResult:
    return job(rank_run(mode, 0, wait_ms, 5.0), rank_run(mode, 1, wait_ms, 5.0))


# -- the job's figures ---------------------------------------------------------------------------


def test_the_job_throughput_is_the_sum_of_its_ranks_and_each_rank_keeps_its_own() -> None:
    s = summarize(straggling())
    assert [r.rank for r in s.ranks] == [0, 1]
    assert s.throughput_samples_per_s == pytest.approx(sum(r.throughput_samples_per_s or 0 for r in s.ranks))
    assert s.ranks[1].data_wait_fraction == pytest.approx(0.9, abs=0.02)
    assert s.ranks[0].data_wait_fraction == pytest.approx(0.02, abs=0.01)


def test_a_rank_sees_the_tree_with_its_own_process_as_main_and_the_rest_as_others() -> None:
    samples = b.host_samples(100 * b.MS, worker_cores=(0.5, 0.5))  # pids 100 (main), 200, 201
    seen = as_rank(samples, 200, frozenset({201}))
    roles = {p.pid: p.role for p in seen[0].procs}
    assert roles == {100: ProcRole.OTHER, 200: ProcRole.MAIN, 201: ProcRole.WORKER}


# -- the straggler -------------------------------------------------------------------------------


def test_the_rank_that_waits_for_its_data_is_the_straggler_not_the_ranks_that_wait_for_it() -> None:
    found = ranks.straggler(summarize(straggling()).ranks, grouped=True)
    assert found is not None and found.rank == 1 and found.input_bound


def test_a_balanced_job_has_no_straggler() -> None:
    assert ranks.straggler(summarize(balanced()).ranks, grouped=True) is None
    assert ranks.straggler(summarize(rank_run("real", 0, 1.0, 10.0)).ranks, grouped=True) is None  # one process


def busy_step(mode: str = "real", ratio: float = 3.0) -> RunResult:
    """Rank 1's step keeps its loop busy ``ratio`` times as long as rank 0's: rank 0 spends the
    difference blocked in the all-reduce. Neither waits for data."""
    return job(rank_run(mode, 0, 1.0, 49.0, busy=0.3), rank_run(mode, 1, 1.0, 49.0, busy=0.3 * ratio))


def test_the_rank_whose_step_keeps_its_loop_busy_longest_is_the_straggler() -> None:
    s = summarize(busy_step())
    assert s.ranks[0].step_blocked_fraction == pytest.approx(0.7, abs=0.01)
    assert s.ranks[1].step_busy_ms_p50 == pytest.approx(3 * (s.ranks[0].step_busy_ms_p50 or 0), rel=0.01)
    found = ranks.straggler(s.ranks, grouped=True)
    assert found is not None and found.rank == 1 and not found.input_bound
    assert found.finding.sentence.startswith("Rank 1's step takes 3.0x rank 0's")
    assert found.where == "· rank 1's step takes 3.0x rank 0's"


@pytest.mark.parametrize("ratio", [1.0, 1.2])
def test_ranks_whose_steps_differ_within_the_threshold_name_no_straggler(ratio: float) -> None:
    assert ranks.straggler(summarize(busy_step(ratio=ratio)).ranks, grouped=True) is None


def test_a_step_beyond_the_ratio_but_inside_the_others_spread_names_no_straggler() -> None:
    rank0 = rank_run("real", 0, 1.0, 49.0, busy=0.3)
    steps = list(rank0.batches)  # every fourth step of rank 0 is as busy as rank 1's
    steps[::4] = [dataclasses.replace(x, step_cpu_ns=int(49 * b.MS * 0.6)) if x.index else x for x in steps[::4]]
    spread = job(dataclasses.replace(rank0, batches=tuple(steps)), rank_run("real", 1, 1.0, 49.0, busy=0.45))
    s = summarize(spread)
    assert (s.ranks[1].step_busy_ms_p50 or 0) >= 1.3 * (s.ranks[0].step_busy_ms_p50 or 0)
    assert ranks.straggler(s.ranks, grouped=True) is None


def test_the_split_is_not_said_where_the_loop_drives_a_cuda_device() -> None:
    on_gpu = [dataclasses.replace(r, env=dataclasses.replace(r.env, cuda_in_use=True)) for r in busy_step().ranks]
    s = summarize(job(*on_gpu))
    assert s.ranks[0].step_blocked_fraction is None and s.ranks[0].step_busy_ms_p50 is None
    assert ranks.straggler(s.ranks, grouped=True) is None


def test_a_compute_straggler_is_named_in_the_verdict_with_the_gain_of_balancing_it() -> None:
    analysis = analyze([busy_step(), busy_step("synthetic")])
    v = analysis.verdict
    assert v.bottleneck is Bottleneck.COMPUTE and v.slowest_rank == 1
    assert v.label.endswith("· rank 1's step takes 3.0x rank 0's")
    advice = next(r for r in analysis.recommendations if r.id == "straggler-step")
    assert not advice.measured and advice.title == "Find why rank 1's step is slower than the other ranks'"
    # rank 1's step is 50 ms, busy 44.1 ms of it against rank 0's 14.7 ms: 50 / (50 - 29.4)
    assert advice.expected_speedup == pytest.approx(2.43, abs=0.01)
    assert freeing_the_straggler(analysis, [busy_step()], multi_node=False) is None  # no run frees a step


def test_a_step_slow_in_one_run_alone_names_no_straggler() -> None:
    """A rank's step is the same in every mode: a run of the job where it does not stand out, or where
    another rank's does, shows that the real run's slow step was other work that came and went."""
    assert analyze([busy_step(), busy_step("synthetic", ratio=1.0)]).verdict.slowest_rank is None
    other_rank = job(*(dataclasses.replace(r, rank=1 - (r.rank or 0)) for r in reversed(busy_step("synthetic").ranks)))
    assert analyze([busy_step(), other_rank]).verdict.slowest_rank is None
    held = analyze([busy_step(), busy_step("synthetic"), busy_step("no-aug")]).verdict
    assert held.slowest_rank == 1
    assert held.evidence[0].endswith("It stands out so in each of the 2 other runs that split the ranks' steps too.")
    assert held.findings[0].values["runs"] == 3
    assert analyze([busy_step()]).verdict.slowest_rank == 1  # no other run split the steps: the real run says


def test_freeing_an_input_straggler_is_measured_once_and_never_on_a_balanced_job() -> None:
    analysis = analyze([straggling(), balanced("synthetic", wait_ms=0.5)])
    spec = freeing_the_straggler(analysis, [straggling()], multi_node=False)
    assert spec == ModeSpec(mode=Mode.SYNTHETIC, ranks=(1,)) and spec.label == "synthetic@rank1"
    assert freeing_the_straggler(analysis, [straggling(), straggling(spec=spec)], multi_node=False) is None
    balanced_job = analyze([balanced(), balanced("synthetic", wait_ms=0.5)])
    assert freeing_the_straggler(balanced_job, [], multi_node=False) is None
    assert freeing_the_straggler(analysis, [straggling()], multi_node=True) is None  # no node sees all


def straggling(mode: str = "real", spec: ModeSpec | None = None) -> RunResult:
    """Rank 1 reads slowly (waits 45 ms of a 50 ms step); rank 0 waits for it inside its step."""
    run = job(rank_run(mode, 0, 1.0, 49.0), rank_run(mode, 1, 45.0, 5.0))
    return dataclasses.replace(run, spec=spec) if spec is not None else run


def test_a_job_that_failed_names_no_straggler_and_its_error_keeps_the_rank_that_raised() -> None:
    """The ranks of a failed job ran a few steps and waited for the one that raised: no straggler is
    named from them, and the job's error says which rank raised whichever rank the job is seen from."""
    error = ScriptError(type_name="RuntimeError", message="rank 1 failed at step 15", traceback="", rank=1)
    real = straggling()
    raiser = dataclasses.replace(real.ranks[1], status=RunStatus.FAILED, error=error)
    failed = dataclasses.replace(real.ranks[0], status=RunStatus.FAILED, error=error, ranks=(real.ranks[0], raiser))
    analysis = analyze([failed, balanced("synthetic", wait_ms=0.5)])
    assert analysis.straggler is None and analysis.verdict.slowest_rank is None
    assert analysis.summaries[0].error == "rank 1: RuntimeError: rank 1 failed at step 15"
    seen_from_zero = ranks.seen_from(dataclasses.replace(failed, rank=1), 0)
    assert summarize(seen_from_zero).error == "rank 1: RuntimeError: rank 1 failed at step 15"


def freed_run(wait_ms: float) -> RunResult:
    """The job with rank 1's input free: both ranks' steps at ``wait_ms`` + 5 ms."""
    spec = ModeSpec(mode=Mode.SYNTHETIC, ranks=(1,))
    run = job(rank_run("real", 0, wait_ms, 5.0), rank_run("synthetic", 1, 0.0, 5.0 + wait_ms))
    return dataclasses.replace(run, spec=spec, ranks=tuple(dataclasses.replace(r, spec=spec) for r in run.ranks))


def test_what_freeing_the_straggler_gave_the_job_is_evidence_and_measured_advice() -> None:
    analysis = analyze([straggling(), balanced("synthetic", wait_ms=0.5), freed_run(1.0)])
    v = analysis.verdict
    assert v.evidence[1].startswith("With rank 1's input pipeline free (synthetic inputs on rank 1 alone")
    gain = v.of(FindingKind.STRAGGLER_FREED)[0].values["job_gain"]
    assert gain == pytest.approx(50 / 6, rel=0.05)
    advice = analysis.recommendations[0]
    assert advice.id == "straggler-input" and advice.measured and advice.expected_speedup == pytest.approx(gain, 0.01)
    assert [s.ranks_changed for s in analysis.summaries] == [(), (), (1,)]
    assert analysis.facts.synthetic is not None and analysis.facts.synthetic.mode == "synthetic"


def test_freeing_the_straggler_for_no_gain_is_said_and_advises_nothing() -> None:
    analysis = analyze([straggling(), balanced("synthetic", wait_ms=0.5), freed_run(45.0)])
    assert "gives the job nothing measurable" in analysis.verdict.evidence[1]
    assert all(r.id != "straggler-input" for r in analysis.recommendations)


def test_a_mode_on_some_ranks_alone_runs_the_script_as_it_is_on_the_others() -> None:
    spec = ChildSpec(mode=ModeSpec(mode=Mode.SYNTHETIC, ranks=(1,)), warmup=3)
    assert ChildSpec.from_json(spec.to_json()) == spec
    assert spec.on_rank(1) is spec
    assert spec.on_rank(0) == ChildSpec(warmup=3) and spec.on_rank(None).mode.mode is Mode.REAL
    everywhere = ChildSpec(mode=ModeSpec(mode=Mode.SYNTHETIC))
    assert everywhere.on_rank(0) is everywhere


def test_independent_copies_are_ranked_by_their_own_pace() -> None:
    slow, fast = rank_run("real", 1, 45.0, 5.0, grouped=False), rank_run("real", 0, 1.0, 5.0, grouped=False)
    found = ranks.straggler(summarize(job(fast, slow)).ranks, grouped=False)
    assert found is not None and found.rank == 1 and found.input_bound
    assert "no process group" in found.finding.sentence


def test_the_verdict_names_the_straggler_and_reads_its_own_pipeline() -> None:
    v = analyze([straggling(), balanced("synthetic", wait_ms=0.5)]).verdict
    assert v.slowest_rank == 1
    assert v.bottleneck is Bottleneck.IO and v.label.endswith("on rank 1")
    assert v.evidence[0].startswith("Rank 1 waited for its data")


def test_a_balanced_job_gets_the_verdict_of_one_of_its_ranks_and_no_straggler() -> None:
    real, synthetic = balanced(), balanced("synthetic", wait_ms=0.5)
    job_verdict = analyze([real, synthetic]).verdict
    one_process = analyze([dataclasses.replace(real.ranks[0], ranks=()), synthetic.ranks[0]]).verdict
    assert job_verdict.slowest_rank is None and one_process.slowest_rank is None
    assert job_verdict.bottleneck is one_process.bottleneck is Bottleneck.IO


def test_ranks_without_a_process_group_are_said_to_be_independent_copies() -> None:
    copies = job(rank_run("real", 0, 1.0, 5.0, grouped=False), rank_run("real", 1, 1.0, 5.0, grouped=False))
    assert any("formed no process group" in c for c in analyze([copies]).verdict.caveats)


def test_a_node_that_sees_part_of_the_job_says_so() -> None:
    one_of_two = job(rank_run("real", 0, 1.0, 5.0))
    assert any("`fastload merge`" in c for c in analyze([one_of_two]).verdict.caveats)


def straggling_job_document(world_size: int) -> dict:
    """The JSON report of a diagnose of ``straggling`` (ranks 0 and 1) in a job of ``world_size``."""
    from fastload_cli.config import RunConfig
    from fastload_cli.plan import Outcome
    from fastload_cli.plan.report import build_report
    from fastload_cli.records import Measured
    from tests.unit.test_report_sections import ENV  # the sample environment

    runs = (straggling(),)
    report = build_report(Command.DIAGNOSE, RunConfig(script=__import__("pathlib").Path("t.py"), script_arg0="t.py"),
                          Outcome(measured=tuple(Measured(r, summarize(r)) for r in runs)),
                          dataclasses.replace(ENV, world_size=world_size, nproc_per_node=2))  # fmt: skip
    return json.loads(json_report.document(report))


def test_the_json_report_carries_each_rank_and_the_slowest() -> None:
    doc = straggling_job_document(2)
    assert doc["environment"]["world_size"] == 2 and doc["environment"]["nproc_per_node"] == 2
    real = doc["runs"][0]
    assert [r["rank"] for r in real["ranks"]] == [0, 1]
    assert {"local_rank", "batches", "throughput_samples_per_s", "data_wait_fraction", "step_ms_p50",
            "loader_busy_fraction"} <= set(real["ranks"][0])  # fmt: skip
    assert doc["verdict"]["slowest_rank"] == 1


# -- merge ---------------------------------------------------------------------------------------


def node(
    rank: int, wait: float, label: str = "IO-bound input pipeline (storage or latency)", named: str | None = None
) -> dict:
    """A node's report of one rank; ``named``: the words its label ends with that name its slowest rank."""
    figures = {"rank": rank, "local_rank": 0, "status": "ok", "batches": 40, "data_wait_fraction": wait,
               "throughput_samples_per_s": 100.0, "mode": "real", "num_workers": 1, "samples": 1280,
               "wall_s": 12.8, "throughput_batches_per_s": 3.1, "step_ms_p50": 300.0, "step_ms_p90": 310.0,
               "startup_s": 0.2, "main_cpu_percent": 5.0, "workers_cpu_percent": 5.0, "gpu_util_percent": None,
               "read_bytes_per_s": 0.0, "error": None}  # fmt: skip
    run = {**figures, "rank": rank, "ranks": [figures]}
    return {
        "schema": "fastload.report/1",
        "script": "train.py",
        "environment": {"world_size": 2, "nproc_per_node": 1, "process_group": True},
        "runs": [run, {**run, "mode": "synthetic", "throughput_samples_per_s": 900.0}],
        "verdict": {
            "label": label,
            "bottleneck": "io",
            "evidence": ["node's own"],
            "caveats": [],
            "slowest_rank": rank if named else None,
            "rank_named": named,
        },
    }


def test_merge_puts_every_rank_in_one_job_and_names_the_slowest_across_nodes() -> None:
    merged = merge([node(0, 0.01, "CPU-bound input pipeline"), node(1, 0.9)], ["n0.json", "n1.json"])
    real = merged["runs"][0]
    assert [x["rank"] for x in real["ranks"]] == [0, 1]
    assert real["throughput_samples_per_s"] == 200.0
    assert merged["runs"][1]["throughput_samples_per_s"] == 1800.0
    assert merged["verdict"]["slowest_rank"] == 1
    assert merged["verdict"]["label"] == "IO-bound input pipeline (storage or latency) on rank 1"  # rank 1's node
    assert merged["environment"]["world_size"] == 2


def test_merge_names_a_rank_whose_step_is_slow_across_nodes_once() -> None:
    def busy(doc: dict, p50: float) -> dict:
        figures = {**doc["runs"][0]["ranks"][0], "step_busy_ms_p50": p50, "step_busy_ms_p90": p50 * 1.1,
                   "step_blocked_fraction": 0.1}  # fmt: skip
        return {**doc, "runs": [{**run, "ranks": [figures]} for run in doc["runs"]]}

    stale = "· rank 1's step takes 9.0x rank 0's"  # the node's name for its slowest rank
    named = f"Compute-bound: the training step is the limit {stale}"
    merged = merge([busy(node(0, 0.01), 7.0), busy(node(1, 0.01, named, stale), 17.0)], ["n0.json", "n1.json"])
    assert merged["verdict"]["slowest_rank"] == 1
    assert merged["verdict"]["label"] == named.replace("9.0x", "2.4x")  # rank 1's node's verdict, named once
    assert merged["verdict"]["evidence"][0].startswith("Rank 1's step takes 2.4x rank 0's")


def test_merge_names_no_rank_whose_step_is_slow_in_the_real_run_alone() -> None:
    def split(p50: float) -> dict:
        return {"step_busy_ms_p50": p50, "step_busy_ms_p90": p50 * 1.1, "step_blocked_fraction": 0.1}

    def busy(doc: dict, p50: float, synthetic: float) -> dict:
        runs = [
            {**run, "ranks": [{**run["ranks"][0], **split(own)}]}
            for run, own in zip(doc["runs"], (p50, synthetic), strict=True)
        ]
        return {**doc, "runs": runs}

    merged = merge([busy(node(0, 0.01), 7.0, 7.0), busy(node(1, 0.01), 17.0, 7.5)], ["n0.json", "n1.json"])
    assert merged["verdict"]["slowest_rank"] is None


def test_merge_of_a_balanced_job_names_no_rank() -> None:
    merged = merge([node(0, 0.5), node(1, 0.5)], ["a", "b"])
    assert merged["verdict"]["slowest_rank"] is None


@pytest.mark.parametrize(
    ("docs", "says"),
    [
        ([node(0, 0.1)], "at least two"),
        ([node(0, 0.1), node(0, 0.2)], "rank 0 is in both"),
        ([node(0, 0.1), {**node(1, 0.1), "runs": []}], "not a data-parallel job"),
        ([node(0, 0.1), {"schema": "other"}], "not a fastload report"),
        ([node(0, 0.1), {**node(1, 0.1), "script": "other.py"}], "different scripts"),
    ],
)
def test_merge_refuses_reports_that_are_not_one_jobs_nodes(docs: list, says: str) -> None:
    with pytest.raises(MergeError, match=says):
        merge(docs, [f"r{i}.json" for i in range(len(docs))])


# -- the launcher --------------------------------------------------------------------------------


def test_one_node_without_a_rendezvous_runs_standalone_on_a_free_port() -> None:
    args = Launcher(nproc_per_node=2).arguments()
    assert args == ["--nproc-per-node=2", "--max-restarts=0", "--nnodes=1", "--standalone"]


def test_the_users_launcher_options_pass_through_under_their_names() -> None:
    launcher = Launcher(nproc_per_node=4, nnodes="2", node_rank=1, master_addr="10.0.0.1", master_port=29400)
    args = launcher.arguments()
    assert "--standalone" not in args
    assert {"--nnodes=2", "--node-rank=1", "--master-addr=10.0.0.1", "--master-port=29400"} <= set(args)
    assert launcher.multi_node


def test_launcher_options_need_nproc_per_node_and_a_rank_cannot_start_fastload(monkeypatch) -> None:
    for name in ("TORCHELASTIC_RUN_ID", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert LaunchOptions().launcher("diagnose") is None
    with pytest.raises(UsageError, match="--master-port needs --nproc-per-node"):
        LaunchOptions(master_port=1234).launcher("diagnose")
    with pytest.raises(UsageError, match="--nnodes"):
        LaunchOptions(nproc_per_node=2, nnodes="two").launcher("diagnose")
    assert LaunchOptions(nproc_per_node=2, max_restarts=3).launcher("diagnose") == Launcher(
        nproc_per_node=2, max_restarts=3
    )
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "job")
    monkeypatch.setenv("LOCAL_RANK", "0")
    with pytest.raises(UsageError, match="inside a rank that torchrun started"):
        LaunchOptions().launcher("diagnose")


def test_the_launchers_failure_summary_names_the_root_cause_rank() -> None:
    tail = (
        "Failures:\n[1]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : -15 (pid: 5)\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : now\n  host      : localhost\n"
        "  rank      : 1 (local_rank: 1)\n  exitcode  : -9 (pid: 6)  (SIGKILL)\n"
    )
    found = ROOT_CAUSE.search(tail)
    assert found is not None and found["rank"] == "1" and found["code"] == "-9"


def test_every_rank_is_measured_after_the_last_ranks_switch_to_replays() -> None:
    """Rank 1 alone replays: the step in which it shut its workers down holds rank 0 at the all-reduce."""
    computes = [10.0] * 40
    computes[6] = 500.0
    rank0 = dataclasses.replace(b.run("real", b.batches([1.0] * 40, computes), warmup=6), rank=0, local_rank=0)
    rank1 = dataclasses.replace(b.run("synthetic", b.batches([1.0] * 40, computes), warmup=6), rank=1, local_rank=1)
    steady = b.run("real", b.batches([1.0] * 40, 10.0), warmup=6)
    s = summarize(job(rank0, rank1))
    expected = summarize(steady).throughput_samples_per_s
    assert [r.throughput_samples_per_s for r in s.ranks] == [pytest.approx(expected), pytest.approx(expected)]
    alone = summarize(rank0)  # one process that switched nothing: the step counts
    assert (alone.throughput_samples_per_s or 0) < 0.7 * (expected or 0)


def test_a_run_on_one_rank_whose_job_never_started_is_set_aside_with_its_summary() -> None:
    spec = ModeSpec(mode=Mode.SYNTHETIC, ranks=(1,))
    never = dataclasses.replace(b.run("real", []), spec=spec)  # the launcher failed: no rank said hello
    analysis = analyze([straggling(), balanced("synthetic", wait_ms=0.5), never])
    assert analysis.verdict.slowest_rank == 1 and len(analysis.summaries) == 3
    assert not analysis.verdict.of(FindingKind.STRAGGLER_FREED)


def test_a_merged_jobs_report_reads_back_as_compare_and_baselines_read_reports() -> None:
    from fastload_cli.analyzer.compare import read_figures
    from fastload_cli.records.schema import check_report

    first, second = straggling_job_document(4), straggling_job_document(4)  # second: the node of ranks 2 and 3
    for run in second["runs"]:
        run["ranks"] = [{**x, "rank": x["rank"] + 2} for x in run["ranks"]]
    merged = json.loads(json.dumps(merge([first, second], ["n0.json", "n1.json"])))
    check_report(merged)  # the report `fastload merge` writes is one `compare` and `--baseline` accept
    figures = read_figures(merged, "job.json")
    assert figures.command == "merge" and [m.mode for m in figures.modes] == ["real"]
