"""The agent protocol every suite drives.

An observation is a plain JSON object:
  {"phase": str, "rules": str, "action_schema": <JSON schema>, "state": <agent-visible state>,
   "last_result": {"accepted": bool, "reason": str, ...} | None, "step": int}
`act` returns one JSON object meant to satisfy `action_schema`; the environment validates it and
records a bad one as an invalid action (scored, never a crash).

A checkpoint snapshot is a plain JSON object:
  {"kind": "panel_checkpoint", "instructions": str, "response_schema": <JSON schema>,
   "state": <hash-bound copy of the agent-visible state>, "state_hash": str,
   "panel": [{"experiment_id": str, "descriptors": {...}}, ...]}
`forecast` answers it without side effects on the campaign (no budget, no state change).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypedDict, runtime_checkable


class CallRecord(TypedDict, total=False):
    """One model call, as stored in the `llm_calls` table."""

    call_index: int
    request_hash: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    finish_reason: str | None
    retries: int
    error: str | None
    cached: bool


@runtime_checkable
class Agent(Protocol):
    """A campaign policy. `name` and `params()` go into run provenance (never secrets)."""

    name: str

    def params(self) -> dict[str, Any]: ...

    def reset(self, seed: int) -> None: ...

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]: ...

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]: ...


def drain_calls(agent: object) -> list[CallRecord]:
    """Model-call records an agent collected since the last drain ([] for non-LLM agents)."""
    drain = getattr(agent, "drain_calls", None)
    if drain is None:
        return []
    calls: list[CallRecord] = drain()
    return calls


@runtime_checkable
class ResponseCache(Protocol):
    """Where LLM clients look up and keep completed responses: the results store itself (in
    the driver process) or an in-memory snapshot of it (`labreplay.execute.driver.MemoryCache`)
    on a worker, whose new entries the driver writes back."""

    def cached_response(self, key: str) -> dict[str, Any] | None: ...

    def cache_response(self, key: str, model: str, response: Mapping[str, Any]) -> None: ...
