"""Node reports of one data-parallel job -> the job's report (pure: JSON documents in, one out).

On several nodes each node runs ``fastload diagnose`` with the same rendezvous options and writes a
report of its own ranks. The job's report puts every rank of a mode in one list, sums the job's
throughput over the nodes, and names the slowest rank of the whole job as a node could not: a node
sees only its own ranks waiting, never the rank on another node they wait for. Its verdict is the
node's that holds that rank (whose own figures are of it), or the first node's when none stands out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastload_cli.analyzer import ranks
from fastload_cli.records import RunStatus, RunSummary

Document = Mapping[str, Any]


class MergeError(ValueError):
    """Reports that are not one job's nodes; the message says which and why."""


def merge(documents: Sequence[Document], sources: Sequence[str]) -> dict[str, Any]:
    """The job's report from its nodes' reports (``sources`` name them in messages)."""
    _check(documents, sources)
    by_rank = {x["rank"]: (node, x) for node, doc in enumerate(documents) for x in _real(doc).get("ranks", ())}
    grouped = all(doc["environment"].get("process_group") is not False for doc in documents)
    real_ranks = [_summary(x) for _, x in sorted(by_rank.values(), key=lambda pair: pair[1]["rank"])]
    runs = [_merged_run(documents, mode) for mode in _modes(documents)]
    lagging = ranks.straggler(real_ranks, grouped, _elsewhere(runs))
    holder = by_rank[lagging.rank][0] if lagging is not None else 0
    first = documents[holder]
    verdict = dict(first["verdict"])
    named = verdict.get("rank_named")  # how the node's verdict names its own straggler: the job's replaces it
    verdict["label"] = verdict["label"].removesuffix(f" {named}") if named else verdict["label"]
    verdict["slowest_rank"], verdict["rank_named"] = None, None
    if lagging is not None:
        verdict = dict(ranks_named(verdict, lagging))
    environment = dict(first["environment"], world_size=sum(len(_real(d).get("ranks", ())) for d in documents))
    return {
        **first,
        "command": "merge",
        "nodes": list(sources),
        "environment": environment,
        "runs": runs,
        "verdict": verdict,
        "caveats_by_node": {
            source: list(doc["verdict"].get("caveats", ())) for source, doc in zip(sources, documents, strict=True)
        },
    }


def ranks_named(verdict: Mapping[str, Any], lagging: ranks.Straggler) -> Mapping[str, Any]:
    return {
        **verdict,
        "label": f"{verdict['label']} {lagging.where}",
        "slowest_rank": lagging.rank,
        "rank_named": lagging.where,
        "evidence": [lagging.finding.sentence, *verdict.get("evidence", ())],
    }


def _check(documents: Sequence[Document], sources: Sequence[str]) -> None:
    if len(documents) < 2:
        raise MergeError("merge needs the reports of at least two nodes")
    for doc, source in zip(documents, sources, strict=True):
        if not str(doc.get("schema", "")).startswith("fastload.report/"):
            raise MergeError(f"{source} is not a fastload report (no fastload.report schema)")
        if not _real(doc).get("ranks"):
            raise MergeError(f"{source} is not a data-parallel job's report (its real run has no ranks)")
    seen: dict[int, str] = {}
    for doc, source in zip(documents, sources, strict=True):
        for x in _real(doc)["ranks"]:
            if x["rank"] in seen:
                raise MergeError(f"rank {x['rank']} is in both {seen[x['rank']]} and {source}: one report per node")
            seen[x["rank"]] = source
    scripts = {doc.get("script") for doc in documents}
    if len(scripts) > 1:
        raise MergeError(f"the reports are of different scripts: {', '.join(sorted(map(str, scripts)))}")


def _real(doc: Document) -> Mapping[str, Any]:
    return next((r for r in doc.get("runs", ()) if r.get("mode") == "real"), {})


def _modes(documents: Sequence[Document]) -> list[str]:
    """The modes every node ran, in the first node's order."""
    common = set.intersection(*({r["mode"] for r in doc.get("runs", ())} for doc in documents))
    return [r["mode"] for r in documents[0]["runs"] if r["mode"] in common]


def _elsewhere(runs: Sequence[Document]) -> list[list[RunSummary]]:
    """Every rank's figures in each of the job's merged runs but the real one whose mode applied
    to every rank."""
    return [
        [_summary(x) for x in run["ranks"]]
        for run in runs
        if run["mode"] != "real" and run["status"] != RunStatus.FAILED.value and not run.get("ranks_changed")
    ]


def _merged_run(documents: Sequence[Document], mode: str) -> dict[str, Any]:
    runs = [next(r for r in doc["runs"] if r["mode"] == mode) for doc in documents]
    merged = dict(runs[0])
    merged["ranks"] = sorted((x for r in runs for x in r.get("ranks", ())), key=lambda x: x["rank"])
    for name in ("throughput_samples_per_s", "training_samples_per_s"):
        values = [r.get(name) for r in runs]
        merged[name] = None if None in values else sum(values)
    failed = next((r for r in runs if r.get("status") != RunStatus.OK.value), None)
    merged["status"] = failed["status"] if failed is not None else RunStatus.OK.value
    merged["error"] = failed.get("error") if failed is not None else None
    return merged


def _summary(x: Mapping[str, Any]) -> RunSummary:
    """A rank's figures in a node's report, read back (``RunSummary.from_json``)."""
    try:
        return RunSummary.from_json(x)
    except (KeyError, TypeError, ValueError) as exc:
        raise MergeError(f"a run of the reports cannot be read ({type(exc).__name__}: {exc})") from None


def summary_of(run: Mapping[str, Any]) -> RunSummary:
    """A merged run (a JSON dict) as the record the terminal renders, its ranks included."""
    return _summary(run)
