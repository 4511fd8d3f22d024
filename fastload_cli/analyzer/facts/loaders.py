"""The loaders and the batch: how many workers, whether they compete with the step or wait on
storage, whether their batches cost less to build than to hand over."""

from __future__ import annotations

from fastload_cli.analyzer import thresholds as th
from fastload_cli.analyzer.facts.ceiling import CeilingFacts
from fastload_cli.analyzer.facts.sweep import SweepFacts


class LoaderFacts(CeilingFacts, SweepFacts):
    __slots__ = ()

    @property
    def num_workers(self) -> int | None:
        return self.loader.num_workers if self.loader is not None else None

    @property
    def cores_per_rank(self) -> int | None:
        """The cores one process's loading may use: the node's, shared by its local ranks."""
        return None if self.cpu_count is None else max(1, self.cpu_count // self.ranks_per_node)

    @property
    def loading_cores_needed(self) -> float | None:
        """The cores the loading processes would need to feed the step at the free-input rate:
        their CPU seconds per sample in the real run times that rate."""
        real, free = self.real, self.synthetic
        if real is None or free is None or not real.throughput_samples_per_s or not free.throughput_samples_per_s:
            return None
        cpu = real.workers_cpu_percent if real.num_workers else None
        if not cpu:
            return None
        return cpu / 100 / real.throughput_samples_per_s * free.throughput_samples_per_s

    @property
    def loaders_cost_the_step(self) -> bool:
        """The loaders measurably slow the step, or are known to: workers handing over batches
        cheaper to build than to hand over cost the step CPU by construction."""
        return self.contended or (self.cheap_batches is not None and self.concurrent_loading)

    @property
    def loaders_compete(self) -> bool:
        """The workers keep up (on a CPU less than ``LOADER_BUSY`` of the time, nothing showing them
        wait on storage, and, where they were on a CPU more than ``LOADER_IDLE`` of it, the loop
        waiting less than ``WAIT_INPUT_BOUND``) while every core is busy or the step slows beside
        them: the CPU they use is the step's, and fewer workers may train faster, whatever cause the
        verdict names. The sweep reads its points by the same ``LOADER_BUSY`` (``search.state``)."""
        real = self.real
        busy = real.loader_busy_fraction if real is not None else None
        if real is None or busy is None or not self.num_workers or busy >= th.LOADER_BUSY:
            return False
        if self.storage_evidence is not None:
            return False
        behind = busy > th.LOADER_IDLE and (real.data_wait_fraction or 0.0) >= th.WAIT_INPUT_BOUND
        return not behind and (self.cores_saturated or self.contended)

    @property
    def storage_evidence(self) -> str | None:
        """What shows the real run waiting on storage or latency, in words, or None.

        Reads from storage, iowait, a loop that waits for data while the loaders sleep, or more
        sleeping loaders that trained faster (``_more_reads_in_flight``). Loaders that sleep prove
        nothing alone: workers that keep up sleep because their queue is full, and then the loop
        does not wait. Nor does a wait beside loaders busy more than ``LOADER_IDLE``:
        batches are delivered in order, so the loop waits on the worker computing the next one
        while the others sleep on their full queues. Nor does a wait where fewer workers trained
        faster (``_fewer_workers_faster``): loaders waiting on latency need company to hide it,
        so the wait was handing batches over on contended cores.
        """
        real = self.real
        if real is None:
            return None
        rate, iowait, wait = real.read_bytes_per_s, real.iowait_fraction, real.data_wait_fraction
        blocked, busy = real.loader_blocked_fraction, real.loader_busy_fraction
        if rate is not None and self.reads_are_evidence:
            return f"the run read {rate / 1e6:.1f} MB/s from storage"
        if iowait is not None and iowait >= th.IOWAIT_NOTABLE:
            return f"{100 * iowait:.0f}% of CPU time was iowait"
        if blocked is not None and blocked >= th.LOADER_BLOCKED_NOTABLE:
            return f"the loaders were blocked on storage in {100 * blocked:.0f}% of samples"
        asleep = busy is None or busy <= th.LOADER_IDLE
        if wait is not None and wait >= th.WAIT_INPUT_BOUND and asleep and not self._fewer_workers_faster:
            return f"the loop waited for data {100 * wait:.0f}% of the time while the loaders slept"
        return self._more_reads_in_flight if asleep else None

    @property
    def _fewer_workers_faster(self) -> bool:
        """A sweep measured fewer workers than the script's own faster, beyond its noise."""
        found, current = self.sweep, self.num_workers
        best = found.recommended_workers if found is not None else None
        return self.sweep_gain is not None and current is not None and best is not None and best < current

    @property
    def _more_reads_in_flight(self) -> str | None:
        """A sweep measured more workers faster beyond its noise (``sweep_gain``), on cores neither
        full nor slowing the step, with loaders asleep: more of them, each as idle, put more reads
        in flight. Loaders that keep up, sleeping on a full queue, gain nothing from company."""
        found, gain, current = self.sweep, self.sweep_gain, self.num_workers
        if found is None or gain is None or current is None or self.cores_saturated or self.contended:
            return None
        more = found.recommended_workers
        if more is None or more <= current:
            return None
        return f"num_workers={more} trained {gain:.2f}x as fast as {current} (the sweep): more reads in flight"

    @property
    def reads_are_evidence(self) -> bool:
        """The real run read at least ``READ_RATE_NOTABLE`` from storage, and the reads can have
        cost loading time (``reads_matter``)."""
        rate = self.real.read_bytes_per_s if self.real is not None else None
        return rate is not None and rate >= th.READ_RATE_NOTABLE and self.reads_matter

    @property
    def reads_matter(self) -> bool:
        """Whether the real run's reads from storage can have cost loading time. Not where the cores
        were full or the step slowed beside the loaders while the loaders were seldom blocked on
        storage, the machine was not in iowait and most of the workers' CPU time was their own
        (under ``KERNEL_READS_SHARE`` in the kernel): there the reads (a page fault, a file opened
        now and then) cost nothing, and loading costs CPU. Storage fast enough never to block
        still costs the kernel's copying, and where that is most of what the workers did on a
        CPU, reading is their work."""
        real = self.real
        if real is None or not (self.cores_saturated or self.contended):
            return True
        blocked, iowait = real.loader_blocked_fraction, real.iowait_fraction
        if blocked is None or blocked >= th.LOADER_BLOCKED_NOTABLE:
            return True  # unmeasured: the reads are taken as they were
        kernel = real.loader_kernel_fraction
        if kernel is not None and kernel >= th.KERNEL_READS_SHARE:
            return True
        return iowait is not None and iowait >= th.IOWAIT_NOTABLE

    @property
    def cheap_batches(self) -> str | None:
        """Why the workers' batches cost less to build than to hand over, or None.

        A dataset of tensors already in memory, or a batch the breakdown timed under the handoff's
        cost: a worker only adds pickling, shared memory and unpickling to it.
        """
        loader = self.loader
        if loader is None or loader.num_workers == 0:
            return None
        if loader.dataset_type in th.IN_MEMORY_DATASETS:
            return f"the dataset is a {loader.dataset_type}: its items are slices of tensors already in memory"
        breakdown = self.breakdown
        if breakdown is not None and breakdown.ms_per_sample is not None and loader.batch_size:
            per_batch_ms = breakdown.ms_per_sample * loader.batch_size
            if per_batch_ms < th.WORKER_HANDOFF_MS:
                return (
                    f"a batch takes {per_batch_ms:.2f} ms to load (measured), less than handing it over from a worker"
                )
        return None
