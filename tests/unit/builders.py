"""Hand-built runs for analyzer tests: every number in them is chosen, none measured."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fastload_cli.analyzer.advice import advise
from fastload_cli.analyzer.facts import Facts
from fastload_cli.records import (
    BatchRecord,
    ChildEnv,
    HostSample,
    IteratorInfo,
    LoaderInfo,
    Mode,
    ModeSpec,
    ProcRole,
    ProcSample,
    Recommendation,
    RunResult,
    RunStatus,
    RunSummary,
    StopReason,
    Substitution,
    SweepResult,
    SystemSample,
    Verdict,
)

MS = 1_000_000  # ns


def batches(
    waits_ms: Sequence[float],
    computes_ms: Sequence[float] | float,
    *,
    samples: int = 32,
    loader_id: int = 1,
    iterator_id: int = 1,
    start_ns: int = 0,
    thread_cpu_fraction: float | None = None,
    step_busy_fraction: float | None = None,
) -> list[BatchRecord]:
    """Batches of one epoch: each step computes, then waits for the next batch. With
    ``step_busy_fraction``, the loop's thread is on a CPU for that share of each step's compute
    and blocked for the rest."""
    computes = [computes_ms] * len(waits_ms) if isinstance(computes_ms, (int, float)) else list(computes_ms)
    out, t = [], start_ns
    for index, (wait, compute) in enumerate(zip(waits_ms, computes, strict=True)):
        start = t + int(compute * MS) if index else t
        end = start + int(wait * MS)
        cpu = None if thread_cpu_fraction is None else int(wait * MS * thread_cpu_fraction)
        out.append(
            BatchRecord(
                loader_id=loader_id,
                iterator_id=iterator_id,
                index=index,
                wait_start_ns=start,
                wait_end_ns=end,
                samples=samples,
                nbytes=samples * 1000,
                thread_cpu_ns=cpu,
                thread_runq_ns=0 if cpu is not None else None,
                step_cpu_ns=None if step_busy_fraction is None or not index else int(compute * MS * step_busy_fraction),
                step_runq_ns=None if step_busy_fraction is None or not index else 0,
            )
        )
        t = end
    return out


def loader(
    num_workers: int = 2, loader_id: int = 1, augmentations: tuple[str, ...] = (), pin: bool = False
) -> LoaderInfo:
    return LoaderInfo(
        loader_id=loader_id,
        created_ns=0,
        batch_size=32,
        num_workers=num_workers,
        pin_memory=pin,
        persistent_workers=False,
        prefetch_factor=2 if num_workers else None,
        dataset_type="Toy",
        dataset_len=10_000,
        iterable_dataset=False,
        multiprocessing_context=None,
        augmentations=augmentations,
    )


def host_samples(
    end_ns: int,
    *,
    every_ns: int = 50 * MS,
    main_cores: float = 1.0,
    worker_cores: Sequence[float] = (),
    worker_runq_cores: float = 0.0,
    worker_kernel_share: float | None = None,
    system_busy: float = 0.5,
    steal: float | None = 0.0,
    cpu_count: int = 2,
    read_bytes_per_s: float | None = 0.0,
    blocked_every: int | None = None,
) -> tuple[HostSample, ...]:
    """Samples whose cumulative counters grow at the given constant rates (cores busy; ``steal``
    of the machine's CPU time inside ``system_busy``); with ``blocked_every=n``, every process is
    found blocked on storage in every n-th sample."""
    out = []
    for n, t in enumerate(range(0, end_ns + every_ns, every_ns)):
        s = t / 1e9
        blocked = None if blocked_every is None else n % blocked_every == 0
        procs = [
            ProcSample(
                pid=100, role=ProcRole.MAIN, cpu_s=main_cores * s, runq_s=0.0, rss_bytes=10**8, read_bytes=0,
                blocked=blocked,
            )
        ]  # fmt: skip
        for i, cores in enumerate(worker_cores):
            procs.append(
                ProcSample(
                    pid=200 + i,
                    role=ProcRole.WORKER,
                    cpu_s=cores * s,
                    runq_s=worker_runq_cores * s,
                    rss_bytes=5 * 10**7,
                    read_bytes=None
                    if read_bytes_per_s is None
                    else int(read_bytes_per_s * s / max(len(worker_cores), 1)),
                    kernel_cpu_s=None if worker_kernel_share is None else worker_kernel_share * cores * s,
                    blocked=blocked,
                )
            )
        busy = system_busy * cpu_count * s
        stolen = None if steal is None else steal * cpu_count * s
        system = SystemSample(busy_s=busy, idle_s=cpu_count * s - busy, iowait_s=0.0, disk_read_bytes=0, steal_s=stolen)
        out.append(HostSample(t_ns=t, procs=tuple(procs), system=system))
    return tuple(out)


CACHED_SUBSTITUTION = Substitution(
    loader_id=1, location="decoded-sample cache", original="ImageFolder", replacement="cached in memory"
)


def fix_spec(label: str) -> ModeSpec:
    """``fix:a+b`` as the ModeSpec that ``try`` runs."""
    return ModeSpec(mode=Mode.FIX, fixes=tuple(label.removeprefix("fix:").split("+")))


def _spec(mode: str) -> ModeSpec:
    """A mode as a command line names it, or one fastload runs itself (the split and points runs)."""
    own = {Mode.SPLIT.value: Mode.SPLIT, Mode.IN_PROCESS.value: Mode.IN_PROCESS}
    return ModeSpec(mode=own[mode]) if mode in own else ModeSpec.parse(mode)


def run(
    mode: str = "real",
    batch_list: Sequence[BatchRecord] = (),
    *,
    loaders: Sequence[LoaderInfo] | None = None,
    samples: tuple[HostSample, ...] = (),
    warmup: int = 2,
    requested: int | None = None,
    status: RunStatus = RunStatus.OK,
    stop: StopReason = StopReason.ENOUGH_BATCHES,
    cuda: bool = False,
) -> RunResult:
    end = batch_list[-1].wait_end_ns if batch_list else 0
    if mode == "synthetic":  # as the child does: batches after warm-up are replays
        batch_list = [dataclasses.replace(x, synthetic=i >= max(warmup, 1)) for i, x in enumerate(batch_list)]
    replaced = (NO_AUG_SUBSTITUTION,) if mode == "no-aug" else ()  # as the child reports what it replaced
    replaced = (CACHED_SUBSTITUTION,) if mode == "cached" else replaced
    replaced = (NO_AUG_SUBSTITUTION, CACHED_SUBSTITUTION) if mode == "cached-no-aug" else replaced
    return RunResult(
        spec=fix_spec(mode) if mode.startswith("fix:") else _spec(mode),
        status=status,
        stop_reason=stop,
        requested_batches=requested if requested is not None else len(batch_list),
        warmup_batches=warmup,
        started_ns=0,
        ended_ns=end,
        exit_code=0,
        cpu_count=2,
        env=ChildEnv(torch="2.14.1", cuda_in_use=cuda, cuda_available=cuda),
        loaders=tuple(loaders if loaders is not None else [loader()]),
        iterators=(IteratorInfo(loader_id=1, iterator_id=1, started_ns=0, ready_ns=0, worker_pids=(), reused=False),),
        batches=tuple(batch_list),
        host_samples=samples,
        schedstat=True,
        substitutions=replaced,
    )


NO_AUG_SUBSTITUTION = Substitution(
    loader_id=1,
    location="dataset.transform.transforms[1]",
    original="ColorJitter(brightness=0.4)",
    replacement="Identity()",
)


def summary(
    mode: str = "real",
    *,
    throughput: float | None = 100.0,
    wait: float | None = 0.5,
    compute_ms: float | None = 10.0,
    busy: float | None = 0.9,
    system: float | None = 0.6,
    workers: int | None = 2,
    gpu: float | None = None,
    status: RunStatus = RunStatus.OK,
    batches: int = 50,
) -> RunSummary:
    return RunSummary(
        spec=ModeSpec.from_label(mode),
        status=status,
        num_workers=workers,
        batches=batches,
        samples=batches * 32,
        wall_s=None if throughput is None else batches * 32 / throughput,
        throughput_samples_per_s=throughput,
        throughput_batches_per_s=None if throughput is None else throughput / 32,
        data_wait_fraction=wait,
        step_ms_p50=20.0,
        step_ms_p90=30.0,
        startup_s=0.5,
        main_cpu_percent=90.0,
        workers_cpu_percent=150.0,
        gpu_util_percent=gpu,
        read_bytes_per_s=0.0,
        error=None,
        compute_ms_p50=compute_ms,
        loader_busy_fraction=busy,
        system_cpu_busy_fraction=system,
        iowait_fraction=0.0,
    )


def sweep_result(**changes: object) -> SweepResult:
    """A sweep's conclusion: the script's 2 workers against fewer, no gain beyond the noise unless
    the fields given say otherwise."""
    base = SweepResult(
        points=(),
        current_workers=2,
        best_workers=0,
        recommended_workers=2,
        recommended_variant=None,
        speedup=1.0,
        noise=0.06,
        significant=False,
        memory_cost_bytes=None,
        diminishing_at=0,
        reason="",
        stopped=None,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def recommended(f: Facts, v: Verdict) -> tuple[Recommendation, ...]:
    """The recommendations ``advise`` makes on ``f`` and ``v``, without the evidence it adds."""
    return advise(f, v)[0]


def in_turn(real: RunResult, synthetic: RunResult) -> RunResult:
    """The real+synthetic run that measured ``real``, then ``synthetic``, in one run of the script,
    as the child reports it: ``synthetic``'s replays follow ``real``'s batches on the same
    iterator (its warm-up left out), and the machine's counters go on from where ``real``'s ended."""
    offset = real.ended_ns
    own = len(real.batches)
    replays = [
        dataclasses.replace(
            x,
            iterator_id=real.batches[-1].iterator_id,
            index=own + i,
            wait_start_ns=x.wait_start_ns + offset,
            wait_end_ns=x.wait_end_ns + offset,
        )
        for i, x in enumerate(synthetic.batches)
        if x.synthetic
    ]
    last = real.host_samples[-1] if real.host_samples else None
    later = tuple(_continued(s, offset, last) for s in synthetic.host_samples if s.t_ns > 0)
    return dataclasses.replace(
        real,
        spec=ModeSpec(mode=Mode.REAL_SYNTHETIC),
        status=synthetic.status,
        stop_reason=synthetic.stop_reason,
        ended_ns=offset + synthetic.ended_ns,
        batches=(*real.batches, *replays),
        host_samples=(*real.host_samples, *later),
    )


def _continued(sample: HostSample, offset: int, last: HostSample | None) -> HostSample:
    """``sample`` moved ``offset`` later, its cumulative counters added to ``last``'s."""
    if last is None:
        return dataclasses.replace(sample, t_ns=sample.t_ns + offset)
    before = {p.pid: p for p in last.procs}

    def proc(p: ProcSample) -> ProcSample:
        b = before.get(p.pid)
        if b is None:
            return p
        return dataclasses.replace(
            p,
            cpu_s=p.cpu_s + b.cpu_s,
            runq_s=None if p.runq_s is None or b.runq_s is None else p.runq_s + b.runq_s,
            read_bytes=None if p.read_bytes is None or b.read_bytes is None else p.read_bytes + b.read_bytes,
            kernel_cpu_s=None if p.kernel_cpu_s is None or b.kernel_cpu_s is None else p.kernel_cpu_s + b.kernel_cpu_s,
        )

    system, b = sample.system, last.system
    return dataclasses.replace(
        sample,
        t_ns=sample.t_ns + offset,
        procs=tuple(proc(p) for p in sample.procs),
        system=dataclasses.replace(
            system,
            busy_s=system.busy_s + b.busy_s,
            idle_s=system.idle_s + b.idle_s,
            iowait_s=None if system.iowait_s is None or b.iowait_s is None else system.iowait_s + b.iowait_s,
            disk_read_bytes=None
            if system.disk_read_bytes is None or b.disk_read_bytes is None
            else system.disk_read_bytes + b.disk_read_bytes,
        ),
    )
