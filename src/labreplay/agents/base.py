"""Helpers shared by every suite's agents: model-call records and how a run's calls went.

The agent contracts themselves (campaign `CampaignAgent`, conditions `QuestionAgent`,
configsearch `Optimizer`) and the optional capabilities are in `labreplay.agents.contracts`;
the names below are kept importable from here (`Agent` is the campaign contract).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labreplay.agents.contracts import Agent, CallRecord, ResponseCache, drain_calls


def call_failures(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How a run's model calls went: counts, the failed share and the first failure's cause.

    A run in which EVERY call failed (closed port, DNS, 401/403, invalid URL) measured the
    endpoint, not the agent: its status is `failed`, it is never ranked, and rerunning it once
    the endpoint answers starts it afresh. A run with some failed calls is complete, and boards
    show its failed-call share.
    """
    failed = [c for c in calls if c.get("error")]
    share = len(failed) / len(calls) if calls else 0.0
    return {
        "llm_calls": len(calls),
        "failed_calls": len(failed),
        "failed_call_share": round(share, 6),
        "all_failed": bool(calls) and len(failed) == len(calls),
        # The first real failure, not a call skipped because of it ("not sent: ...").
        "cause": next(
            (str(c["error"]) for c in failed if not str(c["error"]).startswith("not sent")),
            str(failed[0]["error"]) if failed else None,
        ),
    }


__all__ = ["Agent", "CallRecord", "ResponseCache", "call_failures", "drain_calls"]
