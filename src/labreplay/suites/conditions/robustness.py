"""The utility robustness audit: does the agents' order survive other ways of weighing yield
against selectivity?

The headline MC_all score reads each option's utility U = y * f (yield fraction times the
selectivity factor, METRICS.md). The audit re-scores every finished run's MC_all answers
(informative questions without precedents, the headline's set) under alternatives, each
relative to the question's best option under that utility:

* ``yield_only``: U = y (selectivity ignored);
* ``additive``: U = (y + f) / 2 (a selective low-yield option can outrank an unselective one);
* ``maximin``: U = min(y, f) (the weaker of the two criteria).

A question whose options report no selectivity has f = 1 everywhere; there the additive and
maximin utilities are y as well (there is no second criterion to add or to take the minimum
of), so only questions with selectivity can change an order, and the audit says how many there
are. With 2 agents it reports, per alternative, whether their order holds or flips, with the
gap's 95% interval from a bootstrap over source tables; a rank correlation needs at least 3
agents and is only computed then. What the result can and cannot tell is stated with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict

import numpy as np

from labreplay.sdk import make_rng
from labreplay.sdk.data import loads_strict
from labreplay.sdk.engine import Store
from labreplay.sdk.events import JsonValue
from labreplay.suites.conditions.events import AnswerPayload
from labreplay.suites.conditions.outcomes import parse_amount, parse_ratio, selectivity_factor
from labreplay.suites.conditions.questions import Question
from labreplay.suites.conditions.scoring import answer_key

UTILITIES = ("product", "yield_only", "additive", "maximin")
DEFINITIONS = {
    "product": "y * f (the headline)",
    "yield_only": "y",
    "additive": "(y + f) / 2 where selectivity is reported, else y",
    "maximin": "min(y, f) where selectivity is reported, else y",
}
RESAMPLES = 2_000


@dataclass(frozen=True)
class AuditQuestion:
    """One MC_all question's relative score per option under every utility."""

    qid: str
    table: str
    rel: Mapping[str, tuple[float, ...]]
    has_selectivity: bool


def _relative(values: Sequence[float]) -> tuple[float, ...]:
    best = max(values, default=0.0)
    return tuple(v / best for v in values) if best > 0 else tuple(0.0 for _ in values)


def _yield_and_factor(score: Mapping[str, JsonValue]) -> tuple[float, float, bool]:
    """(yield fraction, selectivity factor, selectivity reported) of one `scores` entry."""
    raw_y = score.get("yield")
    y = parse_amount(raw_y).value if raw_y is not None else None
    outcome: dict[str, object] = {}
    ee = parse_amount(score.get("ee")).value if score.get("ee") is not None else None
    if ee is not None:
        outcome["ee"] = ee
    for name in ("er", "dr", "rr"):
        raw = score.get(name)
        ratio = tuple(raw) if isinstance(raw, list) and len(raw) == 2 else parse_ratio(raw)
        if isinstance(ratio, tuple):
            outcome[name] = ratio
    y_frac = min(max((y or 0.0) / 100.0, 0.0), 1.0)
    return y_frac, selectivity_factor(outcome), bool(outcome)


def audit_question(q: Question) -> AuditQuestion | None:
    """The audit's view of an informative MC_all question without precedents (else None).
    Without per-option `scores` (some official files) every utility is the headline's."""
    if q["question_type"] != "mc_all":
        return None
    key = answer_key(q)
    if key.uninformative or key.variant != "no_precedents":
        return None
    rel: dict[str, tuple[float, ...]] = {"product": key.rel, "yield_only": key.rel_yield_only}
    scores = q["meta"].get("scores")
    parsed = (
        [_yield_and_factor(s) for s in scores]
        if isinstance(scores, list) and all(isinstance(s, Mapping) for s in scores)
        else []
    )
    selective = any(reported for _, _, reported in parsed) and len(parsed) == len(key.rel)
    if selective and str(q["meta"].get("objective", "utility")) == "utility":
        rel["additive"] = _relative([(y + f) / 2 for y, f, _ in parsed])
        rel["maximin"] = _relative([min(y, f) for y, f, _ in parsed])
    else:
        rel["additive"] = rel["maximin"] = key.rel_yield_only if parsed else key.rel
    table = str(q["meta"].get("parent_table_id") or q["id"])
    return AuditQuestion(str(q["id"]), table, rel, selective)


def _question_file(store: Store, spec_hash: str) -> dict[str, AuditQuestion]:
    from labreplay.suites.conditions.questions import stored_questions

    body = loads_strict(store.get_spec(spec_hash)).get("body", {})
    out: dict[str, AuditQuestion] = {}
    for q in stored_questions(store, str(body.get("sha256", ""))) or []:
        view = audit_question(q)
        if view is not None:
            out[view.qid] = view
    return out


def per_question_scores(
    questions: Mapping[str, AuditQuestion], answers: Sequence[AnswerPayload]
) -> dict[str, dict[str, float]]:
    """question id -> utility -> the answer's relative score (an invalid answer scores 0)."""
    out: dict[str, dict[str, float]] = {}
    for a in answers:
        view = questions.get(str(a.get("question_id")))
        if view is None:
            continue
        option = (a.get("answer") or {}).get("option")
        index = option if isinstance(option, int) and not isinstance(option, bool) else -1
        out[view.qid] = {
            u: (view.rel[u][index] if 0 <= index < len(view.rel[u]) else 0.0) for u in UTILITIES
        }
    return out


class Comparison(TypedDict):
    order: list[str]
    same_order_as_product: bool
    # [above, below] under product whose gap under this utility is negative with an interval
    # that excludes 0 (a flip); reversed means whose interval holds 0 are within noise
    flipped_pairs: list[list[str]]
    reversed_within_noise: list[list[str]]
    spearman_rho: float | None


class Gap(TypedDict):
    """The per-question gap between two agents with its table-resampled 95% interval."""

    n_questions: int
    mean: float | None
    ci95: list[float] | None
    n_tables: NotRequired[int]


class UtilityAudit(TypedDict):
    """`utility_audit` of one question file: each agent's MC_all score under every utility,
    and (2 or more agents) whether their order changes with the utility."""

    definitions: dict[str, str]
    n_agents: int
    n_mc_all_questions: int
    n_with_selectivity: int
    mc_all_score: dict[str, dict[str, float]]  # agent -> utility -> mean relative score
    can_tell: NotRequired[str]  # both always set before the audit is returned
    cannot_tell: NotRequired[str]
    order_product: NotRequired[list[str]]
    comparisons: NotRequired[dict[str, Comparison]]
    gap: NotRequired[dict[str, Gap]]  # with exactly 2 agents


def _cluster_gap(
    a: Mapping[str, dict[str, float]],
    b: Mapping[str, dict[str, float]],
    tables: Mapping[str, str],
    utility: str,
    seed: int,
) -> Gap:
    """Mean per-question gap a - b on their common questions, 95% interval resampling tables."""
    common = sorted(set(a) & set(b))
    by_table: dict[str, list[float]] = {}
    for qid in common:
        by_table.setdefault(tables[qid], []).append(a[qid][utility] - b[qid][utility])
    if not by_table:
        return {"n_questions": 0, "mean": None, "ci95": None}
    sums = np.array([sum(v) for v in by_table.values()])
    counts = np.array([len(v) for v in by_table.values()])
    rng = make_rng(seed, "utility-audit", utility)
    draws = rng.integers(0, len(sums), size=(RESAMPLES, len(sums)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return {
        "n_questions": len(common),
        "n_tables": len(by_table),
        "mean": float(sums.sum() / counts.sum()),
        "ci95": [float(lo), float(hi)],
    }


def utility_audit(
    runs: Mapping[str, Mapping[str, dict[str, float]]],
    questions: Mapping[str, AuditQuestion],
    seed: int = 0,
) -> UtilityAudit:
    """The audit over agents (label -> per-question scores) on one question file."""
    means = {
        label: {u: float(np.mean([s[u] for s in per.values()])) for u in UTILITIES}
        for label, per in runs.items()
        if per
    }
    labels = sorted(means)
    answered = {qid for per in runs.values() for qid in per}
    selective = sum(1 for qid in answered if questions[qid].has_selectivity)
    out: UtilityAudit = {
        "definitions": DEFINITIONS,
        "n_agents": len(labels),
        "n_mc_all_questions": len(answered),
        "n_with_selectivity": selective,
        "mc_all_score": means,
    }
    if len(labels) < 2:
        out["can_tell"] = "nothing: an order needs at least 2 agents"
        out["cannot_tell"] = "whether any agent order depends on the utility"
        return out
    base = sorted(labels, key=lambda a: (-means[a]["product"], a))
    tables = {qid: view.table for qid, view in questions.items()}
    comparisons: dict[str, Comparison] = {}
    for u in UTILITIES[1:]:
        order = sorted(labels, key=lambda a: (-means[a][u], a))
        reversed_ = [  # x above y under product, below under u
            (x, y) for i, x in enumerate(base) for y in base[i + 1 :] if means[x][u] < means[y][u]
        ]
        clear = {
            pair: ci is not None and ci[1] < 0
            for pair in reversed_
            for ci in [_cluster_gap(runs[pair[0]], runs[pair[1]], tables, u, seed)["ci95"]]
        }
        flipped = [list(pair) for pair in reversed_ if clear[pair]]
        rho = None
        if len(labels) >= 3:
            from scipy.stats import spearmanr

            value = spearmanr([means[a]["product"] for a in labels], [means[a][u] for a in labels])
            rho = None if np.isnan(value.statistic) else float(value.statistic)
        comparisons[u] = {
            "order": order,
            "same_order_as_product": not flipped,
            "flipped_pairs": flipped,
            "reversed_within_noise": [list(pair) for pair in reversed_ if not clear[pair]],
            "spearman_rho": rho,
        }
    out["order_product"] = base
    out["comparisons"] = comparisons
    if len(labels) == 2:
        first, second = base
        out["gap"] = {
            u: _cluster_gap(runs[first], runs[second], tables, u, seed) for u in UTILITIES
        }
    out["can_tell"], out["cannot_tell"] = _statement(out, len(labels), selective)
    return out


def _statement(out: UtilityAudit, n_agents: int, selective: int) -> tuple[str, str]:
    flips = [u for u, c in out["comparisons"].items() if not c["same_order_as_product"]]
    gaps = out.get("gap") or {}

    def noise(u: str) -> str:  # with 2 agents: is the gap's interval clear of 0?
        gap = gaps.get(u)
        ci = gap["ci95"] if gap else None
        if not ci:
            return ""
        return " (outside noise)" if ci[0] > 0 or ci[1] < 0 else " (within noise: interval holds 0)"

    def within(u: str) -> str:  # means reversed, but no pair's interval excludes 0
        return (
            " (means reversed within noise)"
            if out["comparisons"][u]["reversed_within_noise"]
            else ""
        )

    held = ", ".join(u + (within(u) or noise(u)) for u in UTILITIES[1:] if u not in flips)
    what = (
        f"the order of the {n_agents} agents under each alternative (a flip: the gap's interval "
        "excludes 0): "
        + ("it flips under " + ", ".join(u + noise(u) for u in flips) if flips else "no flip")
        + (f"; it holds under {held}" if held else "")
    )
    lead = gaps.get("product")
    if n_agents == 2 and lead and lead["mean"] is not None:
        first, second = out["order_product"]
        what += (
            f"; under the product utility {first} leads {second} by "
            f"{gaps['product']['mean']:+.3f}{noise('product')}"
        )
    limits = []
    if n_agents == 2:
        limits.append("a rank correlation (needs at least 3 agents; none is claimed)")
        limits.append("which agent is better where the gap interval holds 0")
    elif n_agents < 5:
        limits.append(f"a meaningful rank correlation from {n_agents} agents (rho is shown)")
    if selective == 0:
        limits.append(
            "anything about selectivity weighting: no answered MC_all question reports "
            "selectivity, so additive and maximin equal yield-only on every question"
        )
    else:
        limits.append(
            f"anything beyond the {selective} MC_all question(s) with selectivity (on the "
            "others every alternative equals yield-only)"
        )
    return what, "; ".join(limits)


def leaderboard_audit(
    store: Store, rows: Sequence[Mapping[str, object]]
) -> dict[str, UtilityAudit]:
    """The audit per question file of a leaderboard's runs (rows carry run_id, agent, seed
    and the full spec hash under `_spec_hash`)."""
    by_spec: dict[str, list[Mapping[str, object]]] = {}
    for r in rows:
        by_spec.setdefault(str(r["_spec_hash"]), []).append(r)
    out: dict[str, UtilityAudit] = {}
    for spec_hash, mine in sorted(by_spec.items()):
        questions = _question_file(store, spec_hash)
        runs: dict[str, dict[str, dict[str, float]]] = {}
        for r in mine:
            answers = [
                e["payload"] for e in store.events(str(r["run_id"])) if e["kind"] == "answer"
            ]
            label = f"{r['agent']} (seed {r['seed']})"
            runs[label] = per_question_scores(questions, answers)
        out[spec_hash[:12]] = utility_audit(runs, questions)
    return out


def audit_lines(audits: Mapping[str, UtilityAudit]) -> list[str]:
    """The audit as a few printed lines per question file."""
    lines = []
    for spec, a in audits.items():
        lines.append(
            f"utility audit {spec}: {a['n_agents']} agent(s), {a['n_mc_all_questions']} MC_all "
            f"questions, {a['n_with_selectivity']} with selectivity"
        )
        for label, scores in a["mc_all_score"].items():
            shown = ", ".join(f"{u} {scores[u]:.3f}" for u in UTILITIES)
            lines.append(f"  {label}: {shown}")
        for u, gap in (a.get("gap") or {}).items():
            if gap["mean"] is not None and gap["ci95"] is not None:  # both set, or neither
                lo, hi = gap["ci95"]
                lines.append(
                    f"  gap {a['order_product'][0]} - {a['order_product'][1]} under {u}: "
                    f"{gap['mean']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({gap['n_tables']} tables)"
                )
        lines.append(f"  can tell: {a['can_tell']}")
        lines.append(f"  cannot tell: {a['cannot_tell']}")
    return lines
