"""Power of a campaign board (METRICS.md "Power line"), normal approximation, declared.

For paired per-assignment differences with standard deviation `sd` over `n` assignments, a
two-sided test at level alpha = 0.05 has power 1 - beta = 0.80 against a true mean difference d
when d >= (z_{1-alpha/2} + z_{1-beta}) * sd / sqrt(n). Conversely, separating a difference d
needs n >= ((z_{1-alpha/2} + z_{1-beta}) * sd / d)^2 assignments.

The SD comes from every pair of distinct ranked systems on the board and from each ranked system
against the context-trained reference (its flat t = 0 score), never from a reference agent or a
system against itself. Pairs differ a lot (two systems sharing one model and selection rule
have a far smaller paired SD than dissimilar ones), so the result is a range over the pairs:
the smallest and the largest SD, never one pooled, optimistic number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import norm

ALPHA = 0.05
POWER = 0.80


def _z_sum() -> float:
    return float(norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER))


def power_line(
    pairs: Sequence[tuple[str, str, Sequence[float]]],
    n_assignments: int,
    difference: float,
    assignments_per_seed: int,
    ranked: int,
) -> dict[str, Any]:
    """`pairs`: (a, b, paired per-assignment AUC differences a - b) for every comparison."""
    z = _z_sum()
    listed: list[dict[str, Any]] = []
    values: list[float] = []
    for a, b, diffs in pairs:
        sd = float(np.std(diffs, ddof=1)) if len(diffs) >= 2 else None
        listed.append({"a": a, "b": b, "n": len(diffs), "sd": sd})
        # Two identical curves have no variance and say nothing about the board's noise.
        if sd is not None and sd > 1e-18:
            values.append(sd)
    sds = sorted(values)
    base: dict[str, Any] = {
        "alpha": ALPHA,
        "power": POWER,
        "method": "normal approximation on paired per-assignment AUC differences",
        "n_assignments": n_assignments,
        "difference": difference,
        "ranked_systems": ranked,
        "pairs": listed,
        "source": (
            "no ranked system"
            if ranked == 0
            else "one ranked system: system vs the context-trained reference only"
            if ranked == 1
            else "every pair of distinct ranked systems and each system vs the context-trained "
            "reference"
        ),
    }
    if not sds or n_assignments < 2:
        return {**base, "sd_range": None, "min_detectable": None, "assignments_needed": None}

    def needed(sd: float) -> int | None:
        return math.ceil((z * sd / difference) ** 2) if difference > 0 else None

    lo, hi = sds[0], sds[-1]
    need = [needed(lo), needed(hi)]
    return {
        **base,
        "sd_range": [lo, hi],
        "min_detectable": [z * lo / math.sqrt(n_assignments), z * hi / math.sqrt(n_assignments)],
        "assignments_needed": need if None not in need else None,
        "seeds_needed": (
            [math.ceil(n / assignments_per_seed) for n in need if n is not None]
            if assignments_per_seed and None not in need
            else None
        ),
    }


def pairs_text(p: dict[str, Any]) -> str:
    return ", ".join(
        f"{q['a']} vs {q['b']} (SD {q['sd']:.4f})"
        if q["sd"] is not None
        else f"{q['a']} vs {q['b']}"
        for q in p["pairs"]
    )


def _range(values: Sequence[float], fmt: str) -> str:
    lo, hi = values
    return (
        fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"
    )


def power_text(p: dict[str, Any]) -> str:
    if p.get("min_detectable") is None:
        return (
            "power: not estimable (no ranked system, fewer than two assignments or no paired "
            "differences)"
        )
    seeds = p.get("seeds_needed")
    needed = p.get("assignments_needed")
    return (
        f"power (normal approx., two-sided {1 - p['alpha']:.0%}, {p['power']:.0%} power; "
        f"{p['source']}: {pairs_text(p)}): with {p['n_assignments']} assignments the smallest "
        f"separable AUC difference is {_range(p['min_detectable'], '{:.4f}')} (smallest-largest "
        f"pair SD); separating {p['difference']:.4f} needs "
        + (_range(needed, "{}") if needed else "-")
        + " assignments"
        + (f" (~{_range(seeds, '{}')} partition seeds)" if seeds else "")
    )
