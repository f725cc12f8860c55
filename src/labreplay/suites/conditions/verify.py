"""What `store verify` re-derives of a stored conditions run beyond its headline scores: the
full `summary` detail (from the answer events and the question file the store keeps), the
failed-call share row and the status (the failed-run rule over the answers and the call log).
A run failed by a cap rests on the recorded cap, which the events cannot confirm: its status
is said as not derivable (None)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labreplay.sdk.agents import call_failures
from labreplay.sdk.engine import EnvironmentSpec, Rederived, RunInfo, Store
from labreplay.suites.conditions.episodes import answers_verdict
from labreplay.suites.conditions.runner import rescored_summary


def call_share(run: RunInfo, store: Store | None) -> dict[str, float | None]:
    """The `failed_call_share` score row a run with model calls stores ({} without calls)."""
    calls = store.llm_calls(run.run_id) if store is not None else []
    return {"failed_call_share": call_failures(calls)["failed_call_share"]} if calls else {}


def rederive_run(
    spec: EnvironmentSpec,
    events: Sequence[Mapping[str, object]],
    run: RunInfo,
    store: Store | None,
) -> Rederived:
    calls = store.llm_calls(run.run_id) if store is not None else []
    status: str | None = answers_verdict(events, calls).status
    if status == "complete" and (run.summary or {}).get("cap_reached"):
        status = None
    summary = rescored_summary(spec, events, run.seed, store) if store is not None else None
    return {
        "controls": [],
        "details": {"summary": summary} if summary is not None else {},
        "status": status,
        "summary": {},
    }


__all__ = ["call_share", "rederive_run"]
