"""``Report`` -> the ``fastload.report/1`` JSON document (a plain dict, ready for json.dump)."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

from fastload_cli.records import Report, RunSummary

FLOAT_DIGITS = 4
# Top-level keys in the order a reader expects; every other Report field follows.
LEADING_KEYS = ("schema", "fastload_version", "command", "script", "script_args")


def to_json(value: Any) -> Any:
    """Records and mappings to dicts, enums to their values, tuples to lists, floats rounded."""
    if isinstance(value, RunSummary):
        return summary(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float):
        return round(value, FLOAT_DIGITS)
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def summary(run: RunSummary) -> dict[str, Any]:
    """A run's figures, its mode shown as its label first and its variant after its spread
    (``ModeSpec.from_label`` reads the two back)."""
    body: dict[str, Any] = {"mode": run.spec.label}
    for f in dataclasses.fields(run):
        if f.name != "spec":
            body[f.name] = to_json(getattr(run, f.name))
        if f.name == "throughput_spread":
            body["variant"] = run.spec.variant
    return body


def render(report: Report) -> dict[str, Any]:
    body = to_json(report)
    return {**{key: body.pop(key) for key in LEADING_KEYS}, **body}


def document(report: Report, *, timelines: bool = False) -> str:
    """The JSON document as text. Each run's timeline is left out unless asked for: the summaries
    are the contract, and a timeline holds every batch and sample."""
    body = render(report if timelines else dataclasses.replace(report, timelines=()))
    if not timelines:
        del body["timelines"]  # converted empty: every batch and sample is never walked
    return json.dumps(body, indent=2, allow_nan=False) + "\n"
