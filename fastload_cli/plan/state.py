"""``State``: what a plan reads to decide its next step, built once per step.

The measured runs and the steps taken (``Outcome``), the command's run configuration, and what
the session hands in as values: the seconds since the command started and the memory free now.
The analysis of the runs and the search's state are computed on first use, at most once a step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from fastload_cli.analyzer import Analysis, analyze, search
from fastload_cli.analyzer import thresholds as th
from fastload_cli.config import RunConfig
from fastload_cli.plan.outcome import Outcome
from fastload_cli.plan.step import Part, Step
from fastload_cli.records import RunResult


@dataclass(frozen=True, kw_only=True)
class State:
    outcome: Outcome
    base: RunConfig  # the command's run configuration, as asked
    elapsed_s: float = 0.0  # since the command started
    free_memory_bytes: int | None = None  # free now, while no run is going
    sizing: RunConfig | None = field(default=None)  # what the search sizes its steps from (default: base)

    @cached_property
    def analysis(self) -> Analysis:
        """What the runs so far say."""
        o = self.outcome
        return analyze(o.runs, o.limits, o.breakdown, summaries=o.summaries)

    @cached_property
    def search_state(self) -> search.State:
        """What the num_workers search knows after the runs so far."""
        base = self.sizing or self.base
        sizing = search.Sizing(warmup=base.warmup, max_batches=base.max_batches, job=base.launcher is not None)
        o = self.outcome
        limits = o.limits or search.Limits()
        return search.state(o.runs, o.summaries, limits, sizing, in_process_short=o.in_process_short)

    @property
    def runs(self) -> tuple[RunResult, ...]:
        return self.outcome.runs

    @property
    def multi_node(self) -> bool:
        launcher = self.base.launcher
        return launcher is not None and launcher.multi_node

    def taken(self, part: Part) -> tuple[Step, ...]:
        """The steps of ``part`` taken so far, in order."""
        return tuple(s for s in self.outcome.taken if s.part is part)

    def cache_bound(self) -> int:
        """What a run may decode into memory: a share of the memory free now (``RAM_CACHE_SHARE``)."""
        free = self.free_memory_bytes
        return int(free * th.RAM_CACHE_SHARE) if free is not None else 0

    def with_cache(self, config: RunConfig) -> RunConfig:
        """``config`` with what the cached mode (and the cache-decoded fix) may decode into memory:
        the samples of the warm-up's batches and ``CACHE_FILL_BATCHES`` more (fewer where the run
        asks for fewer), in at most ``cache_bound``. A run that goes on past them draws its samples
        from those decoded again (``CachedView``): served from memory as fast as any, so filling
        more would only add decoding time before the run's first batch."""
        batches = min(config.requested_batches, config.warmup + th.CACHE_FILL_BATCHES)
        return config.with_child(cache_batches=batches, cache_bytes=self.cache_bound())

    def sweep_limits(self, max_workers: int, grid: tuple[int, ...] | None = None) -> search.Limits:
        """The sweep's limits on this machine: its free memory now (``SWEEP_MEMORY_SHARE``)."""
        free = self.free_memory_bytes
        budget = int(free * th.SWEEP_MEMORY_SHARE) if free is not None else None
        return search.Limits(max_workers=max_workers, memory_budget_bytes=budget, grid=grid)
