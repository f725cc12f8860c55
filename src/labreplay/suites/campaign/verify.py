"""What `store verify` re-derives of a stored campaign branch beyond its scalar scores.

From the events alone: the `curve`, `movements` and `closed` details the boards plot and read,
and the summary counts they show (invalid actions, checkpoint fallbacks). From the call log
and the health counts: the status the failed-run rule gives. A `failed` status whose cause is
a harness stop (a cap, an agent that stopped answering) rests on the recorded cause, not on
anything in the events: said as not derivable (status None), never passed as verified.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from labreplay.sdk.engine import (
    EnvironmentSpec,
    Rederived,
    RunHealth,
    RunInfo,
    Store,
    run_verdict,
)
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.branches import random_replicate
from labreplay.suites.campaign.json_values import json_list, json_number, json_object
from labreplay.suites.campaign.metrics import branch_metrics
from labreplay.suites.campaign.views import spec_body


def _health(summary: Mapping[str, JsonValue]) -> RunHealth:
    """The health counts the run recorded (without a harness stop: that is a claim)."""
    failures = summary.get("policy_failures") or {}
    return RunHealth(
        policy_calls=int(json_number(summary.get("policy_calls") or 0)),
        policy_failures=Counter(
            {str(k): int(json_number(v)) for k, v in failures.items()}
            if isinstance(failures, dict)
            else {}
        ),
        checkpoints=int(json_number(summary.get("checkpoints") or 0)),
        checkpoint_failures=int(json_number(summary.get("checkpoint_failures") or 0)),
    )


def _needed_controls(run: RunInfo, store: Store | None) -> list[str]:
    """The controls a board pools beside an adaptive branch: those recorded as asked for
    when it was opened (runs from before that was recorded: none), and every replicate
    `random-k` below the highest one stored."""
    if run.branch != "adaptive" or store is None:
        return []
    asked = run.provenance.get("controls")
    children = [
        r.branch for r in store.runs(spec_hash=run.spec_hash) if r.parent_run_id == run.run_id
    ]
    highest = max((random_replicate(b) or 0 for b in children), default=0)
    gaps = ["random", *(f"random-{k}" for k in range(2, highest + 1))] if highest else []
    recorded = [str(c) for c in asked] if isinstance(asked, list) else []
    return sorted(set(recorded) | set(gaps))


def rederive_branch(
    spec: EnvironmentSpec,
    events: Sequence[Mapping[str, object]],
    run: RunInfo,
    store: Store | None,
) -> Rederived:
    metrics = branch_metrics(events, spec_body(spec.body))
    end = next((json_object(e["payload"]) for e in events if e["kind"] == "end"), {})
    summary: Mapping[str, Any] = run.summary or {}
    calls = store.llm_calls(run.run_id) if store is not None else []
    verdict = run_verdict(_health(summary), calls)
    # The rule failed it: derived. The rule passes it but a cause is recorded: a harness stop
    # (cap, agent unavailable) the events cannot confirm or refute.
    status: str | None = verdict.status
    if verdict.status == "complete" and summary.get("cause"):
        status = None
    return {
        "controls": _needed_controls(run, store),
        "details": {
            "curve": metrics["curve"],
            "movements": metrics["movements"],
            "closed": list(json_list(end.get("closed", []))),
        },
        "status": status,
        "summary": {
            "invalid_actions": int(
                json_number(end.get("invalid_actions", metrics["invalid_actions"]))
            ),
            "checkpoint_fallbacks": int(metrics.get("checkpoint_fallbacks") or 0),
        },
    }


__all__ = ["rederive_branch"]
