"""Proper scoring rules for the campaign forecasts (METRICS.md, campaign suite).

A forecast for one experiment is (v, q): v = P(physically valid and characterizable), q = a
distribution over the K recorded reaction categories. Probabilities are clipped to
[eps, 1 - eps] and q is renormalised after clipping; the raw loss (no clipping) is reported
too and may be infinite.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

CATEGORIES: tuple[str, ...] = (
    "completely_reacted",
    "transformed",
    "partially_reacted",
    "unreacted",
)


def clip_forecast(
    p_valid: float, q: Mapping[str, float], eps: float, categories: Sequence[str] = CATEGORIES
) -> tuple[float, dict[str, float]]:
    v = min(max(float(p_valid), eps), 1.0 - eps)
    clipped = {k: min(max(float(q.get(k, 0.0)), eps), 1.0 - eps) for k in categories}
    total = sum(clipped.values())
    return v, {k: val / total for k, val in clipped.items()}


def joint_log_loss(
    p_valid: float,
    q: Mapping[str, float],
    outcome_valid: bool,
    outcome_category: str | None,
    eps: float | None,
    categories: Sequence[str] = CATEGORIES,
) -> float:
    """-ln v - ln q_k if valid with category k; -ln(1 - v) if a physical failure.

    eps=None gives the raw loss (inf where a probability of 0 was given to what happened).
    """
    if eps is None:
        total = sum(max(float(q.get(k, 0.0)), 0.0) for k in categories)
        v = float(p_valid)
        qk = (
            (float(q.get(outcome_category, 0.0)) / total)
            if (outcome_category and total > 0)
            else 0.0
        )
    else:
        v, qn = clip_forecast(p_valid, q, eps, categories)
        qk = qn.get(outcome_category, 0.0) if outcome_category else 0.0
    if not outcome_valid:
        return _neg_log(1.0 - v)
    if outcome_category is None:
        raise ValueError("a valid outcome needs a category")
    return _neg_log(v) + _neg_log(qk)


def _neg_log(p: float) -> float:
    return math.inf if p <= 0.0 else -math.log(p)


def binary_log_loss(p: float, target: int, eps: float) -> float:
    p = min(max(float(p), eps), 1.0 - eps)
    return -math.log(p) if target == 1 else -math.log(1.0 - p)
