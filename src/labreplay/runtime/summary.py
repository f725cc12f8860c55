"""The run summary (`runs.summary`): one schema for every suite's runs.

A run's summary holds the fields every suite shares, defined here, beside the suite's own
figures (campaign invalid actions, a search's answer and trace, ...). The model-call accounting
is never written by a suite: `Recorder.finish` derives it from the run's recorded calls with
`call_accounting`, and `store verify` derives it again from the `llm_calls` rows with the same
function, so an honest run of any suite verifies and an edited count does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from labreplay.runtime.event_types import JsonValue

# The accounting fields `store verify` re-derives from the `llm_calls` rows (a board reads
# them: campaign's failed-call share per system). `usage` rides along, not re-derived: it
# counts request fields the table does not keep (`token_param`).
CALL_FIELDS: tuple[Literal["llm_calls", "failed_calls", "failed_call_share"], ...] = (
    "llm_calls",
    "failed_calls",
    "failed_call_share",
)


class RunSummary(TypedDict, total=False):
    """The shared fields of `runs.summary` (a suite's own figures sit beside them)."""

    # model-call accounting (`call_accounting`), present when the run called a model
    llm_calls: int
    failed_calls: int
    failed_call_share: float  # failed_calls / llm_calls, 6 decimals
    usage: dict[str, JsonValue]  # `labreplay.agents.llm_usage.usage_summary` of the calls
    # why a run failed (the failed-run rule of `labreplay.runtime.failure`)
    cause: str | None
    cause_kind: str
    cap_reached: str  # the cap that stopped it, e.g. "--max-calls 50 (...)"


def call_accounting(calls: Sequence[Mapping[str, object]]) -> RunSummary:
    """The accounting fields of a run that made `calls` (its `llm_calls` rows, or the call
    records as logged); {} for a run that called no model."""
    from labreplay.agents.base import call_failures
    from labreplay.agents.llm_usage import usage_summary

    if not calls:
        return {}
    failures = call_failures(calls)
    return {
        "llm_calls": failures["llm_calls"],
        "failed_calls": failures["failed_calls"],
        "failed_call_share": failures["failed_call_share"],
        "usage": usage_summary(calls),
    }


__all__ = ["CALL_FIELDS", "RunSummary", "call_accounting"]
