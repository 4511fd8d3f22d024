"""A batch a DataLoader worker dropped: read from the script's output, the run's silence timed."""

from __future__ import annotations

from fastload_cli.analyzer.failures import LOST_BATCH_HINT, hint_for, lost_batch
from fastload_cli.runner.lost import LOST_QUIET_GAPS, LOST_QUIET_S, LostBatch

FEEDER = b"""Traceback (most recent call last):
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 244, in _feed
    obj = _ForkingPickler.dumps(obj)
          ^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: unable to allocate shared memory(shm) for file </torch_6545_706999309_2>: No space left on device (28)
"""


def heard(lost: LostBatch, *times: float) -> LostBatch:
    for t in times:
        lost.on_events(t)
    return lost


def test_a_dropped_batch_is_lost_once_the_run_is_silent_long_enough() -> None:
    lost = heard(LostBatch(), 0.0, 0.1, 0.2)
    tail = b"epoch 1\n" + FEEDER
    lost.on_output(tail, len(tail), now=1.0)
    assert not lost.lost(1.0 + LOST_QUIET_S - 0.1)
    lost.on_events(1.5)  # a batch ahead of the dropped one came: the silence starts again
    assert not lost.lost(1.0 + LOST_QUIET_S + 0.1)
    assert lost.lost(1.5 + LOST_QUIET_S + 0.1)


def test_a_loop_that_started_another_iterator_since_is_not_waiting_for_it() -> None:
    # a DataLoader(timeout=...) raised, the script caught it and went on with a new epoch
    lost = heard(LostBatch(), 0.0, 0.1)
    lost.on_output(FEEDER, len(FEEDER), now=0.2)
    lost.moved_on()
    assert not lost.lost(100.0)


def test_a_slow_run_is_given_its_own_longest_wait_several_times_over() -> None:
    lost = heard(LostBatch(), 0.0, 4.0, 8.0)  # 4 s steps
    lost.on_output(FEEDER, len(FEEDER), now=8.0)
    assert not lost.lost(8.0 + LOST_QUIET_GAPS * 4.0 - 0.1)
    assert lost.lost(8.0 + LOST_QUIET_GAPS * 4.0 + 0.1)


def test_no_traceback_no_loss_and_a_frame_split_across_chunks_is_read() -> None:
    lost = heard(LostBatch(), 0.0)
    lost.on_output(b"loss 0.5\n", 9, now=0.0)
    assert not lost.lost(1000.0)
    first, second = FEEDER[:60], FEEDER[60:]
    lost.on_output(first, len(first), now=1.0)
    assert lost.seen_at is None
    lost.on_output(first + second, len(second), now=2.0)
    assert lost.seen_at == 2.0


def test_the_error_the_feeder_printed_is_quoted_with_its_hint() -> None:
    said = lost_batch("step 3\n" + FEEDER.decode())
    assert said.startswith("a DataLoader worker could not hand a batch over (RuntimeError: unable to allocate")
    assert "a DataLoader worker could not hand a batch over, and" in lost_batch("")
    # a run that raised (a worker's error) beside a dropped batch is not called hung
    assert hint_for("RuntimeError: Caught RuntimeError in DataLoader worker process 0", FEEDER.decode()) != (
        LOST_BATCH_HINT
    )
