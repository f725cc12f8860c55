"""Learning-curve measures: held-out gain, adaptive AUC, acceleration (METRICS.md)."""

from __future__ import annotations

from collections.abc import Sequence


def carry_forward(scores: Sequence[float], horizon: int) -> list[float]:
    """Extend s_0..s_t to s_0..s_T by repeating the last checkpoint (early stop)."""
    if not scores:
        raise ValueError("a curve needs at least the pre-campaign point s_0")
    out = list(scores[: horizon + 1])
    while len(out) < horizon + 1:
        out.append(out[-1])
    return out


def adaptive_auc(scores: Sequence[float]) -> float:
    """Trapezoidal area under s_t over t in [0, T], divided by T (unit spacing)."""
    horizon = len(scores) - 1
    if horizon <= 0:
        return float(scores[0])
    area = sum((scores[t] + scores[t + 1]) / 2.0 for t in range(horizon))
    return area / horizon


def held_out_gain(panel_losses: Sequence[float]) -> float:
    """Panel loss at t=0 minus panel loss at t=T (positive = loss decreased)."""
    return float(panel_losses[0] - panel_losses[-1])


def first_passage(scores: Sequence[float], target: float) -> int | None:
    for t, s in enumerate(scores):
        if s >= target:
            return t
    return None


def sustained_passage(scores: Sequence[float], target: float) -> int | None:
    """min t such that s_u >= target for all u in [t, T]."""
    found: int | None = None
    for t in range(len(scores) - 1, -1, -1):
        if scores[t] >= target:
            found = t
        else:
            break
    return found


def acceleration_factor(t_random: int | None, t_adaptive: int | None) -> float | None:
    """t_random / t_adaptive; None unless both branches reach the target.

    A branch that starts at the target (t = 0) gives an undefined ratio: we use t + 1 in both
    numerator and denominator only when either is 0, and say so in the report.
    """
    if t_random is None or t_adaptive is None:
        return None
    if t_adaptive == 0 or t_random == 0:
        return (t_random + 1) / (t_adaptive + 1)
    return t_random / t_adaptive
