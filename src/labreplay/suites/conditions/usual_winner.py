"""The usual winner, and the substrate-specific skill read against it (METRICS.md, issue 49).

The **usual winner** (`usual_winner` agent, a reference row on every conditions board) knows
only what won elsewhere in the same dataset: a condition value counts the base questions (no
precedents, informative; every type) of the dataset's *other* tables whose gold answer holds it
(MC: a gold option; FIB: a gold row); an option scores the sum of its values' counts over the
question's varying keys (FIB: each slot its candidate's count). The highest wins, ties to the
lowest index. It reads no row of the question's own table and ignores precedents, so
whatever it scores is dataset-level popularity, reachable without reading the substrate.

The **substrate-specific skill** of a run = its score minus the usual winner's on the same
questions, paired per question, with an interval that resamples source tables.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

from labreplay.sdk import sha256_json
from labreplay.sdk.agents import QuestionAgent
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.events import AnswerResult
from labreplay.suites.conditions.questions import Question, agent_view, value_label, view_of
from labreplay.suites.conditions.scoring import AnswerKey, answer_key, score_answer
from labreplay.suites.conditions.summary import Interval, cluster_bootstrap

# (question type, metric) pairs the skill is reported for; the board's column is MC_all score
SKILL_METRICS: tuple[tuple[str, Literal["score", "strict"]], ...] = (
    ("mc_single", "score"),
    ("mc_all", "score"),
    ("fib_all", "strict"),
)


def _first_best(scores: Sequence[int]) -> int:
    """The index of the highest count; ties go to the lowest index (declared, deterministic)."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


class UsualWinner:
    """Leave-table-out popularity: the option whose values were most often gold in the same
    dataset's other tables (module docstring). Fit on the evaluator-side questions it is
    given, like the leave-table-out ranker."""

    name = "usual_winner"

    def __init__(self, questions: Sequence[Question]) -> None:
        self._won: Counter[tuple[str, str, str]] = Counter()  # dataset, key, value
        self._won_here: Counter[tuple[str, str, str, str]] = Counter()  # ... and its table
        tables = set()
        for q in questions:
            key = answer_key(q)
            if key.variant == "with_precedents" or key.uninformative:
                continue  # a twin repeats its base's answer
            tables.add(f"{key.dataset}/{key.table}")
            for name, label in {
                (k, row[j]) for row in key.gold_rows for j, k in enumerate(key.keys)
            }:
                self._won[(key.dataset, name, label)] += 1
                self._won_here[(key.dataset, name, label, key.table)] += 1
        self._fingerprint = sha256_json(sorted(tables))[:16]

    def params(self) -> dict[str, JsonValue]:
        return {
            "basis": "times each value was gold in the dataset's other tables; ties: lowest index",
            "training_tables": self._fingerprint,
        }

    def wins_elsewhere(self, dataset: str, table: str, key: str, label: str) -> int:
        """Base questions outside `table` whose gold holds key=label (the own table subtracted)."""
        return self._won[(dataset, key, label)] - self._won_here[(dataset, key, label, table)]

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        view = view_of(question_view)
        dataset, table, keys = str(view["dataset"]), view["table_id"], view["varying_keys"]
        if view["question_type"] == "fib_all":
            return {
                "choices": {
                    k: _first_best(
                        [
                            self.wins_elsewhere(dataset, table, k, value_label(c))
                            for c in view["candidates"][k]
                        ]
                    )
                    for k in keys
                }
            }
        scores = [
            sum(self.wins_elsewhere(dataset, table, k, value_label(opt[k])) for k in keys)
            for opt in view["options"]
        ]
        return {"option": _first_best(scores)}


def usual_winner_results(
    questions: Mapping[str, Question], keys: Sequence[AnswerKey]
) -> list[AnswerResult]:
    """The usual winner's scored answers to the questions of `keys` (fit on those questions,
    as the runner fits it on a run's questions)."""
    agent: QuestionAgent = UsualWinner([questions[k.qid] for k in keys])
    return [score_answer(k, agent.answer(dict(agent_view(questions[k.qid])))) for k in keys]


def substrate_skill(
    keys: Sequence[AnswerKey],
    results: Sequence[AnswerResult],
    reference: Sequence[AnswerResult],
    seed: int,
) -> dict[str, Interval]:
    """ "<type>.<metric>" -> a run's score minus the usual winner's, paired per base question
    (informative, no precedents), interval resampling source tables (`cluster_bootstrap`)."""
    out: dict[str, Interval] = {}
    for qtype, metric in SKILL_METRICS:
        diffs: list[float] = []
        tables: list[str] = []
        for k, mine, theirs in zip(keys, results, reference, strict=True):
            if k.qtype == qtype and k.variant == "no_precedents" and not k.uninformative:
                diffs.append(float(mine.get(metric) or 0.0) - float(theirs.get(metric) or 0.0))
                tables.append(k.table or k.qid)
        out[f"{qtype}.{metric}"] = cluster_bootstrap(diffs, tables, seed, purpose="substrate-skill")
    return out


__all__ = ["SKILL_METRICS", "UsualWinner", "substrate_skill", "usual_winner_results"]
