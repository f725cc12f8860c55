"""BO against each reference method pooled over the references of a replay, paired by
(reference, seed), with a two-stage cluster bootstrap, led by the strongest baseline.

The strongest baseline is the reference method with the most pooled hits (ties: the one BO
gains least on in normalised score): a conclusion about BO is read against it, never against
random search alone, since the no-data heuristic smallest-ns can beat random (issue 49).

Unit of pairing: one (reference, seed): the two methods share the seed's initial design, so their
difference on that seed is one paired observation. Seeds of one reference share its landscape and
are not independent of each other, so the interval resamples references (with replacement) and
then seeds within each drawn reference (with replacement); the statistic is the mean of the
paired differences over every drawn (reference, seed), i.e. each reference weighs the same. The
interval is the 2.5-97.5% percentile of `RESAMPLES` resamples drawn from `make_rng(seed,
PURPOSE)`; the seed and the count are recorded with the result.

Differences (BO minus the reference method unless said otherwise):
  hit             1 when the search reached the target within T, else 0: a difference in hit rates
  steps_saved     the reference's steps to target minus BO's (a miss counts as T + 1)
  normalised_gain the normalised score after T
  extra_fits      model fits used (new (model, r, n) training sets x n): BO's minus the reference's
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from labreplay.sdk import make_rng

if TYPE_CHECKING:
    from labreplay.suites.configsearch.references import CompareRow, PerSeed, ReferenceMethod

RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
PURPOSE = "configsearch-pooled-cluster-bootstrap"
MEASURES = ("hit", "steps_saved", "normalised_gain", "extra_fits")


class MeasureCI(TypedDict):
    """One measure's pooled mean difference and its cluster bootstrap 95% interval."""

    mean: float
    ci95: list[float]
    resolved: bool


class Bootstrap(TypedDict):
    resamples: int
    seed: int
    purpose: str


class PooledBlock(TypedDict):
    """`pooled`: BO minus each reference method over the scored references, the `strongest`
    first. `vs[method]` maps each of MEASURES to its `MeasureCI`, and "bo_hits",
    "<method>_hits" and "searches" to counts."""

    what: str
    strongest: str | None
    references: list[str]
    left_out: list[str]
    seeds_per_reference: int
    bootstrap: Bootstrap
    vs: dict[str, dict[str, MeasureCI | int]]


def cluster_bootstrap_ci(
    table: np.ndarray, seed: int = BOOTSTRAP_SEED, resamples: int = RESAMPLES
) -> tuple[float, float, float]:
    """Mean of a references x seeds table of paired differences and its two-stage cluster
    bootstrap 95% percentile interval (references, then seeds within each drawn reference)."""
    d = np.asarray(table, dtype=float)
    if d.ndim != 2 or d.size == 0:
        raise ValueError("a cluster bootstrap needs a non-empty references x seeds table")
    refs, seeds = d.shape
    rng = make_rng(seed, PURPOSE)
    means = np.empty(resamples)
    block = max(1, min(resamples, 2_000_000 // d.size))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        b = stop - start
        drawn_refs = rng.integers(0, refs, size=(b, refs))
        drawn_seeds = rng.integers(0, seeds, size=(b, refs, seeds))
        means[start:stop] = d[drawn_refs[:, :, None], drawn_seeds].mean(axis=(1, 2))
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _measure(per_seed: PerSeed, method: ReferenceMethod, measure: str, budget: int) -> list[float]:
    m = per_seed[method]
    if measure == "hit":
        return [float(h) for h in m["hit"]]
    if measure == "steps":
        return [float(s) if s is not None else float(budget + 1) for s in m["steps_to_target"]]
    if measure == "normalised":
        return [float(v or 0.0) for v in m["final_normalised"]]
    return [float(v) for v in m["fits_used"]]


def pooled(
    rows: Sequence[CompareRow],
    against: Sequence[ReferenceMethod] = ("random", "smallest-ns"),
    seed: int = BOOTSTRAP_SEED,
    resamples: int = RESAMPLES,
) -> PooledBlock:
    """BO vs each method in `against` over the replay rows that are scored (a row without a
    usable target, `scored` False, is left out and named)."""
    used = [r for r in rows if r["scored"]]
    out: PooledBlock = {
        "what": "BO minus each reference method, the strongest baseline (most pooled hits) "
        "first, paired by (reference, seed), pooled over the scored references with equal "
        "weight; 95% two-stage cluster bootstrap (references, then seeds within them)",
        "strongest": None,
        "references": [r["reference"] for r in used],
        "left_out": [r["reference"] for r in rows if not r["scored"]],
        "seeds_per_reference": used[0]["seeds"] if used else 0,
        "bootstrap": {"resamples": resamples, "seed": seed, "purpose": PURPOSE},
        "vs": {},
    }
    if not used:
        return out
    if len({len(r["per_seed"]["seeds"]) for r in used}) != 1:
        raise ValueError("pooled rows need the same seeds on every reference")
    strength: dict[str, tuple[int, float]] = {}
    for other in against:
        result: dict[str, MeasureCI | int] = {}
        gain = 0.0
        for measure in MEASURES:
            table = []
            for r in used:
                t = int(r["budget"])
                ps = r["per_seed"]
                if measure == "hit":
                    diff = np.subtract(_measure(ps, "bo", "hit", t), _measure(ps, other, "hit", t))
                elif measure == "steps_saved":
                    diff = np.subtract(
                        _measure(ps, other, "steps", t), _measure(ps, "bo", "steps", t)
                    )
                elif measure == "normalised_gain":
                    diff = np.subtract(
                        _measure(ps, "bo", "normalised", t), _measure(ps, other, "normalised", t)
                    )
                else:
                    diff = np.subtract(
                        _measure(ps, "bo", "fits", t), _measure(ps, other, "fits", t)
                    )
                table.append(diff)
            mean, lo, hi = cluster_bootstrap_ci(np.array(table), seed, resamples)
            result[measure] = {"mean": mean, "ci95": [lo, hi], "resolved": bool(lo > 0 or hi < 0)}
            if measure == "normalised_gain":
                gain = mean
        result["bo_hits"] = sum(sum(r["per_seed"]["bo"]["hit"]) for r in used)
        hits = result[f"{other}_hits"] = sum(sum(r["per_seed"][other]["hit"]) for r in used)
        result["searches"] = sum(len(r["per_seed"]["seeds"]) for r in used)
        out["vs"][other] = result
        # most pooled hits, then the least normalised gain of BO over it
        strength[other] = (hits, -gain)
    strongest = max(against, key=strength.__getitem__)  # equals: the first in `against`
    out["strongest"] = strongest
    out["vs"] = {strongest: out["vs"][strongest]} | {
        k: v for k, v in out["vs"].items() if k != strongest
    }
    return out
