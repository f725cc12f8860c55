"""The paper's findings (Omee et al., AutoMatBench) tested on one exhaustive reference table.

Each claim is read twice: robustly, over `C_min` (n*s >= min_test_points, where an MAE is not an
extreme-value draw of a tiny test set), and over the full feasible space beside it. Every claim is
a paired comparison inside blocks of the other axes, so the training-set effect of (r, n) is held
fixed when s is compared, and (r, s) when n is compared. Blocks of one r slice share its data, so
they are not independent: the interval is a 95% t interval over the r slices (each slice's mean
block difference; the r slice is the cluster). Declared thresholds:

- "s <= 7-8 optimal": per (r, n) block, mean m over s <= 8 minus mean m over s > 8; supported when
  the interval lies below 0, contradicted above 0, otherwise "no preference".
- "n <= 24 enough": per (r, s) block, mean m over n <= 24 minus mean m over n > 24; supported when
  the interval's upper end is below a 5% margin of the mean MAE (small n is not materially worse)
  and its lower end is not above 0; "worse, within the margin" when small n is significantly worse
  but by less than the margin; contradicted when its lower end is above the margin, otherwise
  inconclusive.
- "r negligible": the share of the variance of m explained by r (eta squared of the one-way
  split by r, with its F-test); supported when under 5%, contradicted when at least 5% with
  p < 0.05, otherwise inconclusive. Only the r values the JARVIS pool allows exist.
- "band gap s = 1" (band gap only): per (r, n) block holding s = 1, m(s = 1) minus the block's
  mean over s != 1; supported below 0, contradicted above 0, otherwise "no preference"; with the
  share of the top 5% that has s = 1 beside its base rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypedDict, Unpack

import numpy as np

from labreplay.suites.configsearch.space import Config

N_MARGIN = 0.05  # "enough": small n at most 5% of the mean MAE worse
R_NEGLIGIBLE_SHARE = 0.05  # r explains under 5% of the variance of m
S_SPLIT = 8
N_SPLIT = 24
CLAIMS = ("s <= 7-8 optimal", "n <= 24 enough", "r negligible", "band gap s = 1")


def _t_interval(diffs: Sequence[float]) -> tuple[float, float, float]:
    from scipy.stats import t

    arr = np.asarray(diffs, dtype=float)
    mean = float(arr.mean())
    if len(arr) < 2:
        return mean, mean, mean
    half = float(t.ppf(0.975, len(arr) - 1) * arr.std(ddof=1) / math.sqrt(len(arr)))
    return mean, mean - half, mean + half


def _blocked(
    maes: dict[Config, float],
    block: Callable[[Config], tuple[float, int]],
    first: Callable[[Config], bool],
    second: Callable[[Config], bool],
    contrast: str,
) -> list[tuple[float, float]]:
    """Per block: (its r slice, mean m over `first` minus mean m over `second`), blocks holding
    both. Every block key starts with r."""
    groups: dict[tuple[float, int], list[Config]] = {}
    for c in maes:
        groups.setdefault(block(c), []).append(c)
    out = []
    for key, configs in groups.items():
        a = [maes[c] for c in configs if first(c)]
        b = [maes[c] for c in configs if second(c)]
        if a and b:
            diff = float(np.mean(a)) - (float(np.mean(b)) if contrast == "mean" else min(b))
            out.append((float(key[0]), diff))
    return out


def _clustered(pairs: Sequence[tuple[float, float]]) -> tuple[float, float, float, int]:
    """Mean and 95% t interval over r slices (the cluster: blocks of one r share its training
    and test sets, so they are not independent): t over the slices' mean differences, df =
    slices - 1. Returns (mean, lo, hi, slices)."""
    by_r: dict[float, list[float]] = {}
    for r, d in pairs:
        by_r.setdefault(r, []).append(d)
    mean, lo, hi = _t_interval([float(np.mean(v)) for _, v in sorted(by_r.items())])
    return mean, lo, hi, len(by_r)


def _marginal(maes: dict[Config, float], axis: str) -> dict[float, float]:
    groups: dict[float, list[float]] = {}
    for c, v in maes.items():
        groups.setdefault(float(getattr(c, axis)), []).append(v)
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def _eta_squared(maes: dict[Config, float], axis: str) -> tuple[float, float | None]:
    """Share of the variance of m explained by `axis` (one-way), and the F-test p value."""
    from scipy.stats import f_oneway

    groups: dict[float, list[float]] = {}
    for c, v in maes.items():
        groups.setdefault(float(getattr(c, axis)), []).append(v)
    values = np.array(list(maes.values()), dtype=float)
    total = float(((values - values.mean()) ** 2).sum())
    between = sum(len(g) * (float(np.mean(g)) - float(values.mean())) ** 2 for g in groups.values())
    share = between / total if total > 0 else 0.0
    usable = [g for g in groups.values() if len(g) > 1]
    p = float(f_oneway(*usable).pvalue) if len(usable) > 1 else None
    return share, p


# Differences within summation rounding of 0 are 0 (a flat table must not read as an effect).
ROUNDING = 1e-12


def _signed_verdict(lo: float, hi: float, blocks: int, below: str, above: str, none: str) -> str:
    if blocks < 2:
        return "untestable"
    if hi < -ROUNDING:
        return below
    if lo > ROUNDING:
        return above
    return none


class ClaimFields(TypedDict, total=False):
    """What a claim row says besides its claim, reading and verdict (by claim)."""

    statistic: str
    value: float
    ci95: list[float]
    blocks: int
    clusters: int
    best_s: int
    best_n: int
    margin: float
    p_value: float | None
    r_values: list[float]
    r_range: float
    top5_share_s1: float
    base_rate_s1: float
    test: str


class ClaimRow(ClaimFields):
    claim: str
    reading: str
    verdict: str


class ClaimTableRow(ClaimRow):
    """`claims_table`: one claim under one reading of one task x model."""

    task: str
    model: str
    configurations: int


def _row(claim: str, reading: str, verdict: str, **fields: Unpack[ClaimFields]) -> ClaimRow:
    return {"claim": claim, "reading": reading, "verdict": verdict, **fields}


def _claims_on(maes: dict[Config, float], task: str, reading: str) -> list[ClaimRow]:
    by_s, by_n, by_r = (_marginal(maes, a) for a in ("s", "n", "r"))
    mean_mae = float(np.mean(list(maes.values())))
    rows = []
    diffs = _blocked(
        maes, lambda c: (c.r, c.n), lambda c: c.s <= S_SPLIT, lambda c: c.s > S_SPLIT, "mean"
    )
    d, lo, hi, slices = _clustered(diffs) if diffs else (math.nan, math.nan, math.nan, 0)
    rows.append(
        _row(
            CLAIMS[0], reading,
            _signed_verdict(lo, hi, slices, "supported", "contradicted", "no preference"),
            statistic="mean m(s <= 8) - mean m(s > 8) per (r, n) block, averaged per r slice",
            value=d, ci95=[lo, hi], blocks=len(diffs), clusters=slices,
            best_s=int(min(by_s, key=by_s.__getitem__)),
            test=f"t over {slices} r slices (clusters) of {len(diffs)} (r, n) blocks",
        )
    )  # fmt: skip
    diffs = _blocked(
        maes, lambda c: (c.r, c.s), lambda c: c.n <= N_SPLIT, lambda c: c.n > N_SPLIT, "mean"
    )
    d, lo, hi, slices = _clustered(diffs) if diffs else (math.nan, math.nan, math.nan, 0)
    margin = N_MARGIN * mean_mae
    n_verdict = (
        "untestable"
        if slices < 2
        else "worse, within the margin"
        if lo > ROUNDING and hi < margin
        else "supported"
        if hi < margin
        else "contradicted"
        if lo > margin
        else "inconclusive"
    )
    rows.append(
        _row(
            CLAIMS[1], reading, n_verdict,
            statistic="mean m(n <= 24) - mean m(n > 24) per (r, s) block, averaged per r slice",
            value=d, ci95=[lo, hi], blocks=len(diffs), clusters=slices, margin=margin,
            best_n=int(min(by_n, key=by_n.__getitem__)),
            test=f"t over {slices} r slices (clusters) of {len(diffs)} (r, s) blocks vs a 5% "
            "margin of the mean MAE",
        )
    )  # fmt: skip
    share, p = _eta_squared(maes, "r")
    r_verdict = (
        "untestable"
        if len(by_r) < 2 or p is None
        else "supported"
        if share < R_NEGLIGIBLE_SHARE
        else "contradicted"
        if p < 0.05
        else "inconclusive"
    )
    rows.append(
        _row(
            CLAIMS[2], reading, r_verdict,
            statistic="share of the variance of m explained by r (eta squared)",
            value=share, p_value=p, r_values=list(by_r),
            r_range=max(by_r.values()) - min(by_r.values()),
            test=f"one-way F over {len(by_r)} feasible r values",
        )
    )  # fmt: skip
    if task == "band_gap":
        diffs = _blocked(maes, lambda c: (c.r, c.n), lambda c: c.s == 1, lambda c: c.s != 1, "mean")
        d, lo, hi, slices = _clustered(diffs) if diffs else (math.nan, math.nan, math.nan, 0)
        ranked = sorted(maes, key=maes.__getitem__)
        top = ranked[: max(1, math.ceil(0.05 * len(ranked)))]
        rows.append(
            _row(
                CLAIMS[3], reading,
                _signed_verdict(lo, hi, slices, "supported", "contradicted", "no preference"),
                statistic="m(s = 1) - mean m(s != 1) per (r, n) block, averaged per r slice",
                value=d, ci95=[lo, hi], blocks=len(diffs), clusters=slices,
                best_s=int(min(by_s, key=by_s.__getitem__)),
                top5_share_s1=sum(1 for c in top if c.s == 1) / len(top),
                base_rate_s1=sum(1 for c in maes if c.s == 1) / len(maes),
                test=f"t over {slices} r slices (clusters) of {len(diffs)} (r, n) blocks "
                "holding s = 1",
            )
        )  # fmt: skip
    return rows


def claims_table(
    task: str, model: str, maes: dict[Config, float], min_test_points: int
) -> list[ClaimTableRow]:
    """Every claim under the robust reading (C_min) and the full-space reading, one row each."""
    robust = {c: v for c, v in maes.items() if c.n * c.s >= min_test_points}
    rows: list[ClaimTableRow] = []
    for reading, table in ((f"robust (n*s >= {min_test_points})", robust), ("full space", maes)):
        if len(table) < 3:
            continue
        for row in _claims_on(table, task, reading):
            rows.append({"task": task, "model": model, "configurations": len(table), **row})
    return rows
