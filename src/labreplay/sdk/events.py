"""Event types for suite authors: the stored-event envelope, the shared `header` payload and
the JSON value types payloads are built from (`labreplay.runtime.event_types`).

    from labreplay.sdk.events import JsonObject, StoredEvent

    class AnswerPayload(TypedDict): ...
    AnswerEvent = StoredEvent[Literal["answer"], AnswerPayload]
"""

from __future__ import annotations

from labreplay.runtime.event_types import (
    COMMON_PAYLOADS,
    HeaderEvent,
    HeaderKind,
    HeaderPayload,
    JsonObject,
    JsonValue,
    StoredEvent,
    checked_kinds,
)

__all__ = [
    "COMMON_PAYLOADS",
    "HeaderEvent",
    "HeaderKind",
    "HeaderPayload",
    "JsonObject",
    "JsonValue",
    "StoredEvent",
    "checked_kinds",
]
