"""Recorded randomness: a (seed, keys) pair names one stream, on any machine."""

from __future__ import annotations

import numpy as np
import pytest

from labreplay._rng import derive_seed, make_rng

GOLDEN_DRAWS = [630693, 307976, 851065, 896775, 495704]
GOLDEN_CHILD_SEED = 1546975914


def test_same_seed_and_keys_give_the_same_stream() -> None:
    first = make_rng(7, "campaign", "assignment-3").random(1000)
    second = make_rng(7, "campaign", "assignment-3").random(1000)
    np.testing.assert_array_equal(first, second)
    assert first.tobytes() == second.tobytes()


def test_different_keys_give_different_streams() -> None:
    draws = {
        keys: make_rng(7, *keys).integers(0, 2**62, size=8).tolist()
        for keys in [("a",), ("b",), ("a", "b"), ("b", "a"), ("campaign", "branch-random"), ()]
    }
    assert len({tuple(v) for v in draws.values()}) == len(draws)


def test_different_seeds_give_different_streams() -> None:
    streams = {tuple(make_rng(seed, "x").integers(0, 2**62, size=4)) for seed in range(50)}
    assert len(streams) == 50


def test_a_new_consumer_does_not_shift_an_existing_one() -> None:
    # Drawing from another purpose's generator first must not change this purpose's numbers.
    before = make_rng(3, "selection").random(5)
    make_rng(3, "new-consumer").random(10_000)
    np.testing.assert_array_equal(make_rng(3, "selection").random(5), before)


def test_streams_are_pinned_across_machines() -> None:
    # PCG64 + SeedSequence are specified bit-exactly by numpy; a change here means recorded
    # seeds no longer replay the same trajectories.
    assert make_rng(0, "golden").integers(0, 1_000_000, size=5).tolist() == GOLDEN_DRAWS
    assert derive_seed(2024, "sklearn", "fold-1") == GOLDEN_CHILD_SEED


def test_derive_seed_is_deterministic_and_in_range() -> None:
    seeds = [derive_seed(11, "torch", str(i)) for i in range(200)]
    assert seeds == [derive_seed(11, "torch", str(i)) for i in range(200)]
    assert all(0 <= s < 2**31 - 1 for s in seeds)
    assert len(set(seeds)) == len(seeds)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, None])
def test_invalid_seeds_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative int"):
        make_rng(bad, "x")  # type: ignore[arg-type]
