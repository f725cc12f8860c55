"""The offline evaluator: a predictions file scored against a question file (METRICS.md).

Predictions are JSONL, one object per question: ``{"id": ..., "answer": {"option": i}}`` (MC,
0-based), ``{"id": ..., "answer": {"choices": {key: i}}}`` (FIB, 0-based candidate indices) or
``{"id": ..., "text": "..."}`` (a free-text reply, parsed as the prompt numbers things:
1-based). A question with no prediction scores 0 and is counted.

A structured answer is the submitter's own encoding, so a malformed one (an option out of range,
negative, a string, float or boolean; a FIB slot missing, unknown or out of range; an id the
question file does not hold or one given twice; a line that is not a prediction object) is a
mistake in the file, not a model's answer: every one is named (line, id, field, value) and the
file is refused, unless ``lenient`` scores them as invalid and counts them. A free-text reply
that cannot be parsed is a model's answer and scores as invalid like any agent's. A file with
no prediction at all is refused either way.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from labreplay.errors import DataError
from labreplay.sdk import read_file
from labreplay.sdk.data import JsonLimitError, loads_strict
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import Question, agent_view
from labreplay.suites.conditions.scoring import answer_key, score_answer
from labreplay.suites.conditions.summary import headline, summarise

LISTED = 20  # malformed predictions listed one per line; the rest are counted


class _Absent(enum.Enum):
    """A field a prediction does not hold (unlike one holding null)."""

    MISSING = enum.auto()


_MISSING: Literal[_Absent.MISSING] = _Absent.MISSING


class ProblemJson(TypedDict):
    line: int
    id: str | None
    field: str
    value: JsonValue  # null when the field is absent
    reason: str


@dataclass(frozen=True)
class PredictionProblem:
    """One malformed prediction: where it is, which field, what value and why."""

    line: int
    qid: str | None
    field: str
    value: JsonValue | Literal[_Absent.MISSING]
    reason: str

    def describe(self) -> str:
        shown = "missing" if self.value is _MISSING else _short(self.value)
        who = "-" if self.qid is None else repr(self.qid)
        return f"line {self.line}, id {who}, field {self.field!r}, value {shown}: {self.reason}"

    def to_json(self) -> ProblemJson:
        return {
            "line": self.line,
            "id": self.qid,
            "field": self.field,
            "value": None if self.value is _MISSING else self.value,
            "reason": self.reason,
        }


def _short(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def problem_lines(problems: Sequence[PredictionProblem], limit: int = LISTED) -> list[str]:
    """One line per problem, the first `limit` of them, then a count of the rest."""
    lines = [p.describe() for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit} more malformed prediction(s)")
    return lines


@dataclass(frozen=True)
class ReadPredictions:
    """The usable predictions (id -> record) and every problem found on the way."""

    records: dict[str, JsonObject]
    problems: list[PredictionProblem]
    invalid_ids: frozenset[str]  # known ids whose prediction is malformed (scored invalid)


def _kind(value: JsonValue) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _index_problem(value: JsonValue, size: int, what: str) -> str | None:
    """Why `value` is not a 0-based index into `size` things (None when it is one)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{what} must be a 0-based integer index, got {_kind(value)}"
    if value < 0:
        return f"{what} index is negative ({size} {what}s: 0..{size - 1})"
    if value >= size:
        return f"{what} index out of range ({size} {what}s: 0..{size - 1})"
    return None


def _answer_problems(
    line: int, rec: Mapping[str, JsonValue], q: Question, qid: str
) -> list[PredictionProblem]:
    """Problems of one prediction's answer against its question (empty when well formed)."""
    if "answer" not in rec:
        text = rec.get("text")
        if isinstance(text, str):
            return []  # a reply to parse; an unreadable one is the model's answer
        return [PredictionProblem(line, qid, "text", text, "a text reply must be a string")]
    answer = rec["answer"]
    if not isinstance(answer, Mapping):
        return [PredictionProblem(line, qid, "answer", answer, "must be an object")]
    if q["question_type"] != "fib_all":
        option = answer.get("option", _MISSING)
        if option is _MISSING:
            return [
                PredictionProblem(line, qid, "answer.option", _MISSING, "an MC answer needs it")
            ]
        why = _index_problem(option, len(q["options"]), "option")
        return [] if why is None else [PredictionProblem(line, qid, "answer.option", option, why)]
    choices = answer.get("choices", _MISSING)
    if not isinstance(choices, Mapping):
        return [PredictionProblem(line, qid, "answer.choices", choices, "must be an object")]
    slots = list(q["varying_keys"])
    out = [
        PredictionProblem(
            line, qid, f"answer.choices.{k}", choices[k], f"not a slot (slots: {', '.join(slots)})"
        )
        for k in choices
        if k not in slots
    ]
    for k in slots:
        value = choices.get(k, _MISSING)
        if value is _MISSING:
            out.append(
                PredictionProblem(line, qid, f"answer.choices.{k}", value, "slot not filled")
            )
            continue
        why = _index_problem(value, len(q["candidates"][k]), "candidate")
        if why is not None:
            out.append(PredictionProblem(line, qid, f"answer.choices.{k}", value, why))
    return out


def _read_lines(
    path: Path,
) -> tuple[dict[str, list[tuple[int, JsonObject]]], list[PredictionProblem]]:
    """id -> [(line, record)] of the prediction objects, and the lines that are not one."""
    try:
        text = read_file(path, "predictions file").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 (byte offset {exc.start})", file=str(path)) from exc
    problems: list[PredictionProblem] = []
    by_id: dict[str, list[tuple[int, JsonObject]]] = {}
    n_lines = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        n_lines += 1
        try:  # depth-limited, NaN/Infinity refused
            rec = loads_strict(line)
        except JsonLimitError as exc:
            problems.append(PredictionProblem(n, None, "(line)", _MISSING, str(exc)))
            continue
        if not isinstance(rec, dict):
            problems.append(PredictionProblem(n, None, "(line)", rec, "must be a JSON object"))
            continue
        qid = rec.get("id", _MISSING)
        if not isinstance(qid, str):
            problems.append(PredictionProblem(n, None, "id", qid, "a prediction needs a string id"))
            continue
        by_id.setdefault(qid, []).append((n, rec))
    if n_lines == 0:
        raise DataError("holds no prediction (empty file)", file=str(path))
    return by_id, problems


def _id_problem(
    qid: str, entries: list[tuple[int, JsonObject]], known: bool
) -> PredictionProblem | None:
    """An unknown or repeated id, or a record with neither answer nor text."""
    first_line, rec = entries[0]
    if not known:
        return PredictionProblem(first_line, qid, "id", qid, "not in the question file")
    if len(entries) > 1:
        lines = ", ".join(str(n) for n, _ in entries)
        why = f"predicted {len(entries)} times (lines {lines})"
        return PredictionProblem(first_line, qid, "id", qid, why)
    if "answer" not in rec and "text" not in rec:
        return PredictionProblem(first_line, qid, "answer", _MISSING, "needs 'answer' or 'text'")
    return None


def check_predictions(path: str | Path, questions: Mapping[str, Question]) -> ReadPredictions:
    """Read a predictions file and name every malformed prediction (nothing is raised for
    them; an unreadable or empty file is refused)."""
    by_id, problems = _read_lines(Path(path))
    records: dict[str, JsonObject] = {}
    invalid: set[str] = set()
    for qid, entries in by_id.items():
        problem = _id_problem(qid, entries, qid in questions)
        found = [problem] if problem else _answer_problems(*entries[0], questions[qid], qid)
        problems.extend(found)
        if not found:
            records[qid] = entries[0][1]
        elif qid in questions:
            invalid.add(qid)
    problems.sort(key=lambda p: (p.line, p.field))
    return ReadPredictions(records, problems, frozenset(invalid))


def score_read(questions: list[Question], read: ReadPredictions) -> dict[str, object]:
    """Score checked predictions; a question whose prediction is malformed scores as invalid."""
    keys, results = [], []
    for q in questions:
        key = answer_key(q)
        if q["id"] in read.invalid_ids:
            parsed: JsonObject = {"invalid": "malformed prediction (--lenient)"}
        else:
            rec = read.records.get(q["id"], {})
            raw = rec.get("answer", {"text": rec["text"]} if "text" in rec else {})
            parsed = normalise_answer(raw, agent_view(q))
        keys.append(key)
        results.append(score_answer(key, parsed))
    summary = summarise(keys, results, seed=0)
    given = read.records.keys() | read.invalid_ids
    return {
        "missing_predictions": sum(1 for q in questions if q["id"] not in given),
        "malformed_predictions": len(read.problems),
        "malformed_scored_invalid": len(read.invalid_ids),
        "malformed": [p.to_json() for p in read.problems[:LISTED]],
        **headline(summary),
        "summary": summary,
    }
