"""Is a question set more than one answer repeated? The answer-share cap and its report.

A built-in screen asks the same option set of many substrates, and one condition is often best
for most of them (one ligand in half the questions): an agent that learns "always answer X"
scores well without reading a question. So, per dataset and multiple-choice type:

  * the **answer-repetition share**: the largest share of questions one answer (the gold
    option's condition labels) is correct in, and how many distinct option sets they use;
  * the **cap** (METRICS.md, fourth round): no answer correct in more than `MAX_ANSWER_SHARE`
    (0.4) of the questions; questions of the most repeated answer are withheld (a seeded
    choice, their precedent twins with them, counted) until every answer is under the cap.
    A type with fewer than 3 distinct answers cannot meet it and keeps no question; a type
    with fewer than `MIN_QUESTIONS_FOR_CAP` (5) questions is reported, not capped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from labreplay.sdk import make_rng
from labreplay.suites.conditions.agents import LeaveTableOutRanker
from labreplay.suites.conditions.questions import agent_view, value_label
from labreplay.suites.conditions.scoring import answer_key, score_answer
from labreplay.suites.conditions.summary import cluster_bootstrap

MAX_ANSWER_SHARE = 0.4
# Below this many questions of a type a share is no evidence of repetition (one question is
# 100% its own answer): such a type is reported, not capped.
MIN_QUESTIONS_FOR_CAP = 5
MC_TYPES = ("mc_single", "mc_all")


class AnswerShare(TypedDict):
    questions: int
    distinct_answers: int
    distinct_option_sets: int
    top_answer: str
    top_share: float


def answer_of(q: Mapping[str, Any]) -> str:
    """The gold option(s) as condition labels: what "the same answer" means across questions."""
    golds = sorted(
        "; ".join(f"{k}={value_label(q['options'][i][k])}" for k in q["varying_keys"])
        for i in q["answer"]
    )
    return " | ".join(golds)


def _option_set(options: Sequence[Mapping[str, object]], keys: Sequence[str]) -> frozenset[str]:
    return frozenset("; ".join(f"{k}={value_label(opt[k])}" for k in keys) for opt in options)


def _groups(questions: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[int]]:
    """(dataset, MC type) -> indices of its base (no-precedent) questions."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, q in enumerate(questions):
        meta = q["meta"]
        if q["question_type"] in MC_TYPES and meta.get("variant") != "with_precedents":
            groups.setdefault((str(meta.get("dataset", "")), q["question_type"]), []).append(i)
    return groups


def answer_shares(questions: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, AnswerShare]]:
    """dataset -> MC type -> the answer-repetition share and the distinct option sets."""
    out: dict[str, dict[str, AnswerShare]] = {}
    for (ds, qtype), members in sorted(_groups(questions).items()):
        counts = Counter(answer_of(questions[i]) for i in members)
        top, n_top = counts.most_common(1)[0]
        out.setdefault(ds, {})[qtype] = {
            "questions": len(members),
            "distinct_answers": len(counts),
            "distinct_option_sets": len(
                {
                    _option_set(questions[i]["options"], questions[i]["varying_keys"])
                    for i in members
                }
            ),
            "top_answer": top,
            "top_share": n_top / len(members),
        }
    return out


def cap_answer_share(
    questions: list[dict[str, Any]], seed: int, max_share: float = MAX_ANSWER_SHARE
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The questions with every (dataset, MC type) under the cap, and per dataset how many base
    questions were withheld. Twins go with their base question."""
    withheld: set[str] = set()
    per_dataset: dict[str, int] = {}
    for (ds, qtype), members in sorted(_groups(questions).items()):
        if len(members) < MIN_QUESTIONS_FOR_CAP:
            continue
        answers = {i: answer_of(questions[i]) for i in members}
        kept = sorted(members)
        rng = make_rng(seed, "answer-share-cap", ds, qtype)
        while kept:
            counts = Counter(answers[i] for i in kept)
            top, n_top = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
            if n_top <= max_share * len(kept) + 1e-9:
                break
            if len(counts) < math.ceil(1 / max_share):  # no way under the cap: none kept
                drop = list(kept)
            else:  # fewest withheld to bring this answer to the cap: (m - s n) / (1 - s)
                need = math.ceil((n_top - max_share * len(kept)) / (1 - max_share) - 1e-9)
                pool = [i for i in kept if answers[i] == top]
                drop = [pool[j] for j in rng.choice(len(pool), size=need, replace=False)]
            dropped = set(drop)
            kept = [i for i in kept if i not in dropped]
            for i in dropped:
                withheld.add(str(questions[i]["id"]))
            per_dataset[ds] = per_dataset.get(ds, 0) + len(dropped)
    out = [
        q
        for q in questions
        if str(q["id"]) not in withheld and str(q["meta"].get("twin_id")) not in withheld
    ]
    return out, per_dataset


class RankerRow(TypedDict):
    n: int
    accuracy: float
    score: float
    score_ci95: list[float] | None
    floor_score: float


def ranker_reference(
    questions: Sequence[Mapping[str, Any]], seed: int = 0
) -> dict[str, dict[str, RankerRow]]:
    """dataset -> MC type -> the leave-table-out ranker's accuracy and score (interval over
    source tables) beside the random floor: how far "what won on the other substrates" goes
    without reading the question. A reference row, never ranked."""
    ranker = LeaveTableOutRanker(questions)
    rows: dict[tuple[str, str], tuple[list[float], list[float], list[float], list[str]]] = {}
    for q in questions:
        if q["question_type"] not in MC_TYPES or q["meta"].get("variant") == "with_precedents":
            continue
        key = answer_key(q)
        if key.uninformative:
            continue
        result = score_answer(key, ranker.answer(agent_view(q)))
        acc, score, floor, tables = rows.setdefault((key.dataset, key.qtype), ([], [], [], []))
        acc.append(float(result["correct"]))
        mc_score = result["score"]
        assert mc_score is not None  # a multiple-choice answer always has a score (0 if invalid)
        score.append(float(mc_score))
        floor.append(sum(key.rel) / len(key.rel))
        tables.append(key.table)
    out: dict[str, dict[str, RankerRow]] = {}
    for (ds, qtype), (acc, score, floor, tables) in sorted(rows.items()):
        found = cluster_bootstrap(score, tables, seed, purpose="ranker-reference")
        out.setdefault(ds, {})[qtype] = {
            "n": len(acc),
            "accuracy": sum(acc) / len(acc),
            "score": sum(score) / len(score),
            "score_ci95": found["ci95"],
            "floor_score": sum(floor) / len(floor),
        }
    return out


def share_lines(
    before: Mapping[str, Mapping[str, AnswerShare]],
    after: Mapping[str, Mapping[str, AnswerShare]],
    ranker: Mapping[str, Mapping[str, RankerRow]] | None = None,
) -> list[str]:
    """One line per dataset: each MC type's top answer share before and after the cap, and
    the leave-table-out ranker's score beside the floor (reference row)."""
    lines = []
    for ds in sorted(set(before) | set(after)):
        parts = []
        for qtype in MC_TYPES:
            b = before.get(ds, {}).get(qtype)
            if b is None:
                continue
            a = after.get(ds, {}).get(qtype)
            now = (
                f"{a['top_share']:.0%} of {a['questions']} ({a['distinct_option_sets']} option sets)"
                if a
                else "no question kept"
            )
            ref = (ranker or {}).get(ds, {}).get(qtype)
            if ref is not None:
                ci = ref["score_ci95"]
                now += (
                    f", leave-table-out ranker accuracy {ref['accuracy']:.2f} score "
                    f"{ref['score']:.3f}"
                    + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
                    + f" (floor {ref['floor_score']:.3f})"
                )
            if b["questions"] < MIN_QUESTIONS_FOR_CAP:
                now += f" (under {MIN_QUESTIONS_FOR_CAP} questions: not capped)"
            parts.append(
                f"{qtype} top answer {b['top_share']:.0%} of {b['questions']} "
                f"({b['distinct_option_sets']} option sets) -> {now}"
            )
        if parts:
            lines.append(f"answer share {ds} (cap {MAX_ANSWER_SHARE:.0%}): " + "; ".join(parts))
    return lines
