"""Settings compared in one part of training (``search/parts.py``)."""

from __future__ import annotations

import dataclasses

from fastload_cli.analyzer.search import parts
from tests.unit.search.sweeps import pt


def test_a_setting_measured_after_the_first_epoch_replaces_its_runs_inside_it() -> None:
    inside = [pt(2, 100.0), pt(4, 150.0)]
    later = [dataclasses.replace(pt(8, 145.0), after_first_epoch=True)]
    # 2 and 4 were measured inside the first epoch, 8 after it: both are measured again, in order
    assert parts.again_after_first_epoch([*inside, *later]) == [2, 4]
    assert parts.again_after_first_epoch(inside) == []  # all in one part: nothing to measure again
    again = dataclasses.replace(pt(2, 130.0), after_first_epoch=True)
    kept = parts.comparable([*inside, *later, again])
    assert [(p.workers, p.throughput_samples_per_s) for p in kept] == [(4, 150.0), (8, 145.0), (2, 130.0)]
    assert parts.again_after_first_epoch(kept) == [4]
    # a run after the first epoch that measured nothing leaves the one inside it, and is not redone
    failed = dataclasses.replace(pt(4, None), after_first_epoch=True)
    kept = parts.comparable([*inside, *later, again, failed])
    assert [(p.workers, p.throughput_samples_per_s) for p in kept] == [(4, 150.0), (8, 145.0), (2, 130.0), (4, None)]
    assert parts.again_after_first_epoch(kept) == []
    # faster than every setting after it beyond the noise: after it, it would only be faster still
    # (storage-latency: 9 workers at 858 samples/s inside it, 32 at 463 after it)
    slower_later = [dataclasses.replace(pt(8, 100.0), after_first_epoch=True)]
    assert parts.again_after_first_epoch([*inside, *slower_later]) == [2]
    # however noisy the runs after it: a second run of 4 would not make theirs less noisy
    noisy_later = [dataclasses.replace(pt(8, 100.0, spread=0.8), after_first_epoch=True)]
    assert parts.again_after_first_epoch([*inside, *noisy_later]) == [2]
    # its own run's noise is what could put it behind: ±60% at 150 against 100, it goes again
    assert parts.again_after_first_epoch([pt(2, 100.0), pt(4, 150.0, spread=0.6), *noisy_later]) == [2, 4]
    # more than FIRST_EPOCH_MARGIN (1.5x) below the fastest after it: the comparison cannot turn on
    # it, so it is not measured again (its caveat says it was measured inside the first epoch)
    faster = [dataclasses.replace(pt(8, 200.0), after_first_epoch=True)]
    assert parts.inside_first_epoch([*inside, *faster]) == [2, 4]
    assert parts.again_after_first_epoch([*inside, *faster]) == [4]
