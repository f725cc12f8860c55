"""Scoring of conditions questions, exactly as METRICS.md defines it. Pure functions, no I/O.

A question is first turned into a compact `AnswerKey` (relative scores, answer set, FIB tuple
index) so that scoring many answers is a few dict look-ups each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from labreplay.sdk.events import JsonValue
from labreplay.suites.conditions.events import AnswerResult
from labreplay.suites.conditions.outcomes import parse_amount, parse_ratio, utility
from labreplay.suites.conditions.questions import Question, table_id_of, value_label


def _utility_of_scores(s: Mapping[str, object], objective: str) -> float | None:
    """Objective value from a release `scores` entry (yield/ee in %, ratios 'a:b' or [a, b])."""
    raw_y = s.get("yield")
    if (
        objective != "selectivity"
        and isinstance(raw_y, int | float)
        and all(s.get(n) is None for n in ("ee", "er", "dr", "rr"))
    ):
        return min(max(float(raw_y) / 100.0, 0.0), 1.0)  # common case: a plain yield
    outcome: dict[str, object] = {}
    y = parse_amount(raw_y).value if raw_y is not None else None
    if y is not None:
        outcome["yield"] = min(max(y / 100.0, 0.0), 1.0)
    ee = parse_amount(s.get("ee")).value if s.get("ee") is not None else None
    if ee is not None:
        outcome["ee"] = ee
    for name in ("er", "dr", "rr"):
        raw = s.get(name)
        ratio = tuple(raw) if isinstance(raw, list) and len(raw) == 2 else parse_ratio(raw)
        if isinstance(ratio, tuple):
            outcome[name] = ratio
    return utility(outcome, objective)


def utility_of_outcome(outcome: Mapping[str, object]) -> float | None:
    """The utility of an outcome as the release layout shows it (a precedent's), or None; a
    declared ratio response (``response_ratio``) ranks as recorded."""
    ratio = outcome.get("response_ratio")
    if isinstance(ratio, int | float) and not isinstance(ratio, bool):
        return float(ratio)
    return _utility_of_scores(outcome, "utility")


def _numbers(values: object, n: int) -> list[float] | None:
    """A per-option list of plain numbers (None entries count 0), or None if unusable."""
    if not isinstance(values, list) or len(values) != n:
        return None
    if not all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in values
    ):
        return None
    return [float(v) if v is not None else 0.0 for v in values]


def _relative(utilities: Sequence[float | None]) -> tuple[list[float], bool]:
    vals = [u or 0.0 for u in utilities]
    best = max(vals, default=0.0)
    if best <= 0:
        return [0.0] * len(vals), True
    return [v / best for v in vals], False


@dataclass(frozen=True)
class AnswerKey:
    qid: str
    qtype: str
    variant: str
    twin_id: str | None
    dataset: str
    keys: tuple[str, ...]
    rel: tuple[float, ...]
    rel_yield_only: tuple[float, ...]
    answer: frozenset[int]
    uninformative: bool
    # FIB
    candidates: Mapping[str, tuple[str, ...]]
    row_index: Mapping[tuple[str, ...], int]  # legal observed tuple -> option index
    gold_rows: tuple[tuple[str, ...], ...]
    table: str = ""  # the source table (clusters of every interval over questions)


def answer_key(q: Question) -> AnswerKey:
    """The file's own numbers are the truth: ``effective_scores`` (the utility) when present,
    else utilities recomputed from ``scores``, else ``option_relative_scores``; the answer set is
    the file's ``answer``. The yield-only variant is recomputed from ``scores`` when it can be."""
    meta = q["meta"]
    keys = tuple(q["varying_keys"])
    n = len(q["options"])
    objective = str(meta.get("objective", "utility"))
    listed = meta.get("scores")
    scores: list[Mapping[str, object]] = []
    has_scores = isinstance(listed, list) and all(isinstance(s, Mapping) for s in listed)
    if isinstance(listed, list) and has_scores:
        scores = [s for s in listed if isinstance(s, Mapping)]
    effective = _numbers(meta.get("effective_scores"), n)
    if effective is not None:
        rel, uninformative = _relative(effective)
    elif has_scores:
        rel, uninformative = _relative([_utility_of_scores(s, objective) for s in scores])
    else:
        rel, uninformative = _relative(_numbers(meta.get("option_relative_scores"), n) or [0.0] * n)
    rel_y = rel
    if has_scores and objective != "selectivity":
        yields = [_utility_of_scores(s, "yield") for s in scores]
        if any(y is not None for y in yields):
            rel_y, _ = _relative(yields)
    answer = frozenset() if uninformative else frozenset(int(a) for a in q["answer"])
    tuples = [tuple(value_label(opt[k]) for k in keys) for opt in q["options"]]
    twin_id = meta.get("twin_id")
    candidates: dict[str, tuple[str, ...]] = {}
    if q["question_type"] == "fib_all":
        candidates = {k: tuple(value_label(c) for c in q["candidates"][k]) for k in keys}
    return AnswerKey(
        qid=q["id"],
        qtype=q["question_type"],
        variant=str(meta.get("variant", "no_precedents")),
        twin_id=None if twin_id is None else str(twin_id),
        dataset=str(meta.get("dataset", "")),
        keys=keys,
        rel=tuple(rel),
        rel_yield_only=tuple(rel_y),
        answer=answer,
        uninformative=uninformative,
        candidates=candidates,
        row_index={t: i for i, t in enumerate(tuples)},
        gold_rows=tuple(tuples[i] for i in sorted(answer)),
        table=table_id_of(q),
    )


def random_floor(key: AnswerKey) -> dict[str, float]:
    """Exact expected metrics of a uniform random answer (METRICS.md)."""
    if key.qtype != "fib_all":
        n = len(key.rel)
        return {"accuracy": len(key.answer) / n, "score": sum(key.rel) / n}
    space = 1
    for k in key.keys:
        space *= len(key.candidates[k])
    legal = [key.rel[i] for i in key.row_index.values()]
    return {
        "hit": len(key.row_index) / space,
        "strict": len(key.answer) / space,
        "score_given_hit": sum(legal) / len(legal),
        "per_key_accuracy": sum(1 / len(key.candidates[k]) for k in key.keys) / len(key.keys),
    }


def score_answer(key: AnswerKey, answer: Mapping[str, JsonValue]) -> AnswerResult:
    """One parsed answer -> its metrics. `answer` is {"option": i} (MC), {"choices": {k: i}}
    (FIB) or {"invalid": reason}; anything invalid scores 0 (FIB: no Hit)."""
    uninformative = key.uninformative
    if key.qtype != "fib_all":
        i = answer.get("option")
        if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(key.rel):
            return {
                "valid": True,
                "uninformative": uninformative,
                "option": i,
                "correct": int(i in key.answer),
                "score": key.rel[i],
                "score_yield_only": key.rel_yield_only[i],
            }
        return {
            "valid": False,
            "uninformative": uninformative,
            "correct": 0,
            "score": 0.0,
            "score_yield_only": 0.0,
        }
    choices = answer.get("choices")
    labels: list[str] = []
    if isinstance(choices, Mapping) and set(choices) == set(key.keys):
        for k in key.keys:
            c = choices[k]
            if not (
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c < len(key.candidates[k])
            ):
                break
            labels.append(key.candidates[k][c])
    if len(labels) != len(key.keys):
        return {
            "valid": False,
            "uninformative": uninformative,
            "hit": 0,
            "strict": 0,
            "score": None,
            "per_key": {k: 0 for k in key.keys},
        }
    row = key.row_index.get(tuple(labels))
    best_match = (
        max(
            (sum(a == b for a, b in zip(labels, gold, strict=True)), gold) for gold in key.gold_rows
        )[1]
        if key.gold_rows
        else ()
    )
    return {
        "valid": True,
        "uninformative": uninformative,
        "hit": int(row is not None),
        "strict": int(row is not None and row in key.answer),
        "score": None if row is None else key.rel[row],
        "score_yield_only": None if row is None else key.rel_yield_only[row],
        "per_key": {
            k: int(bool(best_match) and labels[j] == best_match[j]) for j, k in enumerate(key.keys)
        },
    }


def _scored(values: Iterable[float | None]) -> list[float]:
    """The scores of MC answers and of FIB Hits, which `score_answer` never leaves None."""
    return [v for v in values if v is not None]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class TypeMetrics(TypedDict, total=False):
    """`aggregate`'s metrics of one question type: counts always; MC: accuracy and scores;
    FIB: Hit, Strict, Score | Hit and per-key accuracy; each with its random floor."""

    n: int
    n_uninformative: int
    n_invalid: int
    median_options: int
    median_varying_keys: int
    accuracy: float | None
    score: float | None
    score_yield_only: float | None
    floor_accuracy: float | None
    floor_score: float | None
    per_key_accuracy: dict[str, float | None]
    hit: float | None
    strict: float | None
    score_given_hit: float | None
    score_given_hit_yield_only: float | None
    per_key_accuracy_all: float | None
    floor_hit: float | None
    floor_strict: float | None
    floor_score_given_hit: float | None
    floor_per_key_accuracy: float | None


def aggregate(keys: Sequence[AnswerKey], results: Sequence[AnswerResult]) -> TypeMetrics:
    """Metrics of one question type over informative questions, with the exact random floor."""
    pairs = [(k, r) for k, r in zip(keys, results, strict=True) if not k.uninformative]
    out: TypeMetrics = {
        "n": len(pairs),
        "n_uninformative": len(keys) - len(pairs),
        "n_invalid": sum(1 for _, r in pairs if not r["valid"]),
    }
    if not pairs:
        return out
    floors = [random_floor(k) for k, _ in pairs]
    sizes = sorted(len(k.rel) for k, _ in pairs)  # the difficulty profile: options per question
    out["median_options"] = sizes[len(sizes) // 2]
    axes = sorted(len(k.keys) for k, _ in pairs)
    out["median_varying_keys"] = axes[len(axes) // 2]
    if pairs[0][0].qtype != "fib_all":
        out["accuracy"] = _mean([r["correct"] for _, r in pairs])
        out["score"] = _mean(_scored(r["score"] for _, r in pairs))
        out["score_yield_only"] = _mean(_scored(r["score_yield_only"] for _, r in pairs))
        out["floor_accuracy"] = _mean([f["accuracy"] for f in floors])
        out["floor_score"] = _mean([f["score"] for f in floors])
        per_key: dict[str, list[int]] = {}
        for k, r in pairs:
            if k.qtype == "mc_single":
                per_key.setdefault(k.keys[0], []).append(r["correct"])
        if per_key:
            out["per_key_accuracy"] = {k: _mean(v) for k, v in sorted(per_key.items())}
        return out
    hits = [r for _, r in pairs if r["hit"]]
    out["hit"] = _mean([r["hit"] for _, r in pairs])
    out["strict"] = _mean([r["strict"] for _, r in pairs])
    out["score_given_hit"] = _mean(_scored(r["score"] for r in hits))
    out["score_given_hit_yield_only"] = _mean(_scored(r["score_yield_only"] for r in hits))
    blanks = [v for _, r in pairs for v in r["per_key"].values()]
    out["per_key_accuracy_all"] = _mean(blanks)
    by_key: dict[str, list[int]] = {}
    for _, r in pairs:
        for name, v in r["per_key"].items():
            by_key.setdefault(name, []).append(v)
    out["per_key_accuracy"] = {k: _mean(v) for k, v in sorted(by_key.items())}
    out["floor_hit"] = _mean([f["hit"] for f in floors])
    out["floor_strict"] = _mean([f["strict"] for f in floors])
    # Score | Hit pools the Hits of all questions, so a uniform agent's expected value weighs
    # each question by its Hit floor (questions it hits more often count more).
    hit_mass = sum(f["hit"] for f in floors)
    out["floor_score_given_hit"] = (
        sum(f["hit"] * f["score_given_hit"] for f in floors) / hit_mass if hit_mass else None
    )
    out["floor_per_key_accuracy"] = _mean([f["per_key_accuracy"] for f in floors])
    return out
