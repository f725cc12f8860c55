"""Reference rows beside every precedent lift: what can a lift of that size come from?

Two question-level references, computed from a question file alone (no run needed), per dataset
and over all questions, each with an interval that resamples source tables:

  * the **exclusion baseline** (`agents.ExclusionBaseline`): picks what is least represented
    among the precedents, reading no outcome. Its lift must be indistinguishable from 0 (its
    interval contains 0); if it is not, the precedents leak the answer by the way they were
    chosen (compile then withholds that dataset's twins, marked ``meta.twin_withheld``).
  * the **precedent ranker** (`agents.PrecedentRanker`): averages the precedents' utilities per
    condition value. Its lift is what the precedents' outcomes alone give, no chemistry read.

So a lift above the exclusion baseline's says no answer leaked by selection and outcomes were
used; only a lift above the precedent ranker's says a system read more than the outcomes.
Both agents break ties by a seeded draw; here their scores are the exact expectation over that
draw (the mean over the tied choices), so the interval holds question sampling only.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TypedDict

from labreplay.suites.conditions.agents import ExclusionBaseline, PrecedentRanker
from labreplay.suites.conditions.questions import Question, QuestionView, agent_view
from labreplay.suites.conditions.scoring import AnswerKey, answer_key
from labreplay.suites.conditions.summary import cluster_bootstrap

# The lifts on the board's headline (precedent_lift_mc_all_score, precedent_lift_fib_strict):
# the compile-time gate withholds a dataset's twins when the exclusion baseline's excludes 0.
HEADLINE_METRICS = ("mc.score", "fib.strict")
FIB_SPACE_LIMIT = 20_000  # candidate combinations enumerated for an exact FIB expectation


class Lift(TypedDict):
    n: int
    clusters: int
    mean: float | None
    ci95: list[float] | None
    contains_zero: bool | None


def _tied(scores: Sequence[float], best: str) -> list[int]:
    target = max(scores) if best == "max" else min(scores)
    return [i for i, v in enumerate(scores) if v == target]


def _mc_expectation(key: AnswerKey, tied: Sequence[int]) -> dict[str, float]:
    return {
        "score": sum(key.rel[i] for i in tied) / len(tied),
        "accuracy": sum(i in key.answer for i in tied) / len(tied),
    }


def _fib_expectation(key: AnswerKey, tied: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """Hit and Strict expected over the per-slot tied choices (exact when the product of tied
    sets is small; FIB spaces of the built-in tables are a few hundred tuples)."""
    slots = [[key.candidates[k][i] for i in tied[k]] for k in key.keys]
    space = 1
    for s in slots:
        space *= len(s)
    if space > FIB_SPACE_LIMIT:  # an unusually wide tie: the first choice of every slot
        slots = [s[:1] for s in slots]
        space = 1
    hit = strict = 0
    for combo in itertools.product(*slots):
        row = key.row_index.get(tuple(combo))
        hit += row is not None
        strict += row is not None and row in key.answer
    return {"hit": hit / space, "strict": strict / space}


def _expected(key: AnswerKey, scores: Mapping[str, list[float]], best: str) -> dict[str, float]:
    """An agent's exact expected metrics on one question, from its option (FIB: slot) scores,
    over its seeded tie-break."""
    if key.qtype == "fib_all":
        return _fib_expectation(key, {k: _tied(scores[k], best) for k in key.keys})
    return _mc_expectation(key, _tied(scores["option"], best))


def _lift(values: list[float], tables: list[str], seed: int) -> Lift:
    found = cluster_bootstrap(values, tables, seed, purpose="precedent-audit")
    ci = found["ci95"]
    return {
        "n": int(found["n"]),
        "clusters": int(found["clusters"]),
        "mean": found["mean"],
        "ci95": ci,
        "contains_zero": None if ci is None else bool(ci[0] <= 0.0 <= ci[1]),
    }


def reference_lifts(
    questions: Sequence[Question], seed: int = 0
) -> dict[str, dict[str, dict[str, Lift]]]:
    """agent -> dataset (and ``all``) -> metric -> lift with its table-clustered interval."""
    by_id = {str(q["id"]): q for q in questions}
    pairs: list[tuple[AnswerKey, QuestionView, AnswerKey, QuestionView]] = []
    for q in questions:
        meta = q["meta"]
        if meta.get("variant") != "with_precedents" or meta.get("twin_id") not in by_id:
            continue
        base = by_id[str(meta["twin_id"])]
        key_with, key_base = answer_key(q), answer_key(base)
        if key_with.uninformative:
            continue
        pairs.append((key_with, agent_view(q), key_base, agent_view(base)))
    out: dict[str, dict[str, dict[str, Lift]]] = {}
    for agent in ("exclusion", "precedent_ranker"):
        diffs: dict[tuple[str, str], tuple[list[float], list[str]]] = {}
        for key_with, view_with, key_base, view_base in pairs:
            scorer = (
                ExclusionBaseline.slot_scores
                if agent == "exclusion"
                else PrecedentRanker.slot_scores
            )
            best = "min" if agent == "exclusion" else "max"
            with_ = _expected(key_with, scorer(view_with), best)
            without = _expected(key_base, scorer(view_base), best)
            family = "fib" if key_with.qtype == "fib_all" else "mc"
            for metric, value in with_.items():
                for ds in (key_with.dataset, "all"):
                    vals, tables = diffs.setdefault((ds, f"{family}.{metric}"), ([], []))
                    vals.append(value - without[metric])
                    tables.append(f"{key_with.dataset}/{key_with.table}")
        per: dict[str, dict[str, Lift]] = {}
        for (ds, metric), (vals, tables) in sorted(diffs.items()):
            per.setdefault(ds, {})[metric] = _lift(vals, tables, seed)
        out[agent] = per
    return out


def withheld_twins(questions: Sequence[Question]) -> dict[str, int]:
    """dataset -> precedent twins compile withheld because the exclusion baseline's lift
    excluded 0 there (the base questions it marked ``meta.twin_withheld``)."""
    found = Counter(
        str(q["meta"].get("dataset", "")) for q in questions if q["meta"].get("twin_withheld")
    )
    return dict(sorted(found.items()))


def _shown(v: Lift) -> str:
    assert v["mean"] is not None and v["ci95"] is not None
    return f"{v['mean']:+.3f} [{v['ci95'][0]:+.3f}, {v['ci95'][1]:+.3f}]"


def precedent_reference_lines(
    lifts: Mapping[str, Mapping[str, Mapping[str, Lift]]], withheld: Mapping[str, int]
) -> list[str]:
    """One line per reference over all datasets; the datasets whose exclusion baseline lift
    excludes 0 (none, when precedents are chosen blind to outcomes); the twins compile withheld
    per dataset (`withheld`); and how a lift reads against the two references."""
    if not any(per.get("all") for per in lifts.values()):
        return ["precedent lift references: no precedent twins"]
    lines = []
    names = {"exclusion": "exclusion baseline", "precedent_ranker": "precedent ranker"}
    for agent, per in lifts.items():
        parts = [
            f"{metric} {_shown(v)}"
            for metric, v in per.get("all", {}).items()
            if v["mean"] is not None and v["ci95"] is not None
        ]
        lines.append(
            f"precedent lift, {names.get(agent, agent)} (reference, tables resampled): "
            + ("; ".join(parts) or "no precedent twins")
        )
    leaks = [
        f"{ds} {metric} {_shown(v)}"
        for ds, per in lifts.get("exclusion", {}).items()
        if ds != "all"
        for metric, v in per.items()
        if metric in HEADLINE_METRICS
        and v["contains_zero"] is False
        and v["ci95"] is not None
        and v["mean"] is not None
    ]
    lines.append(
        "precedent twins withheld at compile (the exclusion baseline's lift excluded 0 there): "
        + (", ".join(f"{ds} {n}" for ds, n in withheld.items()) if withheld else "none")
    )
    if leaks:
        lines.append(
            "WARNING: the exclusion baseline's precedent lift excludes 0 on "
            + "; ".join(leaks)
            + ": precedents there leak answers by exclusion; read precedent lifts with care"
        )
    elif lifts.get("exclusion"):
        ranker = lifts.get("precedent_ranker", {}).get("all", {})
        bar = "; ".join(
            f"{m} {ranker[m]['mean']:+.3f}"
            for m in HEADLINE_METRICS
            if m in ranker and ranker[m]["mean"] is not None
        )
        lines.append(
            "reading a precedent lift: the exclusion baseline's (MC score, FIB Strict) contains 0 "
            "on every dataset kept, so a lift above it means no answer leaked by selection; the "
            "precedent ranker, which only averages the precedents' outcomes per condition value, "
            f"gets {bar or 'no lift'}: a lift up to that shows the outcomes were used, and only a "
            "lift above the precedent ranker's shows a system read more than the outcomes"
        )
    return lines
