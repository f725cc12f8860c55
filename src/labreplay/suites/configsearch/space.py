"""The configuration space C = R x N x S of AutoMatBench (section 6.2) and its encoding."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from labreplay.errors import SpecError
from labreplay.suites.configsearch.events import ConfigJson

PAPER_R = tuple(round(0.1 * i, 1) for i in range(11))
PAPER_N = (4, 6, 8, 10, 12, 24, 48, 60)
PAPER_S = tuple(range(1, 11))
PAPER_SIZE = 858
REFERENCE_CONFIG = (0.0, 48, 10)  # Omee et al.'s protocol, the paper's ground truth


class SpaceDoc(TypedDict):
    """A sweep's configuration space as its spec holds it (`ConfigSpace.to_json`)."""

    r: list[float]
    n: list[int]
    s: list[int]
    s_cap: list[list[int]]


@dataclass(frozen=True, order=True)
class Config:
    r: float
    n: int
    s: int

    def label(self) -> str:
        return f"({self.r:g}, {self.n}, {self.s})"

    def to_json(self) -> ConfigJson:
        return {"r": self.r, "n": self.n, "s": self.s}


@dataclass(frozen=True)
class ConfigSpace:
    r_values: tuple[float, ...] = PAPER_R
    n_values: tuple[int, ...] = PAPER_N
    s_values: tuple[int, ...] = PAPER_S
    # the paper's one exception: s <= 8 when n = 60
    s_cap: tuple[tuple[int, int], ...] = ((60, 8),)

    def points(self) -> list[Config]:
        caps = dict(self.s_cap)
        return [
            Config(r, n, s)
            for r in self.r_values
            for n in self.n_values
            for s in self.s_values
            if s <= caps.get(n, s)
        ]

    def to_json(self) -> SpaceDoc:
        return {
            "r": list(self.r_values),
            "n": list(self.n_values),
            "s": list(self.s_values),
            "s_cap": [list(c) for c in self.s_cap],
        }

    def encode(self, configs: Sequence[Config]) -> np.ndarray:
        """Each axis scaled to [0, 1]; n on a log scale because 4 -> 6 matters more than 48 -> 60."""
        r_lo, r_hi = min(self.r_values), max(self.r_values)
        n_lo, n_hi = math.log(min(self.n_values)), math.log(max(self.n_values))
        s_lo, s_hi = min(self.s_values), max(self.s_values)

        def scale(v: float, lo: float, hi: float) -> float:
            return (v - lo) / (hi - lo) if hi > lo else 0.0

        return np.array(
            [
                [scale(c.r, r_lo, r_hi), scale(math.log(c.n), n_lo, n_hi), scale(c.s, s_lo, s_hi)]
                for c in configs
            ],
            dtype=float,
        )


def paper_space() -> ConfigSpace:
    space = ConfigSpace()
    size = len(space.points())
    if size != PAPER_SIZE:  # the paper's count is a checked fact, not an assumption
        raise SpecError(f"configuration space has {size} points, the paper says {PAPER_SIZE}")
    return space
