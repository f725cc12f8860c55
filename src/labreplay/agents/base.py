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

from collections.abc import Mapping, Sequence
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
    # What the call was for ("policy", "checkpoint", "answer"), the provider's own accounting
    # and why its reply could not be used (None when it could).
    purpose: str | None
    cached_tokens: int | None
    resolved_model: str | None
    parse_error: str | None
    max_tokens: int | None
    prompt_chars: int | None
    reply_chars: int | None


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


def call_failures(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How a run's model calls went: counts, the failed share and the first failure's cause.

    A run in which EVERY call failed (closed port, DNS, 401/403, invalid URL) measured the
    endpoint, not the agent: its status is `failed`, it is never ranked, and rerunning it once
    the endpoint answers starts it afresh. A run with some failed calls is complete, and boards
    show its failed-call share.
    """
    # A call whose reply was not usable JSON (garbage content, cut off at the token limit) failed
    # as surely as one that never came back: an endpoint answering only that measured nothing.
    failed = [c for c in calls if c.get("error") or c.get("parse_error")]
    share = len(failed) / len(calls) if calls else 0.0
    return {
        "llm_calls": len(calls),
        "failed_calls": len(failed),
        "failed_call_share": round(share, 6),
        "all_failed": bool(calls) and len(failed) == len(calls),
        # The first real failure, not a call skipped because of it ("not sent: ...").
        "cause": next(
            (_why(c) for c in failed if not _why(c).startswith("not sent")),
            _why(failed[0]) if failed else None,
        ),
    }


def _why(call: Mapping[str, Any]) -> str:
    return str(call.get("error") or f"unusable reply: {call.get('parse_error')}")


@runtime_checkable
class ResponseCache(Protocol):
    """Where LLM clients look up and keep completed responses: the results store itself (in
    the driver process) or an in-memory snapshot of it (`labreplay.execute.driver.MemoryCache`)
    on a worker, whose new entries the driver writes back."""

    def cached_response(self, key: str) -> dict[str, Any] | None: ...

    def cache_response(self, key: str, model: str, response: Mapping[str, Any]) -> None: ...
