"""Paired statistics for leaderboards: bootstrap intervals and sign tests."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats as _st

from labreplay._rng import make_rng

# The one seed of every leaderboard's paired bootstrap (campaign, generic suite sections).
BOOTSTRAP_SEED = 20261129


def paired_bootstrap_ci(
    differences: Sequence[float],
    seed: int,
    resamples: int = 10_000,
    level: float = 0.95,
    purpose: str = "paired-bootstrap",
) -> tuple[float, float, float]:
    """Mean of paired differences and its percentile bootstrap interval (resampling units)."""
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return (float("nan"), float("nan"), float("nan"))
    rng = make_rng(seed, purpose)
    means = np.empty(resamples)
    # drawn in blocks (same stream as one draw) so memory stays bounded for many units
    block = max(1, min(resamples, 2_000_000 // d.size))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        means[start:stop] = d[rng.integers(0, d.size, size=(stop - start, d.size))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    return (float(d.mean()), float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha)))


def sign_test(differences: Sequence[float]) -> tuple[int, int, float]:
    """(positives, negatives, two-sided exact binomial p); zeros are dropped."""
    d = np.asarray(differences, dtype=float)
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    if pos + neg == 0:
        return pos, neg, 1.0
    return pos, neg, float(_st.binomtest(pos, pos + neg, 0.5).pvalue)
