"""Power of a campaign board (METRICS.md "Power line"), normal approximation, declared.

For paired per-assignment differences with standard deviation `sd` over `n` assignments, a
two-sided test at level alpha = 0.05 has power 1 - beta = 0.80 against a true mean difference d
when d >= (z_{1-alpha/2} + z_{1-beta}) * sd / sqrt(n). Conversely, separating a difference d
needs n >= ((z_{1-alpha/2} + z_{1-beta}) * sd / d)^2 assignments.
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
    differences: Sequence[Sequence[float]],
    n_assignments: int,
    difference: float,
    assignments_per_seed: int,
    source: str,
) -> dict[str, Any]:
    """`differences`: one list of paired per-assignment AUC differences per comparison; their
    variances are pooled (mean of the sample variances; zero-variance comparisons left out)."""
    # A comparison of two identical curves (e.g. two flat references) has no variance and says
    # nothing about the board's noise: left out (declared).
    variances = [v for d in differences if len(d) >= 2 if (v := float(np.var(d, ddof=1))) > 1e-18]
    base: dict[str, Any] = {
        "alpha": ALPHA,
        "power": POWER,
        "method": "normal approximation on paired per-assignment AUC differences",
        "source": source,
        "n_assignments": n_assignments,
        "difference": difference,
    }
    if not variances or n_assignments < 2:
        return {**base, "sd": None, "min_separable": None, "assignments_needed": None}
    sd = math.sqrt(float(np.mean(variances)))
    z = _z_sum()
    needed = math.ceil((z * sd / difference) ** 2) if difference > 0 else None
    return {
        **base,
        "sd": sd,
        "min_separable": z * sd / math.sqrt(n_assignments),
        "assignments_needed": needed,
        "seeds_needed": (
            math.ceil(needed / assignments_per_seed) if needed and assignments_per_seed else None
        ),
    }


def power_text(p: dict[str, Any]) -> str:
    if p.get("min_separable") is None:
        return "power: not estimable (fewer than two assignments or no paired differences)"
    return (
        f"power (normal approx., two-sided {1 - p['alpha']:.0%}, {p['power']:.0%} power, "
        f"paired SD {p['sd']:.4f} from {p['source']}): with {p['n_assignments']} assignments "
        f"the smallest separable AUC difference is {p['min_separable']:.4f}; separating "
        f"{p['difference']:.4f} needs {p['assignments_needed']} assignments "
        f"(~{p['seeds_needed']} partition seeds)"
    )
