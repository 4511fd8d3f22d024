"""``fastload merge``: the nodes' reports of one data-parallel job as the job's report."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

from fastload_cli.cli.run import STDOUT, Output, check_writable, write_document
from fastload_cli.errors import UsageError


def run_merge(paths: list[str], json_path: str | None, out: Output) -> None:
    from fastload_cli.analyzer.merge import MergeError, merge

    if json_path is not None:
        check_writable(json_path)
    documents = [_read(path) for path in paths]
    try:
        job = merge(documents, paths)
    except MergeError as exc:
        raise UsageError(str(exc), "pass the report each node wrote with --json, one per node") from None
    if json_path is not None:
        write_document(json.dumps(job, indent=2, allow_nan=False) + "\n", json_path, "Job report", out)
    if json_path != STDOUT:
        Console(highlight=False, markup=False).print(render(job))


def _read(path: str) -> dict[str, Any]:
    from fastload_cli.cli.gating import read_report_document

    return read_report_document(path, path)


def render(job: dict[str, Any]) -> RenderableType:
    """The job's verdict, its evidence, and each mode rank by rank."""
    from fastload_cli.analyzer.merge import summary_of
    from fastload_cli.reporters.shown import shown
    from fastload_cli.reporters.terminal import ranks_table

    job = shown(job)  # the nodes' reports, read from files: their strings shown as text
    verdict = job["verdict"]
    parts: list[RenderableType] = [
        Text.assemble(("Job verdict: ", "bold"), verdict["label"]),
        Text(f"{len(job['nodes'])} nodes, {job['environment']['world_size']} ranks: {', '.join(job['nodes'])}"),
    ]
    for run in job["runs"]:
        parts.extend(ranks_table(summary_of(run), verdict.get("slowest_rank")))
    parts += [Text(""), Text("Evidence", style="bold")]
    parts += [Text(f"  {line}") for line in verdict.get("evidence", ())]
    return Group(*parts)
