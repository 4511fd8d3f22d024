"""A command's steps, executed: what runs next is its plan's to decide (``plan``), never here.

``execute`` asks the plan for a step, runs it, records what it measured, and asks again, until
the plan has no step left. The first run must measure something, or the script cannot be
diagnosed (a ``FastloadError`` says why). Ctrl-C ends the sequence: the runs so far are kept,
the interrupted one included. Every command returns an ``Outcome``: each run with its summary
(computed once, here), the sweep limits in force, and the breakdown when one ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from fastload_cli import plan
from fastload_cli.config import RunConfig
from fastload_cli.plan import Keep, Outcome, Plan, Step
from fastload_cli.records import Measured, ModeSpec, RunResult
from fastload_cli.runner.launch import Observer, run_mode
from fastload_cli.samplers.gpu import Nvml
from fastload_cli.samplers.host import available_memory

ObserverFactory = Callable[[ModeSpec], Observer]
NoteSink = Callable[[ModeSpec | None, str], None]  # a note on a mode's run, or on the command


@dataclass(frozen=True, slots=True)
class StepRunner:
    """Runs one step at a time, with what every command's runs share."""

    base: RunConfig
    nvml: Nvml | str | None
    observe: ObserverFactory
    on_note: NoteSink = lambda spec, message: None

    def take(self, step: Step, outcome: Outcome) -> Outcome:
        """``step`` executed: its notes told, its run made, what it measured recorded."""
        for spec, message in step.notes:
            self.on_note(spec, message)
        config = step.config
        if config is None:
            return plan.recorded(outcome, step)
        if step.keep is Keep.BREAKDOWN:  # one rank's pipeline timed in-process: neither sampled nor summarised
            return plan.recorded(outcome, step, raw=run_mode(config, None, Observer()))
        found, superseded = self.measure(config, first=step.first)
        return plan.recorded(outcome, step, found, superseded=superseded)

    def measure(self, config: RunConfig, *, first: bool = False) -> tuple[Measured, RunResult | None]:
        """One run and its summary; measured again where the plan says other processes skewed it,
        the run not kept second. ``first``: the run that must measure something
        (``plan.check_measurable``)."""
        run = run_mode(config, self.nvml, self.observe(config.spec))
        if first:
            plan.check_measurable(run, config.python)
        found = plan.measured(run)
        why = plan.why_again(found, config)
        if why is None:
            return found, None
        self.on_note(config.spec, why)
        again = plan.measured(run_mode(config, self.nvml, self.observe(config.spec)))
        kept = plan.kept(found, again)
        return kept, (again if kept is found else found).run


def execute(command: Plan, runner: StepRunner, done: Outcome | None = None, started: float | None = None) -> Outcome:
    """Each step ``command`` gives, until it gives none or a run is interrupted (Ctrl-C keeps the
    runs so far). ``done``: what was measured already (the plan goes on from its last step);
    ``started``: when the command started (``time.monotonic``), now unless given."""
    started = time.monotonic() if started is None else started
    outcome = command.start() if done is None else done
    try:
        while True:
            state = plan.at(command, outcome, runner.base, time.monotonic() - started, available_memory())
            step = command.next_step(state)
            if step is None:
                return outcome
            outcome = runner.take(step, outcome)
            if outcome.interrupted:
                return outcome
    except KeyboardInterrupt:  # between two runs: the finished ones are kept
        return replace(outcome, interrupted=True)
