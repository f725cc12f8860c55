"""The conditions suite's events, a discriminated union on `kind` (envelope:
`labreplay.sdk.events`): a run is (once the header lands) `header`, then one `answer` per
question, in the run's order. `PAYLOADS` feeds the published export schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, NotRequired, TypeAlias, TypedDict, cast

from labreplay.sdk.events import (
    COMMON_PAYLOADS,
    HeaderEvent,
    JsonObject,
    StoredEvent,
    checked_kinds,
)


class AnswerResult(TypedDict):
    """One answer's scores (`scoring.score_answer`): multiple choice sets option, correct,
    score and score_yield_only; fill-in-the-blank sets hit, strict, score and per_key."""

    valid: bool
    uninformative: bool  # a question every option of which scores the same (not counted)
    score: float | None
    option: NotRequired[int]
    correct: NotRequired[int]
    score_yield_only: NotRequired[float | None]
    hit: NotRequired[int]
    strict: NotRequired[int]
    per_key: NotRequired[dict[str, int]]


class AnswerPayload(TypedDict):
    question_id: str
    raw: JsonObject  # the agent's answer as given ({"error": ...} when it had none)
    answer: JsonObject  # parsed: {"option": i}, {"choices": {...}} or {"invalid": reason}
    result: AnswerResult


AnswerEvent: TypeAlias = StoredEvent[Literal["answer"], AnswerPayload]
ConditionsEvent: TypeAlias = HeaderEvent | AnswerEvent

PAYLOADS: Mapping[str, type] = {**COMMON_PAYLOADS, "answer": AnswerPayload}


def conditions_events(rows: Iterable[Mapping[str, object]]) -> list[ConditionsEvent]:
    """Stored events (`Store.events`, a recorder's) as this suite's typed union, each kind
    checked against `PAYLOADS` (StoreError naming an unknown one)."""
    return cast("list[ConditionsEvent]", checked_kinds(rows, PAYLOADS, "conditions"))


__all__ = [
    "PAYLOADS",
    "AnswerEvent",
    "AnswerPayload",
    "AnswerResult",
    "ConditionsEvent",
    "conditions_events",
]
