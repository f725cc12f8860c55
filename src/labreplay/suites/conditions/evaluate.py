"""The offline evaluator: a predictions file scored against a question file (METRICS.md).

Predictions are JSONL, one object per question: ``{"id": ..., "answer": {"option": i}}`` (MC,
0-based), ``{"id": ..., "answer": {"choices": {key: i}}}`` (FIB, 0-based candidate indices) or
``{"id": ..., "text": "..."}`` (a free-text reply, parsed as the prompt numbers things:
1-based). An id the question file does not hold, or an id listed twice, refuses the whole file
(naming the first few, with counts); a question with no prediction scores 0 and is counted.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from labreplay.errors import DataError
from labreplay.sdk.data import JsonLimitError, loads_strict
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import agent_view
from labreplay.suites.conditions.scoring import answer_key, score_answer
from labreplay.suites.conditions.summary import headline, summarise

SHOW = 3  # ids named in an error message


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOW])
    return shown + (f" (+{len(ids) - SHOW} more)" if len(ids) > SHOW else "")


def read_predictions(path: str | Path, question_ids: set[str]) -> dict[str, dict[str, Any]]:
    """id -> prediction record; refuses unknown or duplicate ids."""
    path = Path(path)
    if not path.is_file():
        raise DataError("predictions file not found", file=str(path))
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", file=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 (byte offset {exc.start})", file=str(path)) from exc
    records: list[tuple[str, dict[str, Any]]] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:  # depth-limited, NaN/Infinity refused
            rec = loads_strict(line)
        except JsonLimitError as exc:
            raise DataError(str(exc), file=str(path), record=f"line {n}") from exc
        if not isinstance(rec, dict) or "id" not in rec:
            raise DataError("a prediction needs an 'id'", file=str(path), record=f"line {n}")
        if "answer" not in rec and "text" not in rec:
            raise DataError(
                "a prediction needs 'answer' or 'text'",
                file=str(path),
                record=f"line {n}",
                value=rec["id"],
            )
        records.append((str(rec["id"]), rec))
    counts = Counter(qid for qid, _ in records)
    unknown = sorted(qid for qid in counts if qid not in question_ids)
    if unknown:
        raise DataError(
            f"{len(unknown)} prediction id(s) not in the question file: {_named(unknown)}",
            file=str(path),
            field="id",
        )
    duplicates = sorted(qid for qid, c in counts.items() if c > 1)
    if duplicates:
        listed = [f"{qid} x{counts[qid]}" for qid in duplicates]
        raise DataError(
            f"{len(duplicates)} id(s) predicted more than once: {_named(listed)}",
            file=str(path),
            field="id",
        )
    return dict(records)


def score_predictions(questions: list[dict[str, Any]], path: Path) -> dict[str, Any]:
    """Headline metrics (with floors) of a predictions file; missing predictions score 0."""
    answers = read_predictions(path, {q["id"] for q in questions})
    keys, results = [], []
    for q in questions:
        rec = answers.get(q["id"], {})
        raw = rec.get("answer", {"text": rec["text"]} if "text" in rec else {})
        keys.append(answer_key(q))
        results.append(score_answer(keys[-1], normalise_answer(raw, agent_view(q))))
    summary = summarise(keys, results, seed=0)
    missing = sum(1 for q in questions if q["id"] not in answers)
    return {"missing_predictions": missing, **headline(summary), "summary": summary}
