"""Helpers shared by every suite's agents: model-call records and how a run's calls went.

The agent contracts themselves (campaign `CampaignAgent`, conditions `QuestionAgent`,
configsearch `Optimizer`) and the optional capabilities are in `labreplay.agents.contracts`;
the names below are kept importable from here (`Agent` is the campaign contract).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from labreplay.agents.contracts import Agent, CallRecord, ResponseCache, drain_calls


class CallFailures(TypedDict):
    """How a run's model calls went (`call_failures`)."""

    llm_calls: int
    failed_calls: int
    failed_call_share: float
    all_failed: bool
    cause: str | None  # the first real failure's cause, None when no call failed


def call_failures(calls: Sequence[Mapping[str, object]]) -> CallFailures:
    """How a run's model calls went: counts, the failed share and the first failure's cause.

    A run in which EVERY call failed (closed port, DNS, 401/403, invalid URL) measured the
    endpoint, not the agent: its status is `failed`, it is never ranked, and rerunning it once
    the endpoint answers starts it afresh. A run with some failed calls is complete, and boards
    show its failed-call share.
    """
    # A call whose reply held no JSON at all (garbage content, cut off at the token limit)
    # failed as surely as one that never came back: an endpoint answering only that measured
    # nothing. A JSON reply that breaks the schema is the model's answer (scored invalid).
    failed = [c for c in calls if c.get("error") or _no_json(c)]
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


# The start of `parse_error` for a reply with no JSON object in it (see llm_wire).
NO_JSON_REPLY = "the reply contains no JSON object"


def _no_json(call: Mapping[str, object]) -> bool:
    return str(call.get("parse_error") or "").startswith(NO_JSON_REPLY)


def _why(call: Mapping[str, object]) -> str:
    return str(call.get("error") or f"unusable reply: {call.get('parse_error')}")


__all__ = ["Agent", "CallFailures", "CallRecord", "ResponseCache", "call_failures", "drain_calls"]
