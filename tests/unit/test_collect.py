"""The parent's event parser: lines split across reads, malformed lines, records built."""

from __future__ import annotations

import contextlib
import json
import time

from fastload_cli.records import StopReason
from fastload_cli.runner.collect import EventCollector


def line(**event) -> bytes:
    return json.dumps(event).encode() + b"\n"


BATCH = dict(
    kind="batch", loader_id=1, iterator_id=1, index=0, wait_start_ns=1, wait_end_ns=5, samples=4, nbytes=16,
    thread_cpu_ns=2, thread_runq_ns=0, synthetic=False,
)  # fmt: skip


def test_lines_split_across_reads_are_joined() -> None:
    data = line(**BATCH) + line(**{**BATCH, "index": 1})
    c = EventCollector()
    assert c.feed(data[:10]) == []
    events = c.feed(data[10:])
    assert [e["index"] for e in events] == [0, 1]
    assert len(c.batches) == 2
    assert c.batches[0].wait_ns == 4


def test_malformed_lines_are_counted_not_fatal() -> None:
    c = EventCollector()
    c.feed(b"not json\n" + line(kind="nope") + line(kind="batch", loader_id=1) + line(**BATCH))
    assert c.malformed == 3
    assert len(c.batches) == 1


def test_most_batches_counts_the_busiest_loader() -> None:
    c = EventCollector()
    c.feed(line(**BATCH) + line(**{**BATCH, "loader_id": 2}) + line(**{**BATCH, "loader_id": 2}))
    assert c.most_batches() == 2


def test_env_merges_and_end_is_recorded() -> None:
    c = EventCollector()
    c.feed(line(kind="env", torch="2.14.1", cuda_in_use=False) + line(kind="env", cuda_available=True, torch=None))
    c.feed(line(kind="end", reason="script-ended", exit_code=3, t_ns=9))
    assert c.env.torch == "2.14.1" and c.env.cuda_available is True
    assert c.end_reason is StopReason.SCRIPT_ENDED and c.end_exit_code == 3


def test_a_breakdown_event_becomes_shares_that_add_up_largest_first() -> None:
    collector = EventCollector()
    steps = [
        {"name": "Normalize", "location": "dataset.transform[2]", "kind": "transform", "ns_per_sample": 1e6},
        {"name": "ColorJitter", "location": "dataset.transform[1]", "kind": "transform", "ns_per_sample": 6e6},
        {"name": "read and decode", "location": "dataset.__getitem__", "kind": "getitem", "ns_per_sample": 2e6},
        {"name": "collate", "location": "loader.collate_fn", "kind": "collate", "ns_per_sample": 1e6},
    ]
    collector.feed(line(kind="breakdown", loader_id=1, items=64, threads=1, steps=steps))
    found = collector.breakdown
    assert found is not None
    assert [s.name for s in found.steps] == ["ColorJitter", "read and decode", "Normalize", "collate"]
    assert found.ms_per_sample == 10.0
    assert sum(s.share for s in found.steps) == 1.0
    assert found.steps[0].share == 0.6


def test_a_breakdown_that_could_not_be_made_says_why() -> None:
    collector = EventCollector()
    collector.feed(
        line(kind="breakdown", loader_id=1, unavailable="an IterableDataset has no items to load one by one")
    )
    assert collector.breakdown is not None
    assert collector.breakdown.steps == () and collector.breakdown.ms_per_sample is None
    assert collector.breakdown.unavailable.startswith("an IterableDataset")


def test_an_epochs_end_is_kept_on_its_iterator() -> None:
    c = EventCollector()
    started = dict(kind="iterator", loader_id=1, started_ns=1, ready_ns=2, worker_pids=[], reused=False)
    c.feed(line(**started, iterator_id=1) + line(**started, iterator_id=2))
    c.feed(line(kind="epoch-end", loader_id=1, iterator_id=1, ended_ns=50))
    assert [it.ended_ns for it in c.iterators] == [50, None]


def test_an_exception_in_a_job_carries_the_rank_it_was_raised_on() -> None:
    c = EventCollector()
    c.feed(line(kind="hello", pid=7, rank=1, local_rank=1, world_size=2))
    c.feed(line(kind="exception", type_name="RuntimeError", message="boom", traceback="...", t_ns=1234))
    assert c.error is not None and c.error.rank == 1


def test_an_exception_is_kept_with_when_it_reached_the_child_and_the_bytes_are_counted() -> None:
    data = line(kind="exception", type_name="RuntimeError", message="boom", traceback="...", t_ns=1234)
    c = EventCollector()
    c.feed(data)
    assert c.error is not None and c.error.message == "boom" and c.raised_ns == 1234
    assert c.channel_bytes == len(data)


def test_a_real_synthetic_runs_replays_are_waited_for_however_late_and_a_refusal_ends_them() -> None:
    from pathlib import Path

    from fastload_cli.config import RunConfig
    from fastload_cli.records import Mode, ModeSpec
    from fastload_cli.runner.flight import Flight
    from fastload_cli.runner.stopping import Before, Stopping

    flight = object.__new__(Flight)  # the parts of a run in flight that decide its batches, alone
    flight.stop, flight.batch_heard_at = Stopping(), 0.0
    flight.config = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", max_batches=12).with_mode(
        ModeSpec(mode=Mode.REAL_SYNTHETIC)
    )
    c = EventCollector()
    flight.collectors, flight.switched_at = {0: c}, None
    c.feed(b"".join(line(**{**BATCH, "index": i}) for i in range(20)))
    assert flight._wanted() == flight.config.requested_batches  # the real part's
    flight.switched_at = 20
    c.feed(b"".join(line(**{**BATCH, "index": i}) for i in range(20, 30)))  # the child was ahead: no replay yet
    assert flight._wanted() > 30
    # ... waited for as an epoch's near end is: not past a while (a script gone to do other things)
    flight.before = Before(
        started_ns=time.monotonic_ns() - 10 * 10**9, cpu_s=0.0, memory_available=None, oom_kills=None
    )
    flight.reaching_since = time.monotonic() - 1.0
    assert not flight._reach_spent()
    flight.reaching_since = time.monotonic() - 30.0
    assert flight._reach_spent()
    c.feed(line(**{**BATCH, "index": 30, "synthetic": True}))
    assert flight._wanted() == 30 + 1 + 12  # as many after the first replay as the real part measured
    assert not flight._reach_spent()  # the replays came: their measurement takes what it takes
    refused = EventCollector()
    flight.collectors = {0: refused}
    refused.feed(b"".join(line(**{**BATCH, "index": i}) for i in range(22)))
    refused.feed(line(kind="substitution", loader_id=1, location="synthetic replay",
                      original="Opaque batch cannot be copied", replacement="not replayed"))  # fmt: skip
    assert flight._wanted() == 20  # nothing will be replayed: the run ends


def test_the_first_replay_is_awaited_past_a_stalled_batch_and_the_ride() -> None:
    """A loop whose batches come in stalls: the switch takes its next batch, which may take longer
    than any before it, and the breakdown rides the switch. Before, the wait ran from the ask, half
    the run's time: thread-oversubscription's 8 s real run gave its replays up after 4 s, every
    wait before under 0.8 s; the stalled batch came at 5.3 s, and the replays and the breakdown
    then took runs of their own."""
    from pathlib import Path

    from fastload_cli.config import RunConfig
    from fastload_cli.records import Mode, ModeSpec
    from fastload_cli.records.protocol import RIDE_BUDGET_S
    from fastload_cli.runner.flight import Flight
    from fastload_cli.runner.reach import REACH_SHARE, SWITCH_GAPS
    from fastload_cli.runner.stopping import Before, Stopping

    flight = object.__new__(Flight)
    base = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", max_batches=12)
    flight.config = base.with_mode(ModeSpec(mode=Mode.REAL_SYNTHETIC)).with_child(breakdown_items=64)
    c = EventCollector()
    flight.collectors, flight.stop, flight.batch_heard_at = {0: c}, Stopping(), 0.0
    c.feed(b"".join(line(**{**BATCH, "index": i}) for i in range(20)))
    ran_s, gap_s = 8.0, 3.5  # the run's time before the ask; its longest quiet between events
    flight.before = Before(started_ns=time.monotonic_ns() - int(ran_s * 1e9), cpu_s=0.0, memory_available=None,
                           oom_kills=None)  # fmt: skip
    flight.stop.lost.longest_gap_s = gap_s
    allowed = SWITCH_GAPS * gap_s + RIDE_BUDGET_S
    assert allowed > REACH_SHARE * ran_s
    flight.switched_at, flight.reaching_since = 20, time.monotonic() - (allowed - 0.5)
    assert not flight._reach_spent()  # a batch as slow as the slowest may still come, and the ride after it
    flight.reaching_since = time.monotonic() - (allowed + 0.5)
    assert flight._reach_spent()
    flight.batch_heard_at = time.monotonic() - 1.0  # the stalled batch came: the loop still asks for them
    assert not flight._reach_spent()
    flight.batch_heard_at = time.monotonic() - (allowed + 0.5)  # ... and none since, nor a replay
    assert flight._reach_spent()
    flight.config = base.with_mode(ModeSpec(mode=Mode.REAL_SYNTHETIC))  # no breakdown rides the switch
    flight.reaching_since = flight.batch_heard_at = time.monotonic() - (SWITCH_GAPS * gap_s + 0.5)
    assert flight._reach_spent()


def test_a_real_window_measured_is_not_held_for_a_batch_its_loop_has_waited_for_past_the_stall() -> None:
    """thread-oversubscription's two workers once took 50 s for one batch, ten batches into the
    real window: the run waited for it, and the command took 59.4 s. Past ``STALL_S`` of waiting,
    a real part whose window holds ``STALL_BATCHES`` stops there; an epoch's start-up, a window
    still short, a part whose replays were asked for and a run of fixed batches are waited for."""
    import dataclasses
    from pathlib import Path

    from fastload_cli.config import RunConfig
    from fastload_cli.records import Mode, ModeSpec
    from fastload_cli.runner.flight import Flight
    from fastload_cli.runner.reach import STALL_BATCHES, STALL_S
    from fastload_cli.runner.stopping import Stopping

    flight = object.__new__(Flight)
    base = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", max_batches=50)
    flight.config = dataclasses.replace(base.with_mode(ModeSpec(mode=Mode.REAL_SYNTHETIC)), settle=lambda _: False)
    c = EventCollector()
    flight.collectors, flight.stop, flight.switched_at = {0: c}, Stopping(), None
    c.feed(b"".join(line(**{**BATCH, "index": i}) for i in range(flight.config.warmup + STALL_BATCHES - 1)))
    flight.batch_last, flight.batch_heard_at = True, time.monotonic() - (STALL_S + 0.5)
    assert not flight._stalled()  # a window still short of its batches
    c.feed(line(**{**BATCH, "index": flight.config.warmup + STALL_BATCHES - 1}))
    assert flight._stalled()
    flight.batch_heard_at = time.monotonic() - (STALL_S - 0.5)
    assert not flight._stalled()  # not waited long enough yet
    flight.batch_heard_at = time.monotonic() - (STALL_S + 0.5)
    flight.batch_last = False  # an epoch ended, or an iterator started, since: its start-up is training's
    assert not flight._stalled()
    flight.batch_last, flight.switched_at = True, STALL_BATCHES
    assert not flight._stalled()  # the replays were asked for: ``replay_s`` holds the run
    flight.switched_at = None
    flight.config = dataclasses.replace(flight.config, settle=None)  # its batches are fixed
    assert not flight._stalled()
    flight.config = dataclasses.replace(base.with_mode(ModeSpec(mode=Mode.REAL)), settle=lambda _: False)
    assert flight._stalled()  # a real run alone too
    flight.config = dataclasses.replace(base.with_mode(ModeSpec(mode=Mode.WORKERS, workers=4)), settle=lambda _: False)
    assert not flight._stalled()  # a sweep's setting is measured as it comes


def test_a_settled_run_held_for_its_epochs_end_stops_at_the_event_that_ends_it() -> None:
    """A real window that settled near its epoch's end goes on to that end (``RunConfig.reach``).
    The end was heard only at the next settle check (at most every ``SETTLE_CHECK_S``) that found
    the run settled again, with the next epoch's start-up in its window. It now stops at the event
    that ends the epoch."""
    import dataclasses
    from pathlib import Path
    from types import SimpleNamespace

    from fastload_cli.config import RunConfig
    from fastload_cli.records import Mode, ModeSpec
    from fastload_cli.runner.flight import Flight, Observer
    from fastload_cli.runner.stopping import Before, Stopping

    epoch_ended = False
    flight = object.__new__(Flight)
    base = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", max_batches=50)
    flight.config = dataclasses.replace(
        base.with_mode(ModeSpec(mode=Mode.REAL)), settle=lambda _: True, reach=lambda _: not epoch_ended
    )
    c = EventCollector()
    flight.collectors, flight.stop, flight.switched_at, flight.reaching_since = {0: c}, Stopping(), None, None
    flight.held, flight.settle_checked_at, flight.settle_cost_s, flight.settle_put_off_until = None, 0.0, 0.0, None
    flight.observer, flight.pyspy, flight.started = Observer(), None, SimpleNamespace(script_pid=None)
    flight.host = SimpleNamespace(read_memory_now=lambda: None)
    flight.before = Before(started_ns=time.monotonic_ns(), cpu_s=0.0, memory_available=None, oom_kills=None)
    c.feed(b"".join(line(**{**BATCH, "index": i}) for i in range(flight.config.warmup + 12)))
    flight.after_events()
    assert flight.stop.asked_at is None and flight.held is StopReason.SETTLED  # settled: held for the epoch's end
    c.feed(line(**{**BATCH, "index": flight.config.warmup + 12}))
    flight.after_events()
    assert flight.stop.asked_at is None  # the epoch goes on
    epoch_ended = True
    c.feed(line(**{**BATCH, "index": flight.config.warmup + 13}))
    flight.after_events()  # within SETTLE_CHECK_S of the check that found it settled
    assert flight.stop.asked_at is not None and flight.stop.reason is StopReason.SETTLED


def test_once_a_run_is_stopped_its_exit_is_looked_for_without_waiting_out_the_poll() -> None:
    """A stopped run's pipes stay open while its workers shut down: no event wakes the loop at its
    exit, so the loop looks for it every ``ENDING_POLL_S``, not every ``POLL_S``."""
    from pathlib import Path
    from types import SimpleNamespace
    from typing import Any

    from fastload_cli.config import RunConfig
    from fastload_cli.runner import flight as flight_module
    from fastload_cli.runner.flight import Flight
    from fastload_cli.runner.stopping import Stopping

    class Proc:  # leaves at its fourth poll
        polls = 0

        def poll(self) -> int | None:
            self.polls += 1
            return 0 if self.polls > 4 else None

    waits: list[float] = []

    class Watched(Flight):  # the loop alone: no pipes, and its waits recorded
        def selector(self) -> Any:
            return contextlib.nullcontext()

        def pump(self, selector: object, timeout_s: float) -> None:
            waits.append(timeout_s)
            if len(waits) == 2:
                self.stop.asked_at = time.monotonic()  # the settle rule asked it to stop

    flight = object.__new__(Watched)
    flight.config = RunConfig(script=Path("/x/train.py"), script_arg0="train.py", timeout_s=60.0)
    flight.started = SimpleNamespace(proc=Proc())  # type: ignore[assignment]
    flight.stop, flight.reaching_since, flight.settle_put_off_until = Stopping(), None, None
    flight.watch()
    assert waits == [flight_module.POLL_S] * 2 + [flight_module.ENDING_POLL_S] * 2
    assert flight_module.ENDING_POLL_S < flight_module.POLL_S / 5
