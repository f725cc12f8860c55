"""Question agents: the non-LLM references of the `QuestionAgent` contract (defined in
`labreplay.agents.contracts`, importable from here too).

`QuestionAgent.answer(view)` returns a raw answer: ``{"option": i}`` / ``{"choices": {k: i}}``
(0-based) or ``{"text": reply}`` for free text, which `prompts.parse_answer` reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from labreplay.errors import AgentError
from labreplay.sdk import make_rng, sha256_json
from labreplay.sdk.agents import QuestionAgent
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.questions import (
    Precedent,
    Question,
    QuestionView,
    table_id_of,
    value_label,
    view_of,
)
from labreplay.suites.conditions.scoring import utility_of_outcome
from labreplay.suites.conditions.usual_winner import UsualWinner


class RandomAgent:
    """Uniform over options (MC) or over each slot's candidates (FIB); one recorded stream per
    question, so answers do not depend on question order."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def params(self) -> dict[str, JsonValue]:
        return {"seed": self.seed}

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        view = view_of(question_view)
        rng = make_rng(self.seed, "random-agent", view["id"])
        if view["question_type"] == "fib_all":
            cands = view["candidates"]
            return {"choices": {k: int(rng.integers(len(cands[k]))) for k in view["varying_keys"]}}
        return {"option": int(rng.integers(len(view["options"])))}


def _full_conditions(q: Question, option: Mapping[str, object]) -> dict[str, str]:
    conds = {k: value_label(v) for k, v in q["input"].get("constant_conditions", {}).items()}
    conds.update({k: value_label(v) for k, v in q["input"].get("fixed_conditions", {}).items()})
    conds.update({k: value_label(v) for k, v in option.items()})
    return conds


class LeaveTableOutRanker:
    """Data-driven reference: ranks a value by its mean relative utility (utility / table best)
    over the *other* tables of the same dataset, and an option by the mean over its keys.

    It is fit on the evaluator-side rows of a question file (every table's observed rows with
    their utilities); when it answers a question it leaves that question's own table out, so it
    never sees the outcomes it is asked about. Unseen values get the key's overall mean.
    """

    name = "ranker_leave_table_out"

    def __init__(self, questions: Sequence[Question]) -> None:
        tables: dict[tuple[object, str], dict[tuple[tuple[str, str], ...], float]] = {}
        for q in questions:
            meta = q["meta"]
            if "effective_scores" not in meta:  # every type: single-axis tables ask MC_single only
                continue
            rows = tables.setdefault((meta.get("dataset", ""), table_id_of(q)), {})
            scores = meta["effective_scores"]
            assert isinstance(scores, list)  # validated: one finite number or null per option
            for opt, u in zip(q["options"], scores, strict=True):
                rows[tuple(sorted(_full_conditions(q, opt).items()))] = float(u or 0.0)
        # Totals and per-table parts of (sum of relative utility, count), per value and per key,
        # so that leaving one table out is a subtraction.
        # the dataset is the question's meta.dataset as given (the view shows the same value)
        self._value: dict[tuple[object, str, str], list[float]] = {}
        self._value_table: dict[tuple[object, str, str, str], list[float]] = {}
        self._key: dict[tuple[object, str], list[float]] = {}
        self._key_table: dict[tuple[object, str, str], list[float]] = {}
        for (dataset, table), rows in sorted(tables.items()):
            best = max(rows.values(), default=0.0)
            if best <= 0:
                continue
            for conds, u in rows.items():
                for key, label in conds:
                    for acc in (
                        self._value.setdefault((dataset, key, label), [0.0, 0]),
                        self._value_table.setdefault((dataset, key, label, table), [0.0, 0]),
                        self._key.setdefault((dataset, key), [0.0, 0]),
                        self._key_table.setdefault((dataset, key, table), [0.0, 0]),
                    ):
                        acc[0] += u / best
                        acc[1] += 1
        self._fingerprint = sha256_json(sorted(f"{d}/{t}" for d, t in tables))[:16]

    def params(self) -> dict[str, JsonValue]:
        return {
            "basis": "per-axis mean relative utility over other tables of the dataset",
            "training_tables": self._fingerprint,
        }

    def _value_mean(self, dataset: object, table: str, key: str, label: str) -> float | None:
        s, n = self._value.get((dataset, key, label), [0.0, 0])
        ts, tn = self._value_table.get((dataset, key, label, table), [0.0, 0])
        if n - tn > 0:
            return (s - ts) / (n - tn)
        # unseen value: the mean over every other value of this key (a neutral prior)
        s, n = self._key.get((dataset, key), [0.0, 0])
        ts, tn = self._key_table.get((dataset, key, table), [0.0, 0])
        return (s - ts) / (n - tn) if n - tn > 0 else None

    def _option_score(self, view: QuestionView, option: Mapping[str, object]) -> float:
        vals = [
            self._value_mean(view["dataset"], view["table_id"], k, value_label(v))
            for k, v in option.items()
        ]
        known = [v for v in vals if v is not None]
        return sum(known) / len(known) if known else 0.0

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        view = view_of(question_view)
        if "dataset" not in view or "table_id" not in view:
            raise AgentError(f"question {view.get('id')}: view lacks dataset/table_id")
        if view["question_type"] == "fib_all":
            choices: dict[str, JsonValue] = {}
            for k in view["varying_keys"]:
                scores = [self._option_score(view, {k: c}) for c in view["candidates"][k]]
                choices[k] = max(range(len(scores)), key=lambda i: (scores[i], -i))
            return {"choices": choices}
        scores = [self._option_score(view, opt) for opt in view["options"]]
        return {"option": max(range(len(scores)), key=lambda i: (scores[i], -i))}


def _pick(scores: Sequence[float], rng: np.random.Generator, best: str) -> int:
    """The index of the highest (`best="max"`) or lowest score; a seeded choice among ties."""
    target = max(scores) if best == "max" else min(scores)
    tied = [i for i, v in enumerate(scores) if v == target]
    return tied[int(rng.integers(len(tied)))]


def _precedent_values(
    precedents: Sequence[Precedent],
) -> list[tuple[dict[str, str], float]]:
    """Each precedent's condition labels and its utility (0 when its outcome has none)."""
    return [
        (
            {k: value_label(v) for k, v in p["conditions"].items()},
            utility_of_outcome(p.get("outcome") or {}) or 0.0,
        )
        for p in precedents
    ]


class ExclusionBaseline:
    """Chemistry-free reference for the precedent lift (METRICS.md): picks the option whose
    values appear least often among the precedents (FIB: per slot, the least shown candidate),
    ties broken by a seeded draw; without precedents every option ties (a uniform draw). Were
    precedents chosen by outcome (e.g. only rows below the best), this agent would earn a lift
    from exclusion alone; with outcome-blind precedents its lift is 0 in expectation."""

    name = "exclusion_baseline"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def params(self) -> dict[str, JsonValue]:
        return {"seed": self.seed, "basis": "least represented among the precedents"}

    @staticmethod
    def slot_scores(view: QuestionView) -> dict[str, list[float]]:
        """How often each option (``"option"``; FIB: each slot's candidates) is shown."""
        shown = Counter(
            (k, label)
            for conds, _ in _precedent_values(view.get("precedents") or [])
            for k, label in conds.items()
        )
        if view["question_type"] == "fib_all":
            return {
                k: [float(shown[(k, value_label(c))]) for c in view["candidates"][k]]
                for k in view["varying_keys"]
            }
        return {
            "option": [
                float(sum(shown[(k, value_label(v))] for k, v in opt.items()))
                for opt in view["options"]
            ]
        }

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        view = view_of(question_view)
        rng = make_rng(self.seed, "exclusion-baseline", view["id"])
        scores = self.slot_scores(view)
        return _answer(view["question_type"], view["varying_keys"], scores, rng, "min")


class PrecedentRanker:
    """Outcome-using reference for the precedent lift: a condition value scores the mean
    utility of the precedents run with it (a value no precedent used: the mean over all
    precedents), an option the mean over its values; the best option (FIB: per slot), seeded
    ties. It transfers what the precedents' outcomes say about each condition to this
    question; without precedents it is a uniform draw, so its lift is what the outcomes teach."""

    name = "precedent_ranker"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def params(self) -> dict[str, JsonValue]:
        return {"seed": self.seed, "basis": "mean precedent utility per condition value"}

    @staticmethod
    def slot_scores(view: QuestionView) -> dict[str, list[float]]:
        """Each option's (FIB: each slot candidate's) mean precedent utility."""
        precedents = _precedent_values(view.get("precedents") or [])
        sums: dict[tuple[str, str], list[float]] = {}
        for conds, u in precedents:
            for k, label in conds.items():
                acc = sums.setdefault((k, label), [0.0, 0.0])
                acc[0] += u
                acc[1] += 1
        prior = sum(u for _, u in precedents) / len(precedents) if precedents else 0.0

        def value_score(key: str, components: object) -> float:
            s, n = sums.get((key, value_label(components)), [0.0, 0.0])
            return s / n if n else prior

        if view["question_type"] == "fib_all":
            return {
                k: [value_score(k, c) for c in view["candidates"][k]] for k in view["varying_keys"]
            }
        return {
            "option": [
                sum(value_score(k, v) for k, v in opt.items()) / max(len(opt), 1)
                for opt in view["options"]
            ]
        }

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        view = view_of(question_view)
        rng = make_rng(self.seed, "precedent-ranker", view["id"])
        scores = self.slot_scores(view)
        return _answer(view["question_type"], view["varying_keys"], scores, rng, "max")


def _answer(
    qtype: str,
    keys: Sequence[str],
    scores: Mapping[str, list[float]],
    rng: np.random.Generator,
    best: str,
) -> JsonObject:
    if qtype == "fib_all":
        return {"choices": {k: _pick(scores[k], rng, best) for k in keys}}
    return {"option": _pick(scores["option"], rng, best)}


def reference_agent(name: str, questions: Sequence[Question], seed: int) -> QuestionAgent:
    """Build a non-LLM reference by name (`random`, `ranker`, `usual_winner`, `exclusion`,
    `precedent_ranker`)."""
    if name == "random":
        return RandomAgent(seed)
    if name in {"ranker", LeaveTableOutRanker.name}:
        return LeaveTableOutRanker(questions)
    if name == UsualWinner.name:
        return UsualWinner(questions)
    if name in {"exclusion", ExclusionBaseline.name}:
        return ExclusionBaseline(seed)
    if name == PrecedentRanker.name:
        return PrecedentRanker(seed)
    raise AgentError(
        f"unknown conditions agent {name!r} "
        "(known: random, ranker, usual_winner, exclusion, precedent_ranker, llm)"
    )


__all__ = [
    "ExclusionBaseline",
    "LeaveTableOutRanker",
    "PrecedentRanker",
    "QuestionAgent",
    "RandomAgent",
    "UsualWinner",
    "reference_agent",
]
