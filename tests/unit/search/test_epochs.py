"""The script's own setting against no workers over whole epochs: when the search asks for it, how
a run's epochs are read, and what the sweep concludes from them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import pytest

from fastload_cli.analyzer import noise
from fastload_cli.analyzer.search import epochs, guided, outcome, step
from fastload_cli.analyzer.search.limits import Limits
from fastload_cli.analyzer.search.predict import Curve
from fastload_cli.analyzer.search.state import Sizing, State
from fastload_cli.records import WHOLE_EPOCHS, RunResult, SweepPoint
from tests.unit import builders as b
from tests.unit.search.sweeps import GIB, pt

SHORT = Limits(epoch_batches=32)  # an epoch of 32 batches: a few seconds, its start a notable share


def wanted(points: Sequence[SweepPoint], limits: Limits, current: int | None, *, down: bool) -> int | None:
    """The next setting to measure over whole epochs, or None: the first ``epochs.pending`` names."""
    left = epochs.pending(points, limits, current, down=down)
    return left[0] if left else None


def twice(p: SweepPoint) -> SweepPoint:
    return dataclasses.replace(p, runs=2)  # already confirmed: the search has nothing else to measure


def undecided() -> list[SweepPoint]:
    """The script's 2 workers and 0 workers within each other's noise in steady windows."""
    return [twice(pt(2, 300.0, spread=0.15)), twice(pt(1, 290.0, spread=0.1)), twice(pt(0, 303.0, spread=0.1))]


def test_the_own_setting_then_no_workers_are_measured_over_whole_epochs_where_steady_windows_cannot_tell() -> None:
    points = undecided()
    asked = []
    while (workers := wanted(points, SHORT, 2, down=True)) is not None and len(asked) < 10:
        asked.append(workers)
        points.append(pt(workers, 280.0, variant=WHOLE_EPOCHS))
    # the fastest with fewer workers not found slower, then 0, each in pairs with the own setting,
    # each pair's order reversed in the next
    assert asked == [2, 1, 1, 2, 2, 0, 0, 2]
    curve = Curve(points=tuple((n, 300.0) for n in range(9)), best=2, limit="the cores")
    found = guided.plan(undecided(), SHORT, 2, curve, down=True)
    assert found.workers == 2 and found.whole_epochs


def over_whole_epochs(points: list[SweepPoint], **changes: object) -> step.Step | None:
    """The search's next step where the loaders compete with the step and the prediction is verified."""
    curve = Curve(points=tuple((n, 300.0) for n in range(9)), best=2, limit="the cores")
    loader = dataclasses.replace(b.loader(2), dataset_len=32 * 32)
    found = State(
        points=tuple(points),
        current=2,
        loader=loader,
        limits=SHORT,
        prediction=curve,
        cpu_count=2,
        measured_any=True,
        loaders_compete=True,
    )
    return step.next_step(dataclasses.replace(found, **changes))


def test_a_round_of_pairs_takes_an_epoch_each_in_one_run_of_the_script() -> None:
    found = over_whole_epochs(undecided())
    # after a warm-up of one epoch, an epoch of the own setting, two of the fastest with fewer, and
    # one of the own again: the pair, then the pair reversed; 0 workers' round in a run of its own
    assert found is not None and found.at_epochs and found.fixed
    assert found.turns == ((2, 32 + 32), (1, 32), (1, 32), (2, 32)) and found.warmup == 32
    assert found.max_batches == 4 * 32
    assert "an epoch each with num_workers=2, 1, 1, 2, in turn in one run" in found.note
    measured = [*undecided(), *(pt(w, 280.0, variant=WHOLE_EPOCHS) for w in (2, 1, 1, 2))]
    after = over_whole_epochs(measured)
    assert after is not None and after.turns == ((2, 64), (0, 32), (0, 32), (2, 32))
    # with a pair measured, the next four of the order from there: it runs on where its runs stopped
    short = over_whole_epochs([*undecided(), pt(2, 280.0, variant=WHOLE_EPOCHS), pt(1, 290.0, variant=WHOLE_EPOCHS)])
    assert short is not None and short.turns == ((1, 64), (2, 32), (2, 32), (0, 32))
    # a data-parallel job, or a script whose run gave fewer settings their turn: a run of its own
    for alone in (
        over_whole_epochs(undecided(), sizing=Sizing(job=True)),
        over_whole_epochs(undecided(), in_process_short=True),
    ):
        assert alone is not None and not alone.turns and alone.specs[0].workers == 2
        assert (alone.warmup, alone.max_batches) == (32, 64)


def test_a_round_of_pairs_takes_what_it_runs() -> None:
    # epochs of 32 batches of 2 s each (start-up included), a start of 3 s: in one run of the script,
    # a start, a warm-up epoch and four; in runs of their own, four starts, warm-ups and pairs of epochs
    assert epochs.round_s(SHORT, 5, 2.0, 3.0, one_run=True) == pytest.approx(3.0 + 5 * 2.0)
    assert epochs.round_s(SHORT, 5, 2.0, 3.0, one_run=False) == pytest.approx(4 * (3.0 + 3 * 2.0))
    assert epochs.round_s(SHORT, 40, 2.0, 3.0, one_run=True) == pytest.approx(3.0 + 6 * 2.0)  # two warm-up epochs


@pytest.mark.parametrize(
    ("limits", "down", "zero"),
    [
        (SHORT, False, 303.0),  # the loaders do not compete with the step
        (dataclasses.replace(SHORT, persistent_workers=True), True, 303.0),  # workers start once
        (Limits(epoch_batches=500), True, 303.0),  # a long epoch: its start is a small share of it
        (Limits(), True, 303.0),  # an epoch of unknown length
    ],
)
def test_nothing_is_measured_over_whole_epochs_elsewhere(limits: Limits, down: bool, zero: float) -> None:
    points = [*undecided()[:2], twice(pt(0, zero, spread=0.1))]
    assert wanted(points, limits, 2, down=down) is None


def test_fewer_workers_are_measured_over_whole_epochs_unless_steady_windows_found_them_slower() -> None:
    own = twice(pt(2, 300.0, spread=0.05))
    # 0 workers always: a steady window leaves out what it saves; 1 worker found slower is not
    slower = [own, twice(pt(1, 200.0, spread=0.05)), twice(pt(0, 200.0, spread=0.05))]
    assert epochs.candidates(slower, SHORT, 2, down=True) == [2, 0]
    # a steady window's gain of fewer workers is verified too: the fastest of them, and 0 workers
    faster = [own, twice(pt(1, 400.0, spread=0.05)), twice(pt(0, 330.0, spread=0.05))]
    assert epochs.candidates(faster, SHORT, 2, down=True) == [2, 1, 0]
    assert epochs.candidates(faster[:2], SHORT, 2, down=True) == []  # 0 workers not measured


def test_a_failed_run_ends_the_comparison_over_whole_epochs() -> None:
    points = [*undecided(), pt(2, 280.0, variant=WHOLE_EPOCHS), pt(1, None)]
    assert wanted(points, SHORT, 2, down=True) is None
    no_batches = dataclasses.replace(epochs_run(3), batches=())  # the loader was built, nothing delivered
    found = epochs.as_point(no_batches, pt(2, None))
    assert found.variant == WHOLE_EPOCHS and found.throughput_samples_per_s is None


def test_runs_of_one_setting_over_whole_epochs_are_pooled_their_difference_in_the_noise() -> None:
    # runs not measured in pairs (the own setting twice, then 0 twice): their means are compared
    points = [
        *undecided(),
        pt(2, 336.0, spread=0.03, variant=WHOLE_EPOCHS),
        pt(2, 353.0, spread=0.05, variant=WHOLE_EPOCHS),
        pt(0, 391.0, spread=0.03, variant=WHOLE_EPOCHS),
        pt(0, 338.0, spread=0.11, variant=WHOLE_EPOCHS),
    ]
    found = epochs.decided(points, 2)
    assert found is not None and found.workers == 0
    assert found.gain == pytest.approx(((391 + 338) / 2) / ((336 + 353) / 2))
    # a one-sided 90% bound on the difference of the means, from how far each setting's runs differ:
    # t(2 degrees of freedom) = 1.886 times its standard error, as a share of the script's own mean
    error = ((8.5**2 * 2 + 26.5**2 * 2) / 2 * (1 / 2 + 1 / 2)) ** 0.5
    assert found.noise == pytest.approx(1.886 * error / 344.5)
    result = outcome.conclude(points, 2, SHORT, cpu_count=2)
    assert result is not None and not result.significant and result.recommended_workers == 2


def test_runs_measured_in_pairs_are_told_apart_by_their_pairs_ratios() -> None:
    # 0 workers 2-3% ahead where it runs second in its pair, 17-18% where it runs first (what the
    # order adds), and the machine's pace moving by up to 80% from one pair to the next
    rates = [(2, 300.0), (0, 306.0), (0, 236.0), (2, 200.0), (2, 360.0), (0, 370.8), (0, 280.8), (2, 240.0)]
    points = [*undecided(), *(pt(w, r, variant=WHOLE_EPOCHS) for w, r in rates), pt(2, 280.0, variant=WHOLE_EPOCHS)]
    found = epochs.decided(points, 2)
    # the mean of the two orders' mean log-ratios; the last run, in no whole pair, left out
    second = [math.log(306 / 300), math.log(370.8 / 360)]
    first = [math.log(236 / 200), math.log(280.8 / 240)]
    middle = (sum(second) / 2 + sum(first) / 2) / 2
    squares = sum((x - sum(second) / 2) ** 2 for x in second) + sum((x - sum(first) / 2) ** 2 for x in first)
    error = (squares / 2) ** 0.5 / 2 * (1 / 2 + 1 / 2) ** 0.5
    assert found is not None and found.gain == pytest.approx(math.exp(middle))
    assert found.bound == pytest.approx(math.expm1(1.886 * error))
    assert found.told_apart and found.gain == pytest.approx(1.097, abs=0.001)
    # the runs' means alone would not tell
    unpaired = noise.gain_noise([300.0, 200.0, 360.0, 240.0, 280.0], [306.0, 236.0, 370.8, 280.8])
    assert unpaired is not None and found.gain < 1 + unpaired
    # pairs of other settings are left out of this one's comparison; so are pairs all in one order
    assert noise.paired([pt(w, r, variant=WHOLE_EPOCHS) for w, r in rates], 2, 1) is None
    assert noise.paired([pt(w, r, variant=WHOLE_EPOCHS) for w, r in rates[:2] + rates[4:6]], 2, 0) is None


def asked_over_whole_epochs(rates: dict[int, list[float]], spread: float) -> list[int]:
    """The settings the search asks for over whole epochs, each run reading the next of its rates."""
    points, asked = undecided(), []
    while (workers := wanted(points, SHORT, 2, down=True)) is not None and len(asked) < 40:
        asked.append(workers)
        rate = rates[workers].pop(0)
        points.append(pt(workers, rate, spread=spread, variant=WHOLE_EPOCHS))
    return asked


def test_a_gain_of_fewer_workers_inside_the_noise_is_measured_again_at_most_four_times() -> None:
    # 1 worker slower in both pairs; 0 workers 9% ahead in the first pair, 1% behind in the second:
    # the own setting and 0 in two pairs more
    rates = {2: [300.0, 300.0, 300.0, 300.0] * 2, 1: [250.0, 250.0], 0: [327.0, 297.0] * 3}
    assert asked_over_whole_epochs(rates, spread=0.0) == [2, 1, 1, 2, 2, 0, 0, 2, 2, 0, 0, 2]
    # equal within 1%, the pairs 20% apart: as open, measured again
    rates = {2: [300.0, 300.0, 300.0, 240.0, 300.0, 240.0], 1: [200.0, 200.0], 0: [270.0, 265.0, 270.0, 265.0]}
    assert asked_over_whole_epochs(rates, spread=0.0) == [2, 1, 1, 2, 2, 0, 0, 2, 2, 0, 0, 2]
    # pairs that agree once their order is taken out (1.09x second, 0.99x first): 1.04x, settled
    rates = {2: [300.0] * 12, 1: [200.0] * 2, 0: [327.0, 297.0] * 3}
    assert len(asked_over_whole_epochs(rates, spread=0.0)) == 12
    # pairs that keep disagreeing: four rounds more at most, then what all of them say
    rates = {2: [300.0] * 30, 1: [200.0] * 2, 0: [345.0, 297.0, 300.0, 261.0, 336.0, 330.0] * 2}
    assert asked_over_whole_epochs(rates, spread=0.0) == [2, 1, 1, 2, *[2, 0, 0, 2] * 5]


def test_the_best_of_two_settings_with_fewer_workers_is_held_to_a_bound_they_share() -> None:
    # 1 worker and 0 each in pairs with the own setting; 0 ahead by 7-13% in its four pairs
    rates = [(2, 300.0), (1, 300.0), (1, 300.0), (2, 300.0)]
    rates += [(2, 300.0), (0, 339.0), (0, 321.0), (2, 300.0), (2, 300.0), (0, 333.0), (0, 327.0), (2, 300.0)]
    points = [*undecided(), *(pt(w, r, variant=WHOLE_EPOCHS) for w, r in rates)]
    found = epochs.decided(points, 2)
    second, first = [math.log(1.13), math.log(1.11)], [math.log(1.07), math.log(1.09)]
    squares = sum((x - sum(second) / 2) ** 2 for x in second) + sum((x - sum(first) / 2) ** 2 for x in first)
    error = (squares / 2) ** 0.5 / 2 * (1 / 2 + 1 / 2) ** 0.5
    # 0 is the better of the two: chance's 10% shared between them, a one-sided 95% t (2.920 at 2
    # degrees of freedom), where 0 alone would be held to 90% (1.886)
    assert found is not None and found.workers == 0
    assert found.bound == pytest.approx(math.expm1(2.920 * error))
    alone = [p for p in points if not (p.workers == 1 and p.variant == WHOLE_EPOCHS)]
    single = epochs.decided(alone, 2)
    assert single is not None and single.bound == pytest.approx(math.expm1(1.886 * error))
    assert found.gain == pytest.approx(single.gain) and found.bound > single.bound


def test_with_one_run_of_each_setting_their_epochs_spread_is_the_noise() -> None:
    points = [
        *undecided(),
        pt(2, 300.0, spread=0.08, variant=WHOLE_EPOCHS),
        pt(0, 320.0, spread=0.12, variant=WHOLE_EPOCHS),
    ]
    found = epochs.decided(points, 2)
    assert found is not None and found.gain == pytest.approx(320 / 300) and found.noise == pytest.approx(0.12)


@pytest.mark.parametrize(
    ("zero", "own"),
    [
        ([360.0, 362.0], [300.0, 302.0]),  # 20% ahead, beyond the noise: it stands as measured
        ([306.0, 308.0], [300.0, 302.0]),  # 2% ahead, the runs alike: no gain worth advising is left open
        ([250.0, 252.0], [300.0, 302.0]),  # slower, beyond the noise
    ],
)
def test_a_difference_told_apart_or_no_gain_left_open_is_not_measured_again(
    zero: list[float], own: list[float]
) -> None:
    rates = {2: [300.0, 300.0, *own], 1: [200.0, 200.0], 0: zero}
    assert asked_over_whole_epochs(rates, spread=0.10) == [2, 1, 1, 2, 2, 0, 0, 2]


def test_such_runs_are_sized_in_whole_epochs() -> None:
    assert epochs.sizes(SHORT, warmup=5) == (32, 64)
    assert epochs.sizes(SHORT, warmup=40) == (64, 64)


def epochs_run(count: int, *, requested: int = 12, startup_ms: float | Sequence[float] = 300.0) -> RunResult:
    """Epochs of 4 batches at 2 workers: each starts with a wait of ``startup_ms`` (each epoch's, in
    turn, where it is a sequence) for its workers, then steps of 100 ms with no wait."""
    out, start = [], 0
    startups = [startup_ms] * count if isinstance(startup_ms, float | int) else list(startup_ms)
    for epoch in range(1, count + 1):
        made = b.batches([startups[epoch - 1], 0.0, 0.0, 0.0], 100.0, iterator_id=epoch, start_ns=start)
        out.extend(made)
        start = made[-1].wait_end_ns + 100 * b.MS
    found = b.run("workers=2", out, warmup=4, requested=requested)
    loader = dataclasses.replace(b.loader(2), dataset_len=128)  # 4 batches of 32
    return dataclasses.replace(found, loaders=(loader,))


def test_a_run_over_whole_epochs_is_read_by_its_epochs_start_ups_included() -> None:
    steady = pt(2, 320.0)  # what a steady window reads: 32 samples per 100 ms
    found = epochs.as_point(epochs_run(3), steady)
    # an epoch: the last step of the one before, its start-up and three more steps: 700 ms for 128 samples
    assert found.variant == WHOLE_EPOCHS and not found.after_first_epoch
    assert found.throughput_samples_per_s == pytest.approx(128 / 0.7)
    assert found.spread == pytest.approx(0.0)


def test_a_runs_epochs_that_differ_spread_it_by_half_their_range_of_its_rate() -> None:
    # after the warm-up, epochs of 700 ms and 1100 ms for 128 samples: 183 and 116 samples/s
    found = epochs.as_point(epochs_run(3, startup_ms=(300.0, 300.0, 700.0)), pt(2, 320.0))
    rate = 256 / 1.8
    assert found.throughput_samples_per_s == pytest.approx(rate)
    assert found.spread == pytest.approx((128 / 0.7 - 128 / 1.1) / 2 / rate)  # not of the faster epoch's rate


def test_a_run_that_ended_before_its_epochs_has_no_rate_and_other_runs_are_left_alone() -> None:
    short = epochs.as_point(epochs_run(2), pt(2, 320.0))
    assert short.variant == WHOLE_EPOCHS and short.throughput_samples_per_s is None
    steady = epochs.as_point(epochs_run(3, requested=10), pt(2, 320.0))
    assert steady.variant is None and steady.throughput_samples_per_s == 320.0


def test_no_workers_is_advised_where_it_beats_the_own_setting_over_whole_epochs() -> None:
    points = [
        *undecided(),
        dataclasses.replace(pt(2, 270.0, spread=0.02, variant=WHOLE_EPOCHS), rss_bytes=2 * GIB),
        dataclasses.replace(pt(0, 300.0, spread=0.03, variant=WHOLE_EPOCHS), rss_bytes=GIB),
    ]
    points[0] = dataclasses.replace(points[0], rss_bytes=2 * GIB)
    points[2] = dataclasses.replace(points[2], rss_bytes=GIB)
    found = outcome.conclude(points, 2, SHORT, cpu_count=2)
    assert found is not None and found.significant and found.recommended_workers == 0
    assert found.speedup == pytest.approx(300 / 270) and found.noise == pytest.approx(0.05)
    assert found.memory_cost_bytes == -GIB
    assert "over whole epochs" in found.conclusion


def test_a_steady_windows_gain_of_fewer_workers_that_whole_epochs_do_not_show_is_not_advised() -> None:
    # 1 worker read 1.24x in steady windows; over whole epochs it is no faster than the own setting
    points = [
        twice(pt(2, 276.0, spread=0.05)),
        twice(pt(1, 342.0, spread=0.05)),
        twice(pt(0, 303.0, spread=0.1)),
        pt(2, 263.0, spread=0.03, variant=WHOLE_EPOCHS),
        pt(1, 262.0, spread=0.03, variant=WHOLE_EPOCHS),
        pt(0, 292.0, spread=0.04, variant=WHOLE_EPOCHS),
    ]
    found = outcome.conclude(points, 2, SHORT, cpu_count=2)
    assert found is not None and found.significant and found.recommended_workers == 0
    assert found.speedup == pytest.approx(292 / 263)
    points[-1] = pt(0, 270.0, spread=0.04, variant=WHOLE_EPOCHS)  # 1.03x: inside the noise
    found = outcome.conclude(points, 2, SHORT, cpu_count=2)
    assert found is not None and not found.significant and found.recommended_workers == 2


def test_a_gain_over_whole_epochs_inside_their_noise_keeps_the_own_setting() -> None:
    for zero, spread in ((280.0, 0.01), (300.0, 0.12)):  # 1.04x against the floor; 1.11x against 12%
        points = [
            *undecided(),
            pt(2, 270.0, spread=0.01, variant=WHOLE_EPOCHS),
            pt(0, zero, spread=spread, variant=WHOLE_EPOCHS),
        ]
        found = outcome.conclude(points, 2, SHORT, cpu_count=2)
        assert found is not None and not found.significant and found.recommended_workers == 2
        assert found.conclusion.startswith("Keep num_workers=2")


def test_a_gain_after_a_slower_setting_that_whole_epochs_measured_again_carries_no_caveat() -> None:
    # steady windows, once each: 0 workers 1.2x after 1 worker at 0.83x, which alone holds it back
    points = [pt(2, 300.0, spread=0.05), pt(1, 250.0, spread=0.05), pt(0, 360.0, spread=0.05)]
    assert outcome.conclude(points, 2, SHORT, cpu_count=2).caveats  # type: ignore[union-attr]
    for zero, advised in ((320.0, 0), (272.0, 2)):  # whole epochs tell 0 apart, or keep the own setting
        measured = [*points, pt(2, 270.0, spread=0.02, variant=WHOLE_EPOCHS)]
        found = outcome.conclude([*measured, pt(0, zero, spread=0.02, variant=WHOLE_EPOCHS)], 2, SHORT, cpu_count=2)
        assert found is not None and found.recommended_workers == advised
        assert not any("measuring both again" in caveat for caveat in found.caveats)


MID = Limits(epoch_batches=64)  # up to 8 workers have a steady window in an epoch, 10 do not


def more_workers_faster() -> list[SweepPoint]:
    """After the first epoch: in steady windows 8 workers 1.67x the script's 2, the loop no longer
    waiting, 6 workers short of it; 10 workers, over whole epochs (no steady window), 1.68x."""
    return [
        twice(pt(2, 300.0, spread=0.05)),
        twice(pt(6, 420.0, spread=0.05, wait=0.15)),
        twice(pt(8, 500.0, spread=0.05, wait=0.02)),
        twice(pt(10, 505.0, spread=0.05, wait=0.02)),
    ]


def test_more_workers_found_faster_are_measured_against_the_own_setting_in_whole_epoch_pairs() -> None:
    # each short epoch starts the workers again, and a steady window leaves that out: more workers
    # take longer to start, so the setting the windows found is paired with the own one; and so is
    # the fastest setting read over whole epochs, start-ups included, unlike the own steady window
    points = more_workers_faster()
    asked = []
    while (workers := wanted(points, MID, 2, down=False)) is not None and len(asked) < 10:
        asked.append(workers)
        points.append(pt(workers, 280.0 if workers == 2 else 300.0, spread=0.01, variant=WHOLE_EPOCHS))
    assert asked == [2, 8, 8, 2, 2, 10, 10, 2]
    # the pair takes an epoch each in one run of the script, told so
    loader = dataclasses.replace(b.loader(2), dataset_len=64 * 32)
    curve = Curve(points=tuple((n, 60.0 * n) for n in range(9)), best=8, limit="the cores")
    state = State(
        points=tuple(more_workers_faster()), current=2, loader=loader, limits=dataclasses.replace(MID, max_workers=10),
        prediction=curve, cpu_count=16, measured_any=True, loaders_compete=False,
    )  # fmt: skip
    found = step.next_step(state)
    assert found is not None and found.at_epochs and found.turns == ((2, 64 + 64), (8, 64), (8, 64), (2, 64))
    assert "more workers than 2" in found.note and "start-ups included" in found.note
    # workers that persist, a long epoch, a grid asked for, nothing faster: steady windows say enough
    for limits in (dataclasses.replace(MID, persistent_workers=True), Limits(epoch_batches=500)):
        assert wanted(more_workers_faster(), limits, 2, down=False) is None
    assert wanted(more_workers_faster(), dataclasses.replace(MID, grid=(2, 6, 8)), 2, down=False) is None
    assert wanted(more_workers_faster()[:1], MID, 2, down=False) is None


def test_settings_compared_over_whole_epochs_are_not_confirmed_in_a_steady_window_first() -> None:
    # each steady window measured once: 8 workers 1.67x the script's 2 would be measured once more
    # each, but the pairs of whole epochs measure both twice, the order reversed, and the advice
    # rests on them; zoo gpu_paced.py made such a run of 2 s before every round
    once = [dataclasses.replace(p, runs=1) for p in more_workers_faster()]
    loader = dataclasses.replace(b.loader(2), dataset_len=64 * 32)
    curve = Curve(points=tuple((n, 60.0 * n) for n in range(9)), best=8, limit="the cores")
    state = State(
        points=tuple(once), current=2, loader=loader, limits=dataclasses.replace(MID, max_workers=10),
        prediction=curve, cpu_count=16, measured_any=True, loaders_compete=False,
    )  # fmt: skip
    found = step.next_step(state)
    assert found is not None and found.at_epochs and found.turns == ((2, 64 + 64), (8, 64), (8, 64), (2, 64))
    # where the budget holds no round, the steady windows decide, and the fastest (10) is measured again
    held = step.next_step(dataclasses.replace(state, limits=dataclasses.replace(state.limits, more_epochs=False)))
    assert held is not None and held.second and [s.workers for s in held.specs] == [10]


def paired_with_8(*rates: float) -> list[SweepPoint]:
    """The steady windows of ``more_workers_faster``, then whole epochs: own, 8, 8, own at ``rates``."""
    whole = [pt(w, r, spread=0.02, variant=WHOLE_EPOCHS) for w, r in zip((2, 8, 8, 2), rates, strict=True)]
    return [*more_workers_faster(), *whole]


def test_more_workers_are_advised_by_what_whole_epochs_measured_their_start_ups_included() -> None:
    found = outcome.conclude(paired_with_8(280.0, 400.0, 400.0, 282.0), 2, MID, cpu_count=16)  # 1.43x
    assert found is not None and found.significant and found.recommended_workers == 8
    assert found.speedup == pytest.approx(400 / 281, rel=0.01)  # not the steady windows' 1.67x
    assert "over whole epochs, each one's worker start-up included" in found.conclusion
    # the workers' start-ups eat the steady windows' gain: the own setting is kept
    kept = outcome.conclude(paired_with_8(280.0, 285.0, 283.0, 281.0), 2, MID, cpu_count=16)
    assert kept is not None and not kept.significant and kept.recommended_workers == 2
    assert kept.conclusion.startswith("Keep num_workers=2: num_workers=8 was faster in steady windows, but not")
    assert "worker start-up included (persistent_workers=True starts them once)" in kept.conclusion


def started(points: list[SweepPoint], **startup_s: float) -> list[SweepPoint]:
    """``points`` with each setting's worker start-up as its run measured it (``w2=0.3``: 2 workers)."""
    return [dataclasses.replace(p, startup_s=startup_s.get(f"w{p.workers}")) for p in points]


def test_more_workers_whose_start_ups_cannot_undo_their_gain_are_advised_by_an_estimate_without_pairs() -> None:
    # epochs of 64 batches of 32: 2,048 samples, 6.8 s at the own 300 samples/s, 4.1 s at 8 workers'
    # 500; 8 workers' epoch waits 0.5 s for them to start, the own one's 0.3 s
    limits = dataclasses.replace(MID, batch_size=32)
    points = started(more_workers_faster()[:3], w2=0.3, w6=0.4, w8=0.5)  # 10, read over whole epochs, aside
    assert wanted(points, limits, 2, down=False) is None  # no pairs: no start-up could undo 1.5x
    found = outcome.conclude(points, 2, limits, cpu_count=16)
    assert found is not None and found.significant and found.recommended_workers == 8
    own_s, eight_s = 2048 / 300, 2048 / 500 + 0.5
    assert found.speedup == pytest.approx((own_s + 0.3) / eight_s)  # 1.55x, not the steady windows' 1.67x
    assert (
        found.estimated_over_epochs
        and "steady window and each epoch's measured worker start-up make them" in found.conclusion
    )
    # start-ups of 3 s a epoch at 8 workers could undo it (6.8 s against 7.1): measured in pairs, as
    # are settings whose start-ups were not measured or whose epoch is long enough not to matter
    slow = started(more_workers_faster()[:3], w2=0.3, w6=0.4, w8=3.0)
    assert wanted(slow, limits, 2, down=False) == 2
    assert wanted(more_workers_faster()[:3], limits, 2, down=False) == 2
    decided = outcome.conclude([*points, *paired_with_8(280.0, 400.0, 400.0, 282.0)[4:]], 2, limits, cpu_count=16)
    assert decided is not None and decided.speedup == pytest.approx(400 / 281, rel=0.01)
    assert not decided.estimated_over_epochs and "over whole epochs, each one's" in decided.conclusion
    # 10 workers have no steady window in such an epoch: their reading spans epochs, start-ups included
    ten = dataclasses.replace(pt(10, 505.0, spread=0.05, wait=0.02), startup_s=0.6)
    assert epochs.estimated(points[0], ten, limits) is None and epochs.estimated(points[0], points[2], limits)
    long = outcome.conclude(points, 2, dataclasses.replace(limits, epoch_batches=500), cpu_count=16)
    assert long is not None and long.speedup == pytest.approx(500 / 300) and not long.estimated_over_epochs


def test_a_time_budget_that_holds_no_more_rounds_ends_the_pairs_after_those_begun_and_says_so() -> None:
    from fastload_cli.analyzer import search

    # the same open difference as above: four rounds more without a budget
    held = dataclasses.replace(SHORT, more_epochs=False)
    rates = {2: [300.0] * 30, 1: [200.0] * 2, 0: [345.0, 297.0, 300.0, 261.0, 336.0, 330.0] * 2}
    points, asked = undecided(), []
    # the budget ran out after the first pair had begun: the round begun is measured whole
    while (workers := wanted(points, held if asked else SHORT, 2, down=True)) is not None:
        asked.append(workers)
        points.append(pt(workers, rates[workers].pop(0), spread=0.0, variant=WHOLE_EPOCHS))
    assert asked == [2, 1, 1, 2, 2, 0, 0, 2]  # the first round: the own setting against each with fewer
    assert epochs.held_back(points, held, 2, down=True) and not epochs.held_back(points, SHORT, 2, down=True)
    begun = [*points, pt(2, 300.0, spread=0.0, variant=WHOLE_EPOCHS)]
    assert epochs.pending(begun, held, 2, down=True) == [0, 0, 2]
    # a round begun in one run of the script that ended first, whose rest the budget does not
    # hold in runs of their own: nothing past what was measured, and the caveat says so
    cut = dataclasses.replace(held, finish_rounds=False)
    assert epochs.pending(begun, cut, 2, down=True) == [] and epochs.held_back(begun, cut, 2, down=True)
    unfinished = State(points=tuple(begun), current=2, loader=None, limits=cut, prediction=None, cpu_count=2,
                       measured_any=True, sizing=Sizing(), loaders_compete=True)  # fmt: skip
    said = search.result(unfinished)
    assert said is not None and search.CUT_SHORT in said.caveats and search.HELD_BACK not in said.caveats
    found = State(points=tuple(points), current=2, loader=None, limits=held, prediction=None, cpu_count=2,
                  measured_any=True, sizing=Sizing(), loaders_compete=True)  # fmt: skip
    result = search.result(found)
    assert result is not None and search.HELD_BACK in result.caveats
    unheld = search.result(dataclasses.replace(found, limits=SHORT))
    assert unheld is not None and search.HELD_BACK not in unheld.caveats


def test_a_time_budget_spent_before_the_first_pair_measures_none_and_advises_no_fewer_workers_from_steady_windows() -> (
    None
):
    from fastload_cli.analyzer import search

    held = dataclasses.replace(SHORT, more_epochs=False)
    assert wanted(undecided(), held, 2, down=True) is None
    assert epochs.held_back(undecided(), held, 2, down=True)
    # steady windows read 0 workers 1.4x the script's 2, beyond their noise: over whole epochs that
    # would be measured before it is advised; held back, the script's own setting is kept, said why
    faster = [twice(pt(2, 300.0, spread=0.02)), twice(pt(1, 310.0, spread=0.02)), twice(pt(0, 420.0, spread=0.02))]
    state = State(points=tuple(faster), current=2, loader=None, limits=held, prediction=None, cpu_count=2,
                  measured_any=True, sizing=Sizing(), loaders_compete=True)  # fmt: skip
    assert outcome.conclude(faster, 2, held, cpu_count=2).recommended_workers == 0  # the windows alone
    found = search.result(state)
    assert found is not None and not found.significant and found.recommended_workers == 2
    assert found.conclusion.startswith("Keep num_workers=2 for now: num_workers=0 was 1.40x as fast in steady windows")
    assert search.HELD_BACK not in found.caveats and search.NONE_IN_BUDGET not in found.caveats  # said once
    # the budget also held back the second run of the script's own setting, measured once: the
    # caveat that names it stays with the conclusion that keeps it
    once = [pt(2, 300.0, spread=0.02), *faster[1:]]
    unconfirmed = dataclasses.replace(state, points=tuple(once), limits=dataclasses.replace(held, confirm=False))
    kept = search.result(unconfirmed)
    assert kept is not None and kept.conclusion.startswith("Keep num_workers=2 for now")
    assert search.ONCE.format(workers=2) in kept.caveats
    # sweep-workers has no budget: the pairs are measured
    assert wanted(faster, SHORT, 2, down=True) == 2
