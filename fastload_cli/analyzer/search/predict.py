"""Throughput against num_workers, predicted from measured rates before the settings are measured.

As the published tuners do (tf.data's AUTOTUNE, Plumber), the prediction solves for the
parallelism from the rates of the stages instead of walking up a ladder:

- the **consumer**: samples per second the step takes when inputs are free (the synthetic run;
  without one, the step's time outside the data wait);
- **one worker**: samples per second one worker produces while the loop waits on the workers
  (their throughput over their count). It covers what the worker waits on (storage latency) as
  well as what it computes, so latency-bound loading scales with more workers past the cores;
- **the cores**: the loaders' and the main process's CPU seconds per sample; together they
  cannot use more than the machine's cores (the ``cores / (loader + main CPU per sample)``
  limit where CPU-bound loading flattens);
- **the main process**: without workers, each sample is loaded between steps, in series.

``throughput(n) = min(consumer, n x worker, cores limit)`` for ``n >= 1`` and
``1 / (1/consumer + load time per sample)`` for ``n = 0``. Where an epoch is too short for a
steady window at ``n`` (the sweep then measures whole epochs), each epoch also pays its start-up:
the main process starting ``n`` workers one by one, then one worker's first batch (both read
from the script's own run's first batch after ``iter()``), and at its end the shutdown of its
``n`` workers (``WORKER_STOP_S`` each). The setting to try first is the fewest
workers within ``SWEEP_PREFER_FEWER_WITHIN`` of the highest predicted throughput: there returns
end. The storage system's own limit and the memory per worker are not predicted: the measured
points show the first, and the sweep's memory budget caps the second. Pure functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fastload_cli.analyzer import thresholds as th
from fastload_cli.records import RunSummary

# The loop waiting on data less than this share of its time: the workers are not the limit, so
# their throughput over their count is only a lower bound of what one worker can produce.
LOADER_BOUND_WAIT = 0.05


@dataclass(frozen=True, slots=True)
class Rates:
    """What one measured run says about the pipeline's stages, per sample."""

    consumer_per_s: float | None  # samples/s the step takes with free inputs (None: not known)
    worker_per_s: float  # samples/s one worker produces (a lower bound when ``bound`` is False)
    bound: bool  # the loop waited on the loaders: worker_per_s is what one worker can produce
    loader_cpu_s: float  # loader CPU seconds per sample (workers, or the main process's loading)
    main_cpu_s: float  # the main process's CPU seconds per sample, loading aside
    cores: int | None  # cores the run's processes may use
    serial_s: float  # seconds to load one sample in the main process, between steps
    measured_at: int = 0  # the num_workers setting the rates were measured at
    first_batch_s: float = 0.0  # an epoch's start: the first batch, loaded by one worker
    fork_s: float = th.WORKER_START_S  # the main process's time to start each worker


@dataclass(frozen=True, slots=True)
class Curve:
    """Predicted throughput (samples/s) at each num_workers setting, and where returns end."""

    points: tuple[tuple[int, float], ...]  # (workers, samples/s), every setting from 0 up
    best: int  # the fewest workers within a few percent of the highest predicted throughput
    limit: str  # what the plateau is: "the step", "the cores", or "--max-workers"
    consumer_per_s: float | None = None  # samples/s the step takes with free inputs, where known
    consumer_noise: float = 0.0  # the relative noise of that rate: the synthetic run's spread

    def at(self, workers: int) -> float | None:
        return next((rate for n, rate in self.points if n == workers), None)


@dataclass(frozen=True, slots=True)
class Epochs:
    """Epochs too short for a steady window at some settings: those are measured over whole
    epochs, each one's start-up (a worker started per worker, then a first batch) included."""

    samples: int  # samples in one epoch
    whole_from: int  # settings from this many workers up are measured over whole epochs


def rates(run: RunSummary, consumer_per_s: float | None, cores: int | None) -> Rates | None:
    """The stages' rates from one run of the script (any num_workers); None when it measured no
    throughput."""
    rate = run.throughput_samples_per_s
    if not rate or rate <= 0:
        return None
    workers = run.num_workers or 0
    wait = run.data_wait_fraction or 0.0
    workers_cpu = (run.workers_cpu_percent or 0.0) / 100
    main_cpu = (run.main_cpu_percent or 0.0) / 100
    if consumer_per_s is None and run.compute_ms_p50 and run.samples and run.batches:
        consumer_per_s = (run.samples / run.batches) / (run.compute_ms_p50 / 1000)
    if workers == 0:  # the loop loads each sample itself: its wait is the loading time
        serial = wait / rate
        on_cpu = run.loader_busy_fraction if run.loader_busy_fraction is not None else 1.0
        loading_cpu = min(main_cpu, wait * on_cpu)  # what of the wait the main thread spent on a CPU
        return Rates(
            consumer_per_s=consumer_per_s,
            worker_per_s=1 / serial if serial > 0 else math.inf,
            bound=wait >= LOADER_BOUND_WAIT,
            loader_cpu_s=loading_cpu / rate,
            main_cpu_s=(main_cpu - loading_cpu) / rate,
            cores=cores,
            serial_s=serial,
            measured_at=0,
            first_batch_s=(run.samples / run.batches) * serial if run.batches else 0.0,
        )
    per_worker = rate / workers
    bound = wait >= LOADER_BOUND_WAIT
    batch = run.samples / run.batches if run.batches else 0.0
    first = min(run.startup_s or 0.0, batch / per_worker)  # a batch made by one worker, at most the start-up
    fork = max(0.0, (run.startup_s or 0.0) - first) / workers  # the rest: starting the workers, one by one
    return Rates(
        consumer_per_s=consumer_per_s if bound else rate,  # the loop hardly waited: its rate is the step's
        worker_per_s=per_worker,
        bound=bound,
        loader_cpu_s=workers_cpu / rate,
        main_cpu_s=main_cpu / rate,
        cores=cores,
        serial_s=1 / per_worker,
        measured_at=workers,
        first_batch_s=first,
        fork_s=fork if run.startup_s else th.WORKER_START_S,
    )


def predict(r: Rates, max_workers: int, epochs: Epochs | None = None) -> Curve:
    """Throughput at every setting from 0 to ``max_workers``, from the stages' rates; where
    ``epochs`` says a setting is measured over whole epochs, each epoch's start-up included."""
    consumer = r.consumer_per_s if r.consumer_per_s and r.consumer_per_s > 0 else math.inf
    cpu = r.loader_cpu_s + r.main_cpu_s
    cores = r.cores / cpu if r.cores and cpu > 0 else math.inf
    points = [(0, 1 / (1 / consumer + r.serial_s) if r.serial_s > 0 else min(consumer, cores))]
    for n in range(1, max_workers + 1):
        # Workers the loop did not wait on could each produce more than measured: up to the
        # measured count their rate is a lower bound, past it they are taken to keep up.
        per_worker = r.worker_per_s if r.bound or n <= r.measured_at else math.inf
        steady = min(consumer, n * per_worker, cores)
        if epochs is not None and n >= epochs.whole_from and math.isfinite(steady):
            steady = epochs.samples / (r.first_batch_s + n * (r.fork_s + th.WORKER_STOP_S) + epochs.samples / steady)
        points.append((n, steady))
    finite = [(n, rate) for n, rate in points if math.isfinite(rate)]
    if not finite:
        return Curve(points=(), best=0, limit="nothing measured limits it")
    top = max(rate for _, rate in finite)
    best = min(n for n, rate in finite if rate >= top * (1 - th.SWEEP_PREFER_FEWER_WITHIN))
    limit = "the step" if top >= consumer * 0.999 else "the cores" if top >= cores * 0.999 else "--max-workers"
    measured_consumer = r.consumer_per_s if r.consumer_per_s and math.isfinite(r.consumer_per_s) else None
    return Curve(points=tuple(finite), best=best, limit=limit, consumer_per_s=measured_consumer)


def from_runs(
    own: RunSummary | None,
    synthetic: RunSummary | None,
    cores: int | None,
    max_workers: int,
    epochs: Epochs | None = None,
) -> Curve | None:
    """The prediction a sweep starts from: the script's own run, and the synthetic run's rate."""
    if own is None:
        return None
    consumer = synthetic.throughput_samples_per_s if synthetic is not None else None
    found = rates(own, consumer, cores)
    if found is None:
        return None
    spread = synthetic.throughput_spread if synthetic is not None and consumer is not None else None
    return replace(predict(found, max_workers, epochs), consumer_noise=spread or 0.0)


def error(curve: Curve, measured: Sequence[tuple[int, float]]) -> float | None:
    """The median relative error of the prediction at the measured settings other than the one it
    was made from (``measured``: workers and samples/s)."""
    errors = sorted(
        abs(predicted - rate) / rate for n, rate in measured if rate > 0 and (predicted := curve.at(n)) is not None
    )
    if not errors:
        return None
    middle = len(errors) // 2
    return errors[middle] if len(errors) % 2 else (errors[middle - 1] + errors[middle]) / 2
