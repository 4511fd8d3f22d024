"""CI gates: limits a user sets on a report, judged after it is written (exit code 3 on a failure).

A gate either passes, fails, or cannot be judged because the report lacks the figure it needs
(the real run failed, the baseline has no mode in common): that is never a pass, and the command
line turns it into a usage error. Every result is one sentence naming the figure and the limit.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.compare import Comparison, Figures, ModeChange, compare, figures
from fastload_cli.config import DEFAULT_MAX_REGRESSION
from fastload_cli.formatting import pct, samples_rate
from fastload_cli.records import Bottleneck, Mode, ModeSpec, Report

INPUT_BOUND = "input-bound"
# What --fail-on input-bound means: the input pipeline (cpu, io) or the way inputs reach the
# device (transfer, host); "transfer" and "host" are only ever decided on a GPU.
INPUT_BOUND_VERDICTS = frozenset({Bottleneck.CPU, Bottleneck.IO, Bottleneck.TRANSFER, Bottleneck.HOST})


class GateStatus(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    UNMEASURED = "unmeasured"  # the report lacks the figure: a usage error, never a pass


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    gate: str  # the option as the user gave it: "--max-data-wait 0.2"
    status: GateStatus
    message: str  # the figure, the limit, and what they say


@dataclass(frozen=True, slots=True, kw_only=True)
class Gates:
    """The limits given on the command line; empty when none was."""

    fail_on: frozenset[Bottleneck] = frozenset()
    fail_on_text: str = ""  # as given, for messages
    max_data_wait: float | None = None  # fraction of the real run's step
    min_throughput: float | None = None  # samples/s of the real run
    baseline: Figures | None = None
    max_regression: float = DEFAULT_MAX_REGRESSION  # percent

    def __bool__(self) -> bool:
        return bool(self.fail_on) or any(
            v is not None for v in (self.max_data_wait, self.min_throughput, self.baseline)
        )


def parse_fail_on(text: str) -> frozenset[Bottleneck]:
    """``input-bound`` or verdict names, comma-separated; ValueError names what is not one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("expected a verdict name")
    found: set[Bottleneck] = set()
    for name in names:
        if name == INPUT_BOUND:
            found |= INPUT_BOUND_VERDICTS
            continue
        try:
            found.add(Bottleneck(name))
        except ValueError:
            known = ", ".join([INPUT_BOUND, *(b.value for b in Bottleneck)])
            raise ValueError(f"'{name}' is not a verdict; choose from {known}") from None
    return frozenset(found)


def parse_fraction(text: str) -> float:
    """``0.2`` or ``20%`` as a fraction in 0..1; ValueError otherwise."""
    value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    if not 0 <= value <= 1:
        raise ValueError(f"{text} is not a fraction between 0 and 1 (or a percentage such as 20%)")
    return value


# --------------------------------------------------------------------------------------------
# Judging a report
# --------------------------------------------------------------------------------------------


def evaluate(report: Report, gates: Gates) -> tuple[GateResult, ...]:
    results: list[GateResult] = []
    if gates.fail_on:
        results.append(_verdict_gate(report, gates))
    if gates.max_data_wait is not None:
        results.append(_data_wait_gate(report, gates.max_data_wait))
    if gates.min_throughput is not None:
        results.append(_throughput_gate(report, gates.min_throughput))
    if gates.baseline is not None:
        results.extend(_baseline_gates(compare(gates.baseline, figures(report)), gates.max_regression))
    return tuple(results)


def _verdict_gate(report: Report, gates: Gates) -> GateResult:
    verdict = report.verdict
    gate = f"--fail-on {gates.fail_on_text}"
    if verdict.bottleneck in gates.fail_on:
        return GateResult(
            gate=gate,
            status=GateStatus.FAILED,
            message=f"the verdict is {verdict.bottleneck.value} ({verdict.label}), which {gate} fails on",
        )
    return GateResult(gate=gate, status=GateStatus.PASSED, message=f"the verdict is {verdict.bottleneck.value}")


def _real_run(report: Report) -> tuple[float | None, float | None, str | None]:
    """The real run's data wait and throughput, or why they were not measured."""
    run = next((r for r in report.runs if r.spec == ModeSpec(mode=Mode.REAL)), None)
    if run is None:
        return None, None, f"the {report.command.value} report has no real run"
    if run.batches == 0 or run.error is not None:
        return None, None, f"the real run measured no steady batch ({run.error or run.status.value})"
    return run.data_wait_fraction, run.throughput_samples_per_s, None


def _data_wait_gate(report: Report, limit: float) -> GateResult:
    wait, _, missing = _real_run(report)
    gate = f"--max-data-wait {limit:g}"
    if wait is None:
        return GateResult(gate=gate, status=GateStatus.UNMEASURED, message=missing or "data wait was not measured")
    status = GateStatus.FAILED if wait > limit else GateStatus.PASSED
    relation = "above" if wait > limit else "within"
    return GateResult(
        gate=gate, status=status, message=f"data wait {pct(wait)} of the real run is {relation} {gate} ({pct(limit)})"
    )


def _throughput_gate(report: Report, limit: float) -> GateResult:
    _, throughput, missing = _real_run(report)
    gate = f"--min-throughput {limit:g}"
    if throughput is None:
        return GateResult(gate=gate, status=GateStatus.UNMEASURED, message=missing or "throughput was not measured")
    status = GateStatus.FAILED if throughput < limit else GateStatus.PASSED
    relation = "below" if throughput < limit else "at or above"
    return GateResult(
        gate=gate,
        status=status,
        message=f"throughput {samples_rate(throughput)} of the real run is {relation} {gate} samples/s",
    )


# --------------------------------------------------------------------------------------------
# Against a baseline
# --------------------------------------------------------------------------------------------


def _baseline_gates(comparison: Comparison, max_regression: float) -> list[GateResult]:
    gate = f"--baseline {comparison.before.source} --max-regression {max_regression:g}"
    compared = [m for m in comparison.modes if m.changes]
    if not compared:
        return [
            GateResult(
                gate=gate,
                status=GateStatus.UNMEASURED,
                message=f"no mode measured in both this run and {comparison.before.source}",
            )
        ]
    results = [result for mode in compared for result in _mode_gates(mode, gate, max_regression / 100)]
    if not results:  # modes in common, but not one figure both reports measured
        no_figure = f"no throughput or data wait measured in both this run and {comparison.before.source}"
        return [GateResult(gate=gate, status=GateStatus.UNMEASURED, message=no_figure)]
    return results


def _mode_gates(mode: ModeChange, gate: str, limit: float) -> list[GateResult]:
    results = []
    for figure, unit in (("throughput", "%"), ("data wait", " points")):
        change = mode.figure(figure)
        if change is not None and change.worse is not None:
            status, message = _judge(change.worse, change.noise, limit, unit)
            direction = "worse" if change.worse > 0 else "better"
            what = f"{mode.mode}: {figure} {direction} by {100 * abs(change.worse):.1f}{unit}"
            results.append(GateResult(gate=gate, status=status, message=f"{what}, {message}"))
    return results


def _judge(worse: float, noise: float | None, limit: float, unit: str) -> tuple[GateStatus, str]:
    """A change that is worse beyond the limit fails, unless the runs' own noise covers it; noise
    beyond ``GATE_MAX_NOISE`` covers nothing: the gate cannot judge the change."""
    allowed = f"{100 * limit:g}{unit}"
    if worse <= limit:
        return GateStatus.PASSED, f"within {allowed}"
    if noise is not None and noise > th.GATE_MAX_NOISE:
        limit_text = f"±{100 * th.GATE_MAX_NOISE:g}{unit}"
        return (
            GateStatus.UNMEASURED,
            f"the runs' noise (±{100 * noise:.1f}{unit}) is beyond the {limit_text} a change can be judged against",
        )
    if noise is not None and worse <= noise:
        inside = f"inside the runs' noise (±{100 * noise:.1f}{unit})"
        return GateStatus.PASSED, f"beyond {allowed} but {inside}: not a regression"
    measured = f"noise ±{100 * noise:.1f}{unit}" if noise is not None else "noise not measured"
    return GateStatus.FAILED, f"beyond --max-regression {allowed} ({measured})"
