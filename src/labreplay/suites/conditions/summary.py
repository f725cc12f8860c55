"""Run-level metrics: per type and variant, Delta-axis, precedent lift with a paired bootstrap
clustered by source table and a sign test, and the audits (gold position vs a shuffled null;
yield-only vs product utility).

Questions cut from one source table share its rows, so they are not independent: every
interval over questions resamples whole tables (METRICS.md, fourth round)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NotRequired, TypedDict

import numpy as np

from labreplay.sdk import make_rng
from labreplay.sdk.scoring import sign_test as paired_sign_test
from labreplay.suites.conditions.events import AnswerResult
from labreplay.suites.conditions.scoring import AnswerKey, TypeMetrics, aggregate

BOOTSTRAP_RESAMPLES = 10_000
# Below this many source tables a percentile bootstrap over tables under-covers (it cannot
# draw a resample more extreme than the few tables it has): a cluster-robust t interval with
# tables - 1 degrees of freedom is used instead, and named.
MIN_BOOTSTRAP_CLUSTERS = 10
MC_NULL_DRAWS = 10_000


class Interval(TypedDict):
    """A mean with its 95% interval (`cluster_bootstrap`): None for both
    without values; how it was resampled (or not) when there were."""

    n: int
    mean: float | None
    ci95: list[float] | None
    seed: int
    clusters: NotRequired[int]
    resamples: NotRequired[int]
    resampled: NotRequired[str]


class SignTest(TypedDict):
    positive: int
    negative: int
    ties: int
    p_value: float | None


class LiftInterval(Interval):
    """One precedent lift: the clustered interval plus its sign test."""

    sign_test: SignTest


class GoldPosition(TypedDict):
    n: int
    gold_at_zero: int
    expected: float
    p_value: float
    draws: int


class Summary(TypedDict):
    """All run-level metrics of one agent on one question file (`summarise`)."""

    by_type: dict[str, TypeMetrics]  # "<type>.<variant>"
    delta_axis: float | None
    precedent_lift: dict[str, LiftInterval]  # "<type>.<metric>"
    by_dataset: dict[str, dict[str, TypeMetrics]]  # dataset -> type (no precedents)
    n_questions: int
    n_invalid: int


def cluster_bootstrap(
    values: Sequence[float],
    clusters: Sequence[str],
    seed: int,
    resamples: int = BOOTSTRAP_RESAMPLES,
    purpose: str = "cluster-bootstrap",
) -> Interval:
    """Mean of `values` with a percentile 95% interval that resamples whole clusters (source
    tables) with replacement: each resample's mean pools the values of its drawn tables."""
    if len(values) == 0:
        return {"n": 0, "clusters": 0, "mean": None, "ci95": None, "seed": seed}
    names = sorted(set(clusters))
    index = {c: i for i, c in enumerate(names)}
    members = np.array([index[c] for c in clusters])
    sums = np.bincount(members, weights=np.asarray(values, dtype=float), minlength=len(names))
    counts = np.bincount(members, minlength=len(names)).astype(float)
    mean = float(sums.sum() / counts.sum())
    if len(names) < MIN_BOOTSTRAP_CLUSTERS:
        return {
            "n": len(values),
            "clusters": len(names),
            "mean": mean,
            "ci95": _few_clusters_interval(sums, counts, mean),
            "seed": seed,
            "resampled": f"none: fewer than {MIN_BOOTSTRAP_CLUSTERS} source tables, "
            "cluster-robust t interval (df = tables - 1)",
        }
    rng = make_rng(seed, purpose)
    means = np.empty(resamples)
    block = max(1, min(resamples, 2_000_000 // len(names)))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        drawn = rng.integers(0, len(names), size=(stop - start, len(names)))
        means[start:stop] = sums[drawn].sum(axis=1) / counts[drawn].sum(axis=1)
    return {
        "n": len(values),
        "clusters": len(names),
        "mean": mean,
        "ci95": [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))],
        "seed": seed,
        "resamples": resamples,
        "resampled": "source tables",
    }


def _few_clusters_interval(sums: np.ndarray, counts: np.ndarray, mean: float) -> list[float] | None:
    """mean +- t(0.975, C - 1) x the cluster-robust standard error of a pooled mean (None with
    one table: nothing to estimate the spread from)."""
    from scipy.stats import t as student_t

    clusters = len(sums)
    if clusters < 2:
        return None
    residual = sums - mean * counts
    se = float(np.sqrt(clusters / (clusters - 1) * (residual**2).sum()) / counts.sum())
    half = float(student_t.ppf(0.975, clusters - 1)) * se
    return [mean - half, mean + half]


def sign_test(diffs: Sequence[float]) -> SignTest:
    """Two-sided exact binomial sign test over non-zero paired differences."""
    pos, neg, p = paired_sign_test(diffs)
    ties = len(diffs) - pos - neg
    return {"positive": pos, "negative": neg, "ties": ties, "p_value": p if pos + neg else None}


def precedent_lift(
    keys: Sequence[AnswerKey], results: Sequence[AnswerResult], seed: int
) -> dict[str, LiftInterval]:
    """metric(with precedents) - metric(without), paired by twin, per question type; the
    interval resamples source tables (`cluster_bootstrap`)."""
    by_twin: dict[str, dict[str, tuple[AnswerKey, AnswerResult]]] = {}
    for k, r in zip(keys, results, strict=True):
        if k.twin_id and not k.uninformative:
            by_twin.setdefault(k.twin_id, {})[k.variant] = (k, r)
    out: dict[str, LiftInterval] = {}
    metrics: tuple[tuple[str, Literal["score", "strict", "correct", "hit"]], ...] = (
        ("mc_single", "score"),
        ("mc_all", "score"),
        ("fib_all", "strict"),
        ("mc_single", "correct"),
        ("mc_all", "correct"),
        ("fib_all", "hit"),
    )
    for qtype, metric in metrics:
        diffs: list[float] = []
        tables: list[str] = []
        for pair in by_twin.values():
            if "with_precedents" in pair and "no_precedents" in pair:
                (kw, rw), (_, rn) = pair["with_precedents"], pair["no_precedents"]
                if kw.qtype == qtype:
                    diffs.append(float(rw[metric] or 0.0) - float(rn[metric] or 0.0))
                    tables.append(kw.table or kw.qid)
        name = f"{qtype}.{'accuracy' if metric == 'correct' else metric}"
        out[name] = {**cluster_bootstrap(diffs, tables, seed), "sign_test": sign_test(diffs)}
    return out


def gold_position_audit(keys: Sequence[AnswerKey], seed: int) -> dict[str, GoldPosition]:
    """Share of questions whose gold sits at index 0 vs the arity-conditional shuffled null
    (each question: P = |answer| / n_options; FIB: per blank, 1 / n_candidates), with a
    two-sided Monte Carlo p-value. Questions only: the same for every agent."""
    out: dict[str, GoldPosition] = {}
    rng = make_rng(seed, "gold-position-null")
    for qtype in ("mc_single", "mc_all", "fib_all"):
        obs: list[int] = []
        probs: list[float] = []
        for k in keys:
            if k.qtype != qtype or k.uninformative or k.variant == "with_precedents":
                continue
            if qtype == "fib_all":
                for j, name in enumerate(k.keys):
                    gold = {g[j] for g in k.gold_rows}
                    obs.append(int(k.candidates[name][0] in gold))
                    probs.append(
                        sum(1 for c in k.candidates[name] if c in gold) / len(k.candidates[name])
                    )
            else:
                obs.append(int(0 in k.answer))
                probs.append(len(k.answer) / len(k.rel))
        if not obs:
            continue
        p = np.asarray(probs)
        expected = float(p.sum())
        draws = (rng.random((MC_NULL_DRAWS, p.size)) < p).sum(axis=1)
        observed = float(sum(obs))
        p_value = float((np.abs(draws - expected) >= abs(observed - expected) - 1e-9).mean())
        out[qtype] = {
            "n": len(obs),
            "gold_at_zero": int(observed),
            "expected": expected,
            "p_value": p_value,
            "draws": MC_NULL_DRAWS,
        }
    return out


def summarise(keys: Sequence[AnswerKey], results: Sequence[AnswerResult], seed: int) -> Summary:
    """All run-level metrics of one agent on one question file."""
    groups: dict[tuple[str, str], tuple[list[AnswerKey], list[AnswerResult]]] = {}
    for k, r in zip(keys, results, strict=True):
        g = groups.setdefault((k.qtype, k.variant), ([], []))
        g[0].append(k)
        g[1].append(r)
    by_type = {f"{t}.{v}": aggregate(ks, rs) for (t, v), (ks, rs) in sorted(groups.items())}
    single = by_type.get("mc_single.no_precedents", {}).get("score")
    multi = by_type.get("mc_all.no_precedents", {}).get("score")
    datasets: dict[str, dict[str, TypeMetrics]] = {}
    for ds in sorted({k.dataset for k in keys}):
        sub = [
            (k, r)
            for k, r in zip(keys, results, strict=True)
            if k.dataset == ds and k.variant == "no_precedents"
        ]
        per: dict[str, TypeMetrics] = {}
        for qtype in ("mc_single", "mc_all", "fib_all"):
            pairs = [(k, r) for k, r in sub if k.qtype == qtype]
            if pairs:
                per[qtype] = aggregate([k for k, _ in pairs], [r for _, r in pairs])
        datasets[ds] = per
    return {
        "by_type": by_type,
        "delta_axis": None if single is None or multi is None else single - multi,
        "precedent_lift": precedent_lift(keys, results, seed),
        "by_dataset": datasets,
        "n_questions": len(keys),
        "n_invalid": sum(1 for r in results if not r["valid"]),
    }


def headline(summary: Summary) -> dict[str, float | None]:
    """The flat numbers stored in the `scores` table and shown on leaderboards."""
    bt = summary["by_type"]
    single = bt.get("mc_single.no_precedents", {})
    multi = bt.get("mc_all.no_precedents", {})
    fib = bt.get("fib_all.no_precedents", {})
    lift = summary["precedent_lift"]
    return {
        "mc_single_accuracy": single.get("accuracy"),
        "mc_single_score": single.get("score"),
        "mc_single_floor_score": single.get("floor_score"),
        "mc_all_accuracy": multi.get("accuracy"),
        "mc_all_score": multi.get("score"),
        "mc_all_score_yield_only": multi.get("score_yield_only"),
        "mc_all_floor_score": multi.get("floor_score"),
        "mc_all_floor_accuracy": multi.get("floor_accuracy"),
        "fib_hit": fib.get("hit"),
        "fib_strict": fib.get("strict"),
        "fib_score_given_hit": fib.get("score_given_hit"),
        "fib_per_key_accuracy": fib.get("per_key_accuracy_all"),
        "fib_floor_hit": fib.get("floor_hit"),
        "fib_floor_strict": fib.get("floor_strict"),
        "fib_floor_score_given_hit": fib.get("floor_score_given_hit"),
        "delta_axis": summary["delta_axis"],
        "precedent_lift_mc_all_score": lift["mc_all.score"]["mean"],
        "precedent_lift_fib_strict": lift["fib_all.strict"]["mean"],
        "invalid_answers": float(summary["n_invalid"]),
    }


# The column header of each `headline` number in reports: accuracies and hit rates are shares
# of the questions (0-1), scores the paper's utility score (0-1), floors a uniform random answer.
HEADLINE_LABELS = {
    "mc_single_accuracy": "MC_single accuracy (share)",
    "mc_single_score": "MC_single score (0-1)",
    "mc_single_floor_score": "MC_single random-floor score (0-1)",
    "mc_all_accuracy": "MC_all accuracy (share)",
    "mc_all_score": "MC_all score (0-1)",
    "mc_all_score_yield_only": "MC_all score, yield only (0-1)",
    "mc_all_floor_score": "MC_all random-floor score (0-1)",
    "mc_all_floor_accuracy": "MC_all random-floor accuracy (share)",
    "fib_hit": "FIB hit rate (share)",
    "fib_strict": "FIB strict accuracy (share)",
    "fib_score_given_hit": "FIB score given a hit (0-1)",
    "fib_per_key_accuracy": "FIB per-key accuracy (share)",
    "fib_floor_hit": "FIB random-floor hit rate (share)",
    "fib_floor_strict": "FIB random-floor strict accuracy (share)",
    "fib_floor_score_given_hit": "FIB random-floor score given a hit (0-1)",
    "delta_axis": "delta-axis: MC_single minus MC_all score",
    "precedent_lift_mc_all_score": "precedent lift, MC_all score",
    "precedent_lift_fib_strict": "precedent lift, FIB strict accuracy",
    "invalid_answers": "invalid answers (count)",
}
