"""The rows `labreplay export` writes, one `TypedDict` per table (`export.TABLES`).

The published JSON Schema (`export_schema.json`, built from these by
`scripts/export_schema.py`) is what analysts validate against. Columns marked `JsonText`
hold canonical JSON text; `events.payload` holds the payload of its `kind` (the suites'
`events` modules). A row's keys are exactly the store schema's columns (a test checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, TypedDict


class JsonText:
    """Marks a text column holding canonical JSON (`of`: what the JSON is)."""

    def __init__(self, of: str) -> None:
        self.of = of


class RunRow(TypedDict):
    run_id: str
    suite: str
    spec_hash: str
    spec_id: str
    branch: str
    parent_run_id: str | None  # the adaptive run a control branch follows
    agent: str
    agent_params: Annotated[str, JsonText("object")]
    model: str | None
    endpoint: str | None
    seed: int
    status: str  # running | complete | failed
    provenance: Annotated[str, JsonText("object")]
    started: str  # ISO 8601, UTC
    finished: str | None
    summary: Annotated[str | None, JsonText("object")]


class SpecRow(TypedDict):
    spec_hash: str
    suite: str
    protocol: str
    spec_id: str
    body: Annotated[str, JsonText("object")]  # the spec's file form
    created: str


class EventRow(TypedDict):
    run_id: str
    seq: int
    kind: str
    payload: Annotated[str, JsonText("payload")]  # the payload of `kind`
    prev_hash: str
    hash: str


class ScoreRow(TypedDict):
    run_id: str
    metric: str
    value: float | None
    detail: Annotated[str | None, JsonText("any")]


class LlmCallRow(TypedDict):
    run_id: str
    call_index: int
    request_hash: str
    model: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float | None
    finish_reason: str | None
    retries: int | None
    error: str | None
    cached: int | None  # 1: answered from the response cache
    purpose: str | None  # policy | checkpoint | answer | ...
    cached_tokens: int | None
    resolved_model: str | None
    parse_error: str | None
    max_tokens: int | None
    prompt_chars: int | None
    reply_chars: int | None
    cost_usd: float | None  # USD at the run's prices; NULL when the model's price was unknown


class SignatureExportRow(TypedDict):
    subject: str  # a run id, or `*store*` for the manifest of signed runs
    key_id: str
    message: str  # the exact ASCII JSON signed
    signature: str  # Ed25519, base64
    signed: str


ROWS: Mapping[str, type] = {
    "runs": RunRow,
    "specs": SpecRow,
    "events": EventRow,
    "scores": ScoreRow,
    "llm_calls": LlmCallRow,
    "signatures": SignatureExportRow,
}

__all__ = [
    "ROWS",
    "EventRow",
    "JsonText",
    "LlmCallRow",
    "RunRow",
    "ScoreRow",
    "SignatureExportRow",
    "SpecRow",
]
