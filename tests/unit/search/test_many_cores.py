"""The num_workers search on models of the hosts fastload's users train on (8 to 128 cores, a GPU
step): the real search driven step by step by ``scripts/simulate_search.py``'s model, and the
16-core H100 host where it first fell short."""

from __future__ import annotations

import random
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import simulate_search as model

CORES = [8, 16, 32, 64, 128]


@pytest.mark.parametrize("cores", CORES)
@pytest.mark.parametrize("noise", [0.05, 0.10])
def test_the_search_ends_near_the_best_setting_within_four_settings(cores: int, noise: float) -> None:
    # every curve of the family (the knee at a quarter, half and three quarters of the cores; with
    # and without workers slowing each other) from the script's own 2, 4 or 8 workers, three seeds
    found = [
        model.run_search(host, random.Random(seed))
        for own in (2, 4, 8)
        for host in model.family(cores, noise, own)
        for seed in range(3)
    ]
    assert max(r.settings for r in found) <= 4
    near = sum(r.ratio >= model.NEAR for r in found)
    # a curve that bends at 128 cores can leave the loop waiting under 10% at the last setting
    # measured, where the gain left is at most 1.1x: the search looks below it then
    assert near >= 0.95 * len(found), sorted(r.ratio for r in found)[:5]
    assert min(r.ratio for r in found) >= 0.85


def test_the_recorded_16_core_host_is_advised_at_least_12_workers() -> None:
    # torchvision's classification reference, -j 4, settings read as recorded (+-30% each), the
    # prediction's knee at 6: 14 workers train at about the ceiling in plain runs
    found = model.run_search(model.RECORDED, random.Random(0), model.recorded_curve())
    assert found.chosen >= 12 and found.settings <= 4
    assert found.ratio >= 0.9
    assert "inside the runs' noise (±30%)" in found.returns  # the limit that ended it, named


def test_the_search_keeps_climbing_while_the_loop_waits_beside_idle_cores() -> None:
    # 64 cores, the knee at 48 workers, a prediction that says 6: the loop still waits at every
    # setting up to the knee, so the search climbs there instead of stopping where returns look flat
    host = model.Host(cores=64, consumer_per_s=1600.0, worker_per_s=1600.0 / 48, own=4, noise=0.05)
    curve = model.recorded_curve()  # returns predicted to end at 6
    found = model.run_search(host, random.Random(1), curve)
    assert found.chosen >= 40 and found.ratio >= 0.9 and found.settings <= 4


@pytest.mark.parametrize("cores", [8, 16])
def test_on_short_epochs_that_start_their_workers_again_more_workers_are_promised_what_training_gets(
    cores: int,
) -> None:
    # epochs of 42 batches, each waiting for its workers to start (more workers, longer): a steady
    # window leaves that out, so the advice rests on whole epochs against the script's own
    found = [
        model.run_search(host, random.Random(seed))
        for own in (2, 4, 8)
        for host in model.family(cores, 0.05, own, epoch=42)
        for seed in range(3)
    ]
    held = [r.held for r in found if r.held is not None]
    assert held and sum(held) >= 0.9 * len(held), f"{sum(held)}/{len(held)}"
    assert max(r.settings for r in found) <= 4


def test_the_recorded_host_with_its_short_epochs_is_advised_at_least_12_workers() -> None:
    found = model.run_search(model.RECORDED_SHORT, random.Random(0), model.recorded_curve())
    assert found.chosen >= 12 and found.settings <= 4 and found.held
