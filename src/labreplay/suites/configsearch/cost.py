"""The paper's cost claim, "more than half the cost saved", tested on replayed searches.

Cost saved = 1 - (model fits a search used) / (fits of the compared protocol), METRICS.md, per
seed; the claim is read against two protocols, named on every row:
- the exhaustive sweep of the reference table (every feasible configuration), and
- a single-configuration protocol (Omee et al.'s (0, 48, 10), one evaluation per model).
Verdict per (method, protocol): "supported" when the 95% t interval of the saving over seeds lies
above 1/2, "not supported" when it lies below, "inconclusive" otherwise. BO and random search
are both read, and BO's extra fits over random (paired by seed) beside them, so a saving that
comes from the budget rather than from BO shows as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NotRequired, TypedDict

import numpy as np

if TYPE_CHECKING:
    from labreplay.suites.configsearch.references import ScoredRow

CLAIM = "more than half the cost saved"
HALF = 0.5


class SavingClaim(TypedDict):
    protocol: str
    protocol_fits: int
    mean_fits: float
    saved: float
    saved_ci95: list[float]
    verdict: str


class Interval(TypedDict):
    mean: float
    ci95: list[float]


class CostClaims(TypedDict):
    claim: str
    rule: str
    methods: dict[str, list[SavingClaim]]
    bo_extra_fits_vs_random: NotRequired[Interval]


class ReplayCostClaims(CostClaims):
    """One replay's cost claims, named by its reference and problem (the report's rows)."""

    reference: str
    problem: str


class PooledCostClaim(TypedDict):
    """`pooled_cost_claims`: one (problem, method, protocol) saving over references."""

    problem: str
    method: str
    protocol: str
    references: int
    saved: float
    saved_ci95: list[float]
    verdict: str


def _t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    from scipy.stats import t

    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if len(arr) < 2 or float(arr.std(ddof=1)) == 0.0:
        return mean, mean, mean
    half = float(t.ppf(0.975, len(arr) - 1) * arr.std(ddof=1) / math.sqrt(len(arr)))
    return mean, mean - half, mean + half


def _verdict(lo: float, hi: float, count: int, unit: str) -> str:
    if count < 2:
        return f"untestable (one {unit}: no interval)"
    return "supported" if lo > HALF else "not supported" if hi < HALF else "inconclusive"


def saving_claim(fits: Sequence[int], protocol: str, protocol_fits: int) -> SavingClaim:
    """The claim for one method's per-seed fits against one protocol."""
    saved = [1.0 - f / protocol_fits for f in fits]
    mean, lo, hi = _t_interval(saved)
    verdict = _verdict(lo, hi, len(saved), "seed")
    return {
        "protocol": protocol,
        "protocol_fits": protocol_fits,
        "mean_fits": float(np.mean(fits)),
        "saved": mean,
        "saved_ci95": [lo, hi],
        "verdict": verdict,
    }


def cost_claims(
    fits: dict[str, Sequence[int]], exhaustive_fits: int, single_fits: int
) -> CostClaims:
    """Per method (bo, random, ...) the claim against both protocols, and BO's paired extra
    fits over random."""
    protocols = (
        ("exhaustive sweep", exhaustive_fits),
        ("single configuration (0, 48, 10)", single_fits),
    )
    out: CostClaims = {
        "claim": CLAIM,
        "rule": "supported when the 95% t interval of 1 - fits / protocol fits over seeds lies "
        "above 1/2, not supported below, inconclusive otherwise",
        "methods": {
            method: [saving_claim(per_seed, name, n) for name, n in protocols if n > 0]
            for method, per_seed in fits.items()
        },
    }
    if "bo" in fits and "random" in fits:
        extra = [b - r for b, r in zip(fits["bo"], fits["random"], strict=True)]
        mean, lo, hi = _t_interval([float(x) for x in extra])
        out["bo_extra_fits_vs_random"] = {"mean": mean, "ci95": [lo, hi]}
    return out


def cost_claim_line(claims: CostClaims) -> str:
    """One line: each method's verdict against each protocol."""
    parts = []
    for method, rows in claims["methods"].items():
        cells = [
            f"vs {r['protocol']} {r['saved']:.0%} [{r['saved_ci95'][0]:.0%}, "
            f"{r['saved_ci95'][1]:.0%}] {r['verdict']}"
            for r in rows
        ]
        parts.append(f"{method}: " + ", ".join(cells))
    extra = claims.get("bo_extra_fits_vs_random")
    tail = ""
    if extra is not None:
        lo, hi = extra["ci95"]
        tail = f"; BO minus random {extra['mean']:+.1f} fits [{lo:+.1f}, {hi:+.1f}]"
    return f'"{CLAIM}": ' + "; ".join(parts) + tail


def pooled_cost_claims(replays: Sequence[ScoredRow]) -> list[PooledCostClaim]:
    """Per (problem, method, protocol): the mean saving over references, a 95% t interval over
    references (each reference's seeds share its table: the reference is the cluster), the
    verdict by the same rule."""
    groups: dict[tuple[str, str, str], list[float]] = {}
    for r in replays:
        for method, rows in r["cost"]["claim"]["methods"].items():
            for row in rows:
                key = (r["problem"], method, row["protocol"])
                groups.setdefault(key, []).append(row["saved"])
    out: list[PooledCostClaim] = []
    for (problem, method, protocol), saved in groups.items():
        mean, lo, hi = _t_interval(saved)
        verdict = _verdict(lo, hi, len(saved), "reference")
        out.append({
            "problem": problem, "method": method, "protocol": protocol,
            "references": len(saved), "saved": mean, "saved_ci95": [lo, hi], "verdict": verdict,
        })  # fmt: skip
    return out


def cost_claim_markdown(
    per_replay: Sequence[ReplayCostClaims], pooled: Sequence[PooledCostClaim]
) -> list[str]:
    """The claims-table section for the cost claim: pooled rows first, then each replay."""
    lines = [
        f'## "{CLAIM}" (model fits per search; 95% t interval)',
        "",
        "Saved = 1 - fits used / fits of the compared protocol; supported when the interval lies "
        "above 50%. Pooled rows: t over references (the cluster); per-replay rows: t over seeds.",
        "",
        "| problem | method | against | references | saved [95%] | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for p in pooled:
        lo, hi = p["saved_ci95"]
        lines.append(
            f"| {p['problem']} | {p['method']} | {p['protocol']} | {p['references']} | "
            f"{p['saved']:.0%} [{lo:.0%}, {hi:.0%}] | {p['verdict']} |"
        )
    lines += ["", "| reference | problem | verdicts |", "|---|---|---|"]
    for row in per_replay:
        claims: CostClaims = {
            "claim": row["claim"], "rule": row["rule"], "methods": row["methods"],
        }  # fmt: skip
        if "bo_extra_fits_vs_random" in row:
            claims["bo_extra_fits_vs_random"] = row["bo_extra_fits_vs_random"]
        lines.append(f"| {row['reference']} | {row['problem']} | {cost_claim_line(claims)} |")
    return lines
