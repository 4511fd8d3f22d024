"""Samplers: readings of a real process, late-tick counting, and NVML degradation (fake NVML)."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import time
import types

import pytest

from fastload_cli.records import ProcRole
from fastload_cli.samplers.gpu import GpuSampler, open_nvml
from fastload_cli.samplers.host import HostSampler
from fastload_cli.samplers.ticker import Ticker


def test_host_sample_reads_this_process() -> None:
    sampler = HostSampler(os.getpid(), 0.05)
    first = sampler.sample()
    cpu_before = time.process_time()
    while time.process_time() - cpu_before < 0.1:  # burn 100 ms of CPU: ten clock ticks
        pass
    second = sampler.sample()
    main = [p for p in second.procs if p.role is ProcRole.MAIN]
    assert len(main) == 1 and main[0].pid == os.getpid()
    assert main[0].cpu_s > next(p for p in first.procs if p.role is ProcRole.MAIN).cpu_s
    assert second.system.busy_s >= first.system.busy_s
    assert main[0].rss_bytes and main[0].rss_bytes > 0
    assert main[0].blocked is False  # running its own sample, not blocked on storage


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/stat, Linux only")
def test_a_process_is_read_for_when_it_started_on_the_samplers_clock() -> None:
    before = time.monotonic_ns()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        time.sleep(0.2)
        sampler = HostSampler(child.pid, 0.05)
        (found,) = sampler.sample().procs
        tick_ns = 1_000_000_000 // os.sysconf("SC_CLK_TCK")  # the kernel keeps it in clock ticks
        assert (
            found.started_ns is not None and before - tick_ns <= found.started_ns <= time.monotonic_ns() - 150_000_000
        )
    finally:
        child.kill()
        child.wait()


def test_reported_workers_get_the_worker_role() -> None:
    sampler = HostSampler(os.getppid(), 0.05)
    sampler.note_workers([os.getpid()])
    roles = {p.pid: p.role for p in sampler.sample().procs}
    assert roles[os.getpid()] is ProcRole.WORKER


def test_a_worker_is_read_for_its_threads_descriptors_faults_and_when_asked_its_own_memory() -> None:
    sampler = HostSampler(os.getppid(), 0.05)
    sampler.note_workers([os.getpid()])
    mine = lambda sample: next(p for p in sample.procs if p.pid == os.getpid())  # noqa: E731
    first = mine(sampler.sample())  # tick 0: threads, faults and descriptors are read, not the memory map
    assert first.threads and first.threads >= 1 and first.fds and first.fds > 0 and first.thread_cpu_s
    assert first.minor_faults is not None and first.minor_faults > 0 and first.unique_bytes is None
    plain = mine(sampler.sample())  # tick 1: the readings of every tick alone
    assert plain.fds is None and plain.minor_faults is None and plain.thread_cpu_s == () and plain.cpu_s >= 0
    sampler.start()
    sampler.read_memory_now()  # where a measured window starts or ends: every worker's own memory
    samples, _ = sampler.stop()
    asked = [mine(s) for s in samples if any(p.pid == os.getpid() and p.unique_bytes for p in s.procs)]
    assert len(asked) == 1 and asked[0].minor_faults  # the memory map read when asked, and only then


def test_ticker_counts_ticks_that_start_late() -> None:
    def slow() -> int:
        time.sleep(0.03)  # each sample takes three intervals
        return 1

    ticker = Ticker(slow, 0.01, "test")
    ticker.start()
    time.sleep(0.2)
    samples = ticker.stop()
    assert ticker.late_ticks >= 1
    assert len(samples) == ticker.ticks


def test_ticker_keeps_an_error_instead_of_dying_silently() -> None:
    calls = []

    def failing() -> int:
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("boom")
        return 1

    ticker = Ticker(failing, 0.01, "test")
    ticker.start()
    deadline = time.monotonic() + 10
    while ticker.error is None and time.monotonic() < deadline:  # however loaded the machine is
        time.sleep(0.01)
    assert isinstance(ticker.error, RuntimeError)
    with pytest.raises(RuntimeError):
        ticker.stop()  # the final sample fails too, and says so


class FakeError(Exception):
    pass


def fake_nvml(*, init_fails: bool = False, pcie_fails: bool = False) -> types.ModuleType:
    module = types.ModuleType("pynvml")
    module.NVMLError = FakeError
    module.NVML_PCIE_UTIL_RX_BYTES, module.NVML_PCIE_UTIL_TX_BYTES = 1, 0

    def init() -> None:
        if init_fails:
            raise FakeError("Driver Not Loaded")

    def pcie(handle: object, which: int) -> int:
        if pcie_fails:
            raise FakeError("Not Supported")
        return 2048

    module.nvmlInit = init
    module.nvmlShutdown = lambda: None
    module.nvmlDeviceGetCount = lambda: 2
    module.nvmlDeviceGetHandleByIndex = lambda i: f"h{i}"
    module.nvmlDeviceGetName = lambda h: b"Fake GPU"
    module.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=80 * 2**30, used=2**30)
    module.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=87)
    module.nvmlDeviceGetPcieThroughput = pcie
    return module


def test_nvml_that_fails_to_start_gives_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(init_fails=True))
    reason = open_nvml()
    assert isinstance(reason, str) and "Driver Not Loaded" in reason


def test_nvml_fields_degrade_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(pcie_fails=True))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    nvml = open_nvml()
    assert not isinstance(nvml, str)
    assert [d.name for d in nvml.devices()] == ["Fake GPU", "Fake GPU"]
    sampler = GpuSampler(nvml, 0.1)
    sampler.start()
    samples, health = sampler.stop()
    assert samples and all(s.util_percent == 87.0 and s.pcie_rx_bytes_per_s is None for s in samples)
    assert any(item.startswith("pcie: Not Supported") for item in health.unavailable)


def test_cuda_visible_devices_limits_what_is_sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    nvml = open_nvml()
    assert not isinstance(nvml, str)
    assert [i for i, _ in nvml.handles] == [1]


def test_a_cgroup_quota_limits_the_cpu_count(tmp_path) -> None:
    from fastload_cli.samplers.host import cgroup_cpu_quota

    (tmp_path / "limited").write_text("150000 100000\n")
    (tmp_path / "open").write_text("max 100000\n")
    assert cgroup_cpu_quota(str(tmp_path / "limited")) == 1.5
    assert cgroup_cpu_quota(str(tmp_path / "open")) is None
    assert cgroup_cpu_quota(str(tmp_path / "missing")) is None


def test_a_long_run_keeps_a_bounded_number_of_samples_over_its_whole_span(monkeypatch) -> None:
    from fastload_cli.samplers import ticker as ticking

    monkeypatch.setattr(ticking, "MAX_SAMPLES", 100)
    counter = iter(range(10_000))
    found = Ticker(lambda: next(counter), 1.0, "test")
    for _ in range(1_000):
        found._take()
    samples = found.stop()  # its last sample: the run's end
    assert len(samples) <= 101
    assert samples[0] == 0 and samples[-1] == 1_000  # the run's start and its end
    gaps = {b - a for a, b in itertools.pairwise(samples[:-1])}  # the end may fall between two
    assert gaps == {16}  # evenly thinned: every 2**k-th sample


def test_the_samples_kept_are_bounded_by_their_size_not_their_count(monkeypatch) -> None:
    from fastload_cli.samplers import ticker as ticking

    monkeypatch.setattr(ticking, "MAX_SAMPLES", 100)
    counter = iter(range(10_000))
    found = Ticker(lambda: next(counter), 1.0, "test", size=lambda _: 10)  # ten processes a sample
    for _ in range(1_000):
        found._take()
    assert len(found.stop()) <= 11


def test_a_worker_that_left_is_forgotten() -> None:
    """A long run starts workers every epoch: what the sampler knows of each goes when it leaves."""
    sampler = HostSampler(os.getpid(), 0.05)
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        sampler.note_workers([worker.pid])
        assert any(p.pid == worker.pid and p.role is ProcRole.WORKER for p in sampler.sample().procs)
    finally:
        worker.kill()
        worker.wait()
    assert all(p.pid != worker.pid for p in sampler.sample().procs)
    assert worker.pid not in sampler._workers and worker.pid not in sampler._started


def test_the_settle_check_waits_ten_times_as_long_as_it_took() -> None:
    import types

    from fastload_cli.runner.flight import SETTLE_COST_FACTOR, Flight

    now = time.monotonic()
    run = types.SimpleNamespace(settle_checked_at=now - 5.0, settle_cost_s=1.0)
    assert not Flight._settle_due(run)  # 5 s since a check that took 1 s: not yet
    assert run.settle_put_off_until == pytest.approx(now - 5.0 + SETTLE_COST_FACTOR * 1.0)  # read then
    run.settle_checked_at = now - SETTLE_COST_FACTOR * 1.0 - 0.1
    assert Flight._settle_due(run)
    assert run.settle_put_off_until is None and run.settle_checked_at >= now  # asked now


def test_a_cheap_settle_check_is_asked_again_within_two_steps_of_30_ms() -> None:
    """A check that took a millisecond is due again 60 ms later: a run of 30 ms steps stops within
    two of its settle point. At 0.2 s between checks, in-memory-tensors' and borderline's runs
    went on 5-10 batches past theirs (four diagnoses each way, alternated: 9.1 s and 7.4 s a
    diagnosis, against 8.3 s and 6.5 s at 0.05 s)."""
    import types

    from fastload_cli.runner.flight import Flight

    run = types.SimpleNamespace(settle_checked_at=time.monotonic() - 0.06, settle_cost_s=0.001)
    assert Flight._settle_due(run)
    run.settle_checked_at = time.monotonic() - 0.01
    assert not Flight._settle_due(run)


def test_batches_the_settle_check_put_off_are_read_without_waiting_for_the_next() -> None:
    # the last batches before a pause came within the check's wait: the watch loop asks the rule
    # again once the wait is over, though no batch (no event) came since
    from pathlib import Path
    from types import SimpleNamespace
    from typing import Any

    from fastload_cli.config import RunConfig
    from fastload_cli.runner.flight import Flight
    from fastload_cli.runner.stopping import Stopping

    asked: list[float] = []

    class Quiet(Flight):  # the loop alone: no pipes, no events
        def selector(self) -> Any:
            return contextlib.nullcontext()

        def pump(self, selector: object, timeout_s: float) -> None:
            pass

        def after_events(self) -> None:
            asked.append(time.monotonic())
            self._settle_due()

    flight = object.__new__(Quiet)
    flight.config = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", timeout_s=60.0)
    flight.started = SimpleNamespace(proc=SimpleNamespace(poll=lambda: 0 if asked else None))  # type: ignore[assignment]
    flight.stop, flight.reaching_since, flight.settle_cost_s = Stopping(), None, 0.0
    flight.settle_checked_at = time.monotonic() - 1.0
    flight.settle_put_off_until = time.monotonic()  # a batch put off, its wait over
    flight.watch()
    assert asked  # read while nothing came
    for put_off in (time.monotonic() + 60.0, None):  # its wait not over; nothing put off: nothing to read
        flight.settle_put_off_until, asked[:] = put_off, []
        flight.started = SimpleNamespace(proc=SimpleNamespace(poll=iter([None, None, 0]).__next__))  # type: ignore[assignment]
        flight.watch()
        assert not asked, put_off


def test_a_costly_tick_stretches_the_interval_to_stay_within_the_cpu_budget() -> None:
    clock = iter(float(i) * 0.005 for i in range(1000))  # every tick takes 5 ms of CPU
    ticker = Ticker(lambda: 1, 0.05, "test", cpu_budget=0.05, cpu_clock=lambda: next(clock))
    ticker._take()
    assert ticker.current_s == pytest.approx(0.1)  # 5 ms is 5% of 100 ms
    cheap = Ticker(lambda: 1, 0.05, "test", cpu_budget=0.05, cpu_clock=lambda: 0.0)
    cheap._take()
    assert cheap.current_s == cheap.longest_s == 0.05  # never below the interval asked for
    unbounded = Ticker(lambda: 1, 0.05, "test", cpu_clock=lambda: next(clock))
    unbounded._take()
    assert unbounded.current_s == 0.05
