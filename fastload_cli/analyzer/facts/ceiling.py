"""The free-input comparison: the ceiling (and its noise), the copies to the GPU, and how the
step ran beside the loaders against free inputs (contention, a starved step, full cores)."""

from __future__ import annotations

import math
from collections.abc import Callable

from fastload_cli.analyzer import noise
from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts.epochs import EpochFacts, boundaries_alone
from fastload_cli.analyzer.metrics import step_slowdown
from fastload_cli.records import RunSummary


class CeilingFacts(EpochFacts):
    __slots__ = ()

    @property
    def ceiling(self) -> float | None:
        """How much faster training would run with free inputs: ``steady_ceiling``, over whole
        epochs where the workers start again every epoch (``restart_gain``)."""
        steady = self.steady_ceiling
        return steady * self.restart_gain if steady is not None else None

    @property
    def steady_ceiling(self) -> float | None:
        """How much faster training ran with free inputs: the synthetic run's throughput over the
        real one's; where the two were measured again, the geometric mean of each pair's (a
        shared machine's pace drifts between pairs far more than within one, and the pooled
        runs' throughputs would weigh the pair that ran slower by its longer windows)."""
        return self._across_pairs(free_speedup) if self.pairs else free_speedup(self.synthetic, self.real)

    @property
    def pair_ceilings(self) -> tuple[float, ...]:
        """Each pair's ceiling, where real and synthetic were measured again, as ``ceiling`` makes it."""
        found, gain = (free_speedup(synthetic, real) for real, synthetic in self.pairs), self.restart_gain
        return tuple(c * gain for c in found if c is not None)

    @property
    def restart_steps_s(self) -> float | None:
        """An epoch of the real run's steps, where its workers start again every epoch and its
        figure leaves that start-up out, or None. Its window then held no epoch's start, or the
        comparison is over its steps alone (``boundaries_alone``); where both windows crossed
        epoch boundaries, the real throughput holds the start-ups already."""
        real, epoch = self.real, self.epoch_s
        if self.startup_s is None or real is None or epoch is None:
            return None
        if not real.epoch_boundaries:
            return epoch
        rate, steps = real.throughput_samples_per_s, real.steps_samples_per_s
        if not boundaries_alone(real, self.synthetic) or not rate or not steps:
            return None
        return epoch * rate / steps

    @property
    def restart_gain(self) -> float:
        """What free inputs save over whole epochs beyond the steps, where the workers start again
        every epoch for at least ``RESTART_NOTABLE`` of it: (start-up + an epoch's steps) / the
        epoch's steps. A free input pipeline starts no workers; the steady windows leave each
        epoch's start-up out. 1 elsewhere."""
        steps, startup = self.restart_steps_s, self.startup_s
        if not steps or startup is None or startup < th.RESTART_NOTABLE * (startup + steps):
            return 1.0
        return (startup + steps) / steps

    def _across_pairs(self, ratio: Callable[[RunSummary, RunSummary], float | None]) -> float | None:
        """The geometric mean of ``ratio(synthetic, real)`` over the pairs; None where one has none."""
        found = [ratio(synthetic, real) for real, synthetic in self.pairs]
        if not found or any(r is None or r <= 0 for r in found):
            return None
        return math.exp(sum(math.log(r) for r in found if r is not None) / len(found))

    @property
    def transfer_gain(self) -> float | None:
        """How much faster a step ran with its batch already on the GPU than copied there from
        host memory: the two replays' steps, each without the replay's own handing over (its
        data wait), medians."""
        host, device = self.synthetic, self.device_replay
        if host is None or device is None or not host.compute_ms_p50 or not device.compute_ms_p50:
            return None
        return host.compute_ms_p50 / device.compute_ms_p50

    @property
    def transfer_noise(self) -> float:
        """The relative noise of ``transfer_gain``: the two replays' spreads."""
        return noise.between_runs(self.synthetic, self.device_replay)

    @property
    def copies_cost(self) -> bool:
        """Copying the batch to the GPU measurably costs the step: the step with it already on the
        device (synthetic-device) ran faster than with it copied from host memory (synthetic)
        beyond the two replays' noise. Advice about the copies (pinning, uint8) rests on it."""
        gain = self.transfer_gain
        return gain is not None and gain > 1 + self.transfer_noise

    @property
    def transfer_bound(self) -> bool:
        """Copies to the GPU cost the step beyond ``TRANSFER_SIGNIFICANT`` and the replays' noise,
        and more than the rest of the input pipeline (the ceiling) does."""
        gain = self.transfer_gain
        if gain is None or gain < max(th.TRANSFER_SIGNIFICANT, 1 + self.transfer_noise):
            return False
        return self.ceiling is None or gain >= self.ceiling

    @property
    def aug_speedup(self) -> float | None:
        return speedup(self.no_aug, self.real)

    @property
    def noise(self) -> float:
        """The relative throughput difference the real run cannot tell from noise: its measured
        spread, never below what paired runs of one setting differ by on a quiet machine."""
        return noise.of_run(self.real)

    @property
    def ceiling_noise(self) -> float:
        """The relative noise of the ceiling (``noise_against`` the synthetic run); where real and
        synthetic were measured again, the larger of how far the pairs' ceilings differ (half their
        range, as a share of the ceiling) and each pair's own noise over the square root of their
        number, the drift between the pairs left out."""
        ceilings, ceiling = self.pair_ceilings, self.ceiling
        if not self.pairs or not ceilings or not ceiling:
            return self.noise_against(self.synthetic)
        return noise.over_pairs(ceilings, ceiling, [noise.between_runs(r, s) for r, s in self.pairs])

    def noise_against(self, other: RunSummary | None) -> float:
        """The relative noise of a speedup between the real run and ``other`` (``noise.between_runs``)."""
        return noise.between_runs(self.real, other)

    @property
    def contention(self) -> float | None:
        """How much slower the step itself ran beside the real input pipeline than with free inputs;
        pair by pair, as the ceiling, where the two were measured again."""
        if self.pairs:
            return self._across_pairs(lambda synthetic, real: step_slowdown(real, synthetic))
        return step_slowdown(self.real, self.synthetic)

    @property
    def concurrent_loading(self) -> bool:
        """Loading runs beside the step (workers, a pin-memory thread), so it can slow the step.

        Without it (num_workers=0, no pinning) loading happens only inside the wait, and a slower
        step in the real run cannot be the input pipeline's doing.
        """
        return self.loader is not None and (self.loader.num_workers > 0 or self.loader.pin_memory)

    @property
    def wait_caps_ceiling(self) -> bool:
        """Nothing loads beside the step (``concurrent_loading``), so free inputs can save the
        loop's wait and no more: a ceiling of at most ``1 / (1 - wait)``, and that cap lies under
        ``CEILING_COMPUTE_BOUND`` by the runs' noise. A ceiling from the runs that reads between the
        two is their noise, and no second pair of runs can turn the verdict from compute-bound:
        heavy_model.py (no workers, its loop waiting 0% of the time) read 1.09x beside the 1.15x
        line in one run of three, and measured the pair again, 3 s of a 9 s diagnosis."""
        wait = self._wait_alone
        if wait is None or wait >= 1:
            return False
        return (1 + self.ceiling_noise) / (1 - wait) < th.CEILING_COMPUTE_BOUND

    @property
    def compute_either_side(self) -> bool:
        """Nothing loads beside the step (``concurrent_loading``) and the loop waited for data less
        than ``WAIT_COMPUTE_BOUND``: the verdict reads compute-bound on either side of
        ``CEILING_COMPUTE_BOUND``, a ceiling over that line (under ``CEILING_INPUT_BOUND``) being one
        the input pipeline cannot explain (run-to-run noise), so no second pair near the line can
        turn the verdict. heavy_model.py (no workers, its loop waiting 0.4% of the time) read
        1.22x and, at ±15% noise, 0.99x on a slower machine, and measured the pair again both
        times, 4-7 s of a 14-16 s diagnosis, to read compute-bound each time."""
        wait = self._wait_alone
        return wait is not None and wait < th.WAIT_COMPUTE_BOUND

    @property
    def _wait_alone(self) -> float | None:
        """The real run's data wait where a loader was seen and nothing loads beside the step
        (``concurrent_loading``): all the loading there is happens inside it. None otherwise."""
        if self.loader is None or self.concurrent_loading or self.real is None:
            return None
        return self.real.data_wait_fraction

    @property
    def contended(self) -> bool:
        """The loaders measurably slow the step: ``step_slowed``, or ``step_starved``."""
        return self.step_slowed or self.step_starved

    @property
    def step_slowed(self) -> bool:
        """The step ran slower beside the loaders than with free inputs by ``CONTENTION_SIGNIFICANT``,
        or by more than the runs' noise and the compute-bound line (1.15x), the line a ceiling from
        the same two runs is held to."""
        c = self.contention
        if not self.concurrent_loading or c is None or self.loaders_nearly_idle:
            return False
        return c >= min(th.CONTENTION_SIGNIFICANT, max(th.CEILING_COMPUTE_BOUND, 1 + self.ceiling_noise))

    @property
    def cpu_regained(self) -> float | None:
        """How much more CPU the training process had with free inputs than beside the real input
        pipeline (its CPU share over each run), or None without both."""
        real, synthetic = self.real, self.synthetic
        if real is None or synthetic is None or not real.main_cpu_percent or synthetic.main_cpu_percent is None:
            return None
        return synthetic.main_cpu_percent / real.main_cpu_percent

    @property
    def step_starved(self) -> bool:
        """Every core was busy beside the loaders, the training process had at least
        ``CPU_REGAINED_SIGNIFICANT`` more CPU with free inputs, and its step ran faster there: the
        loaders took that CPU from the step. Read from CPU shares, which vary far less between runs
        than the step's time, where the step's own slowdown stays inside its runs' noise."""
        regained, c = self.cpu_regained, self.contention
        if not self.concurrent_loading or not self.cores_saturated or regained is None or c is None:
            return False
        return regained >= th.CPU_REGAINED_SIGNIFICANT and c > 1 and not self.loaders_nearly_idle

    @property
    def loaders_nearly_idle(self) -> bool:
        """The real run's workers were on a CPU, or waiting for one, less than ``LOADER_NEARLY_IDLE``
        of the time: they cannot have slowed the step. Not said of loading in the main process."""
        busy = self.real.loader_busy_fraction if self.real is not None else None
        workers = self.loader.num_workers if self.loader is not None else 0
        return bool(workers) and busy is not None and busy < th.LOADER_NEARLY_IDLE

    @property
    def cores_saturated(self) -> bool:
        """Every core was busy in the real run: the one reading of it that every rule shares, so no
        recommendation asks for more parallel loading while a note says the cores are full."""
        system = self.real.system_cpu_busy_fraction if self.real is not None else None
        return system is not None and system >= th.CPU_SATURATED


def free_speedup(free: RunSummary | None, real: RunSummary | None) -> float | None:
    """How much faster a run with free inputs trained than the real one, steps against steps where
    only the real run's window crossed an epoch boundary (``boundaries_alone``): free inputs leave
    an epoch's start and end as they are, and the replay never reached one."""
    if not boundaries_alone(real, free) or free is None or real is None:
        return speedup(free, real)
    rate, steps = free.throughput_samples_per_s, real.steps_samples_per_s
    return rate / steps if rate is not None and steps else None


def speedup(faster: RunSummary | None, base: RunSummary | None) -> float | None:
    if faster is None or base is None:
        return None
    a, b = faster.throughput_samples_per_s, base.throughput_samples_per_s
    return a / b if a is not None and b else None
