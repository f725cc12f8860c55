"""Is a question set more than one answer repeated? The answer-share cap and its report.

A built-in screen asks the same option set of many substrates, and one condition is often best
for most of them (one ligand in half the questions): an agent that learns "always answer X"
scores well without reading a question. So, per dataset and multiple-choice type, and per
dataset over all its multiple-choice questions (MC_single and MC_all pooled, `POOLED`):

  * an **answer** is the gold option(s)' condition labels over the question's varying keys
    (`answer_of`), one definition for both types: "ligand=X" (an MC_single) and
    "ligand=X; base=Y" (an MC_all) are two answers. Only base questions count (a precedent
    twin has its base's answer and goes with it);
  * the **answer-repetition share**: the largest share of questions one answer is correct in,
    and how many distinct option sets they use;
  * the **cap** (METRICS.md, fourth round): no answer correct in more than `MAX_ANSWER_SHARE`
    (0.4) of the questions, applied per type, then per dataset with the types pooled (the
    Done-when reads per dataset; a small type exempt alone can still lift the pooled share);
    questions of the most repeated answer are withheld (a seeded choice, their precedent twins
    with them, counted and named) until every answer is under the cap. A group with fewer
    than 3 distinct answers cannot meet it and keeps no question; a group with fewer than
    `MIN_QUESTIONS_FOR_CAP` (5) questions is reported, not capped.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TypedDict

from labreplay.sdk import make_rng
from labreplay.suites.conditions.agents import LeaveTableOutRanker, QuestionAgent
from labreplay.suites.conditions.questions import Question, agent_view, value_label
from labreplay.suites.conditions.scoring import answer_key, score_answer
from labreplay.suites.conditions.summary import cluster_bootstrap

MAX_ANSWER_SHARE = 0.4
# Below this many questions of a type a share is no evidence of repetition (one question is
# 100% its own answer): such a type is reported, not capped.
MIN_QUESTIONS_FOR_CAP = 5
# One option set asked of many substrates is one ranking measured again and again (its
# errors repeat, and its usual winner is learnable): at most this many base questions per
# (dataset, MC type, identical option set) are kept (METRICS.md, issue 36 item 2).
MAX_PER_OPTION_SET = 20
MC_TYPES = ("mc_single", "mc_all")
POOLED = "mc"  # a dataset's MC_single and MC_all questions together


class AnswerShare(TypedDict):
    questions: int
    distinct_answers: int
    distinct_option_sets: int
    top_answer: str
    top_share: float


def answer_of(q: Question) -> str:
    """The gold option(s) as condition labels: what "the same answer" means across questions."""
    golds = sorted(
        "; ".join(f"{k}={value_label(q['options'][i][k])}" for k in q["varying_keys"])
        for i in q["answer"]
    )
    return " | ".join(golds)


def _option_set(options: Sequence[Mapping[str, object]], keys: Sequence[str]) -> frozenset[str]:
    return frozenset("; ".join(f"{k}={value_label(opt[k])}" for k in keys) for opt in options)


def _groups(
    questions: Sequence[Question], pooled: bool = False
) -> dict[tuple[str, str], list[int]]:
    """(dataset, MC type) -> indices of its base (no-precedent) questions; with `pooled`,
    (dataset, POOLED) -> both types' together."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, q in enumerate(questions):
        meta = q["meta"]
        if q["question_type"] in MC_TYPES and meta.get("variant") != "with_precedents":
            scope = POOLED if pooled else q["question_type"]
            groups.setdefault((str(meta.get("dataset", "")), scope), []).append(i)
    return groups


def answer_shares(questions: Sequence[Question]) -> dict[str, dict[str, AnswerShare]]:
    """dataset -> MC type (and POOLED: both types) -> the answer-repetition share and the
    distinct option sets."""
    out: dict[str, dict[str, AnswerShare]] = {}
    groups = {**_groups(questions), **_groups(questions, pooled=True)}
    for (ds, qtype), members in sorted(groups.items()):
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


class OptionSetRepeats(TypedDict):
    """One dataset's repeated option sets cut to `max_per_set` questions each."""

    max_per_set: int
    sets_cut: int
    withheld: int  # questions


class Withheld(TypedDict):
    """One cap step: which answer's questions were withheld, in which group, how many."""

    dataset: str
    scope: str  # an MC type, or POOLED
    answer: str
    withheld: int


def cap_answer_share(
    questions: list[Question],
    seed: int,
    max_share: float = MAX_ANSWER_SHARE,
    log: list[Withheld] | None = None,
) -> tuple[list[Question], dict[str, int]]:
    """The questions with every (dataset, MC type), then every dataset (types pooled), under
    the cap, and per dataset how many base questions were withheld; each step is appended to
    `log` when given. Twins go with their base question."""
    withheld: set[str] = set()
    per_dataset: dict[str, int] = {}
    for pooled in (False, True):
        remaining = [q for q in questions if str(q["id"]) not in withheld]
        for ds, n in _cap_groups(remaining, seed, max_share, pooled, withheld, log).items():
            per_dataset[ds] = per_dataset.get(ds, 0) + n
    out = [
        q
        for q in questions
        if str(q["id"]) not in withheld and str(q["meta"].get("twin_id")) not in withheld
    ]
    return out, per_dataset


def _cap_groups(
    questions: Sequence[Question],
    seed: int,
    max_share: float,
    pooled: bool,
    withheld: set[str],
    log: list[Withheld] | None,
) -> dict[str, int]:
    """One pass of the cap over the per-type (or pooled) groups; adds to `withheld`."""
    per_dataset: dict[str, int] = {}
    for (ds, qtype), members in sorted(_groups(questions, pooled).items()):
        if len(members) < MIN_QUESTIONS_FOR_CAP:
            continue
        answers = {i: answer_of(questions[i]) for i in members}
        kept = sorted(members)
        # the per-type pass keeps its historical stream (same questions as before)
        rng = make_rng(seed, "answer-share-cap", ds, qtype)
        while kept:
            counts = Counter(answers[i] for i in kept)
            top, n_top = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
            if n_top <= max_share * len(kept) + 1e-9:
                break
            what = top
            if len(counts) < math.ceil(1 / max_share):  # no way under the cap: none kept
                drop = list(kept)
                what = f"all {len(counts)} answers (fewer than {math.ceil(1 / max_share)})"
            else:  # fewest withheld to bring this answer to the cap: (m - s n) / (1 - s)
                need = math.ceil((n_top - max_share * len(kept)) / (1 - max_share) - 1e-9)
                pool = [i for i in kept if answers[i] == top]
                drop = [pool[j] for j in rng.choice(len(pool), size=need, replace=False)]
            dropped = set(drop)
            kept = [i for i in kept if i not in dropped]
            for i in dropped:
                withheld.add(str(questions[i]["id"]))
            per_dataset[ds] = per_dataset.get(ds, 0) + len(dropped)
            if log is not None:
                log.append({"dataset": ds, "scope": qtype, "answer": what, "withheld": len(drop)})
    return per_dataset


def dedupe_option_sets(
    questions: list[Question], seed: int, max_repeats: int = MAX_PER_OPTION_SET
) -> tuple[list[Question], dict[str, int], dict[str, int]]:
    """At most `max_repeats` base MC questions per (dataset, MC type, option set): a seeded
    uniform choice among them, blind to outcomes; the rest withheld with their precedent
    twins. Returns the questions, per dataset how many base questions were withheld, and per
    dataset how many option sets were cut."""
    # (dataset, MC type, option set): the same options over the same keys (labels,
    # order-free) asked of different substrates
    by_set: dict[tuple[str, str, frozenset[str]], list[int]] = {}
    for i, q in enumerate(questions):
        if q["question_type"] in MC_TYPES and q["meta"].get("variant") != "with_precedents":
            key = (
                str(q["meta"].get("dataset", "")),
                str(q["question_type"]),
                _option_set(q["options"], q["varying_keys"]),
            )
            by_set.setdefault(key, []).append(i)
    withheld: set[str] = set()
    per_dataset: dict[str, int] = {}
    sets_cut: dict[str, int] = {}
    for (ds, qtype, options), members in sorted(by_set.items(), key=lambda kv: _set_order(kv[0])):
        if len(members) <= max_repeats:
            continue
        rng = make_rng(seed, "option-set-repeats", ds, qtype, *sorted(options))
        keep = set(rng.choice(len(members), size=max_repeats, replace=False).tolist())
        for j, i in enumerate(members):
            if j not in keep:
                withheld.add(str(questions[i]["id"]))
        per_dataset[ds] = per_dataset.get(ds, 0) + len(members) - max_repeats
        sets_cut[ds] = sets_cut.get(ds, 0) + 1
    out = [
        q
        for q in questions
        if str(q["id"]) not in withheld and str(q["meta"].get("twin_id")) not in withheld
    ]
    return out, per_dataset, sets_cut


def _set_order(key: tuple[str, str, frozenset[str]]) -> tuple[str, str, list[str]]:
    return key[0], key[1], sorted(key[2])


class RankerRow(TypedDict):
    n: int
    accuracy: float
    score: float
    score_ci95: list[float] | None
    floor_score: float


def ranker_reference(
    questions: Sequence[Question], seed: int = 0
) -> dict[str, dict[str, RankerRow]]:
    """dataset -> MC type -> the leave-table-out ranker's accuracy and score (interval over
    source tables) beside the random floor: how far "what won on the other substrates" goes
    without reading the question. A reference row, never ranked."""
    ranker: QuestionAgent = LeaveTableOutRanker(questions)
    rows: dict[tuple[str, str], tuple[list[float], list[float], list[float], list[str]]] = {}
    for q in questions:
        if q["question_type"] not in MC_TYPES or q["meta"].get("variant") == "with_precedents":
            continue
        key = answer_key(q)
        if key.uninformative:
            continue
        result = score_answer(key, ranker.answer(dict(agent_view(q))))
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


def option_set_lines(repeats: Mapping[str, OptionSetRepeats]) -> list[str]:
    """One QC line per dataset whose repeated option sets were cut."""
    return [
        f"option sets {ds}: {r['sets_cut']} option set(s) asked more than {r['max_per_set']} "
        f"times cut to {r['max_per_set']} (seeded, outcome-blind): {r['withheld']} question(s) "
        "withheld with their precedent twins"
        for ds, r in sorted(repeats.items())
    ]


def share_lines(
    before: Mapping[str, Mapping[str, AnswerShare]],
    after: Mapping[str, Mapping[str, AnswerShare]],
    ranker: Mapping[str, Mapping[str, RankerRow]] | None = None,
    withheld: Sequence[Withheld] = (),
) -> list[str]:
    """One line per dataset: each MC type's and the pooled MC top answer share before and
    after the cap, and the leave-table-out ranker's score beside the floor (reference row);
    then one line per cap step naming the answer whose questions were withheld."""
    lines = []
    for ds in sorted(set(before) | set(after)):
        parts = []
        for qtype in (*MC_TYPES, POOLED):
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
                over = a is not None and a["top_share"] > MAX_ANSWER_SHARE + 1e-9
                now += f" (under {MIN_QUESTIONS_FOR_CAP} questions: not capped" + (
                    ", above the cap)" if over else ")"
                )
            label = "all MC (pooled)" if qtype == POOLED else qtype
            parts.append(
                f"{label} top answer {b['top_share']:.0%} of {b['questions']} "
                f"({b['distinct_option_sets']} option sets) -> {now}"
            )
        if parts:
            lines.append(f"answer share {ds} (cap {MAX_ANSWER_SHARE:.0%}): " + "; ".join(parts))
    totals: dict[tuple[str, str, str], int] = {}  # one line per answer, steps summed
    for step in withheld:
        where = (step["dataset"], step["scope"], step["answer"])
        totals[where] = totals.get(where, 0) + step["withheld"]
    for (ds, scope, answer), n in totals.items():
        label = "all MC (pooled)" if scope == POOLED else scope
        lines.append(
            f"answer share cap {ds} {label}: withheld {n} question(s) answered {answer} "
            "(their precedent twins with them)"
        )
    return lines
