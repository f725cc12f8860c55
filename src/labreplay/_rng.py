"""Explicit, recorded randomness.

Every random choice in labreplay comes from a numpy Generator built here from a recorded integer
seed and a tuple of string keys naming what the stream is for, so that adding a new consumer never
shifts the numbers an existing consumer draws.
"""

from __future__ import annotations

import hashlib
from typing import TypeVar

import numpy as np


def _key_entropy(keys: tuple[str, ...]) -> list[int]:
    digest = hashlib.sha256("\x1f".join(keys).encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


def make_rng(seed: int, *keys: str) -> np.random.Generator:
    """A Generator for `seed` and purpose `keys`; same arguments -> same stream on any machine."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    sequence = np.random.SeedSequence([seed, *_key_entropy(keys)])
    return np.random.Generator(np.random.PCG64(sequence))


def derive_seed(seed: int, *keys: str) -> int:
    """A child integer seed, for handing to code that wants an int (sklearn, torch)."""
    return int(make_rng(seed, *keys).integers(0, 2**31 - 1))


T = TypeVar("T")


def first_in_seeded_order(items: list[T], limit: int | None, seed: int, what: str) -> list[T]:
    """`--limit N`: the first N of `items` in an order drawn from `seed` (kept in their
    original order, so a larger N adds units and never reshuffles the smaller subset's)."""
    if limit is None or limit >= len(items):
        return list(items)
    order = make_rng(seed, "cli-limit", what).permutation(len(items))
    keep = sorted(int(i) for i in order[:limit])
    return [items[i] for i in keep]
