"""A campaign assignment's branches and what is reported of them: the branch names (adaptive,
the schedule-matched random replicates, the call-matched no-evidence control), a played
branch's result, and the assignment's metrics (lifts, acceleration; METRICS.md) read from its
branches. Pure: nothing here plays or stores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from labreplay.sdk.agents import call_failures, usage_summary
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.scoring import acceleration_factor, first_passage, sustained_passage
from labreplay.suites.campaign.events import CategoryForecast
from labreplay.suites.campaign.json_values import json_number
from labreplay.suites.campaign.metrics import BranchMetrics
from labreplay.suites.campaign.views import AssignmentRef, SpecBody, spec_body


class PreCampaignForecast(TypedDict, total=False):
    """The forecast a branch's first checkpoint takes instead of asking its agent: the
    adaptive branch's, `recorded` verbatim (controls), or none with the `error` that
    prevented asking (every entry then takes the declared fallback)."""

    forecasts: list[dict[str, object]]
    recorded: dict[str, CategoryForecast]
    error: str


class AssignmentMetrics(TypedDict):
    """An assignment's scores: per branch its run and counts, the adaptive branch's AUC and
    gain, and the lifts and acceleration where they are estimable (METRICS.md)."""

    branches: dict[str, dict[str, object]]
    adaptive_auc: float
    held_out_gain: float
    random_replicates: NotRequired[int]
    selection_lift: NotRequired[float]
    acceleration_first: NotRequired[float | None]
    acceleration_sustained: NotRequired[float | None]
    target_met_at_t0: NotRequired[bool]
    evidence_lift: NotRequired[float]


class AssignmentSummary(AssignmentMetrics):
    """What a run returns per assignment (`runner.run_assignment`, `runner.run_assignments`)."""

    spec_id: str
    spec_hash: str
    assignment: AssignmentRef
    partition_seed: int
    status: str  # "complete" or "failed"
    failed_call_share: float | None
    cause: str | None
    cause_kind: str | None
    usage: dict[str, dict[str, object]]  # branch -> its model calls' accounting


BRANCHES = ("adaptive", "random", "no-evidence")


def random_branches(replicates: int) -> tuple[str, ...]:
    """Branch names of K schedule-matched random replicates: `random` (replicate 1, the branch
    older stores hold), then `random-2` ... `random-K`."""
    return ("random", *(f"random-{k}" for k in range(2, replicates + 1)))


def default_replicates(agent: str) -> int:
    """3 schedule-matched random replicates for Python agents; 1 for LLM agents (`openai:`),
    where each replicate is a full campaign of model calls."""
    from labreplay.sdk.agents import is_llm_agent

    return 1 if is_llm_agent(agent) else 3


def with_replicates(controls: Sequence[str], replicates: int) -> tuple[str, ...]:
    """The control list with `random` expanded into its K replicate branches."""
    out: list[str] = []
    for c in controls:
        out.extend(random_branches(replicates) if c == "random" else (c,))
    return tuple(out)


def random_replicate(branch: str) -> int | None:
    """1 for `random`, k for `random-k` (k >= 2), None for any other branch."""
    if branch == "random":
        return 1
    head, _, k = branch.partition("-")
    return int(k) if head == "random" and k.isdigit() and int(k) >= 2 else None


@dataclass
class BranchResult:
    """One played branch: its run, events, metrics and chain head; its model calls, and its
    status by the failed-run rule with the named cause (as the runner stored it)."""

    run_id: str
    branch: str
    events: list[dict[str, Any]]
    metrics: BranchMetrics
    head_hash: str
    calls: Sequence[Mapping[str, object]] = field(default_factory=list)
    status: str = "complete"
    cause: str | None = None
    cause_kind: str | None = None


def assignment_summary(
    spec: EnvironmentSpec, results: Mapping[str, BranchResult]
) -> AssignmentSummary:
    health = call_failures(results["adaptive"].calls)
    failed_branch = next((r for r in results.values() if r.status == "failed"), None)
    failed = failed_branch is not None
    return {
        "spec_id": spec.spec_id,
        "spec_hash": spec.spec_hash,
        "assignment": spec.body["assignment"],
        "partition_seed": spec.body["seed"],
        "status": "failed" if failed else "complete",
        "failed_call_share": health["failed_call_share"],
        "cause": failed_branch.cause if failed_branch is not None else None,
        "cause_kind": failed_branch.cause_kind if failed_branch is not None else None,
        "usage": {b: usage_summary(r.calls) for b, r in results.items() if r.calls},
        **assignment_metrics(spec, results),
    }


def assignment_metrics(
    spec: EnvironmentSpec, results: Mapping[str, BranchResult]
) -> AssignmentMetrics:
    tau = target_tau(spec_body(spec.body))
    adaptive = results["adaptive"].metrics
    out: AssignmentMetrics = {
        "branches": {
            b: {
                "run_id": r.run_id,
                "head_hash": r.head_hash,
                "adaptive_auc": r.metrics["adaptive_auc"],
                "held_out_gain": r.metrics["held_out_gain"],
                # closures, early stops, unused budget and declared departures, every branch
                **{
                    k: r.metrics.get(k)
                    for k in (
                        "experiments_closed",
                        "stopped_early",
                        "unused_experiments",
                        "unused_evidence",
                        "control_departures",
                        "departure_experiments",
                        "checkpoint_fallbacks",
                        "invalid_actions",
                        "policy_calls",
                        "forecast_calls",
                    )
                },
            }
            for b, r in results.items()
        },
        "adaptive_auc": adaptive["adaptive_auc"],
        "held_out_gain": adaptive["held_out_gain"],
    }
    replicates = [r.metrics for b, r in results.items() if random_replicate(b) is not None]
    if replicates:
        # K replicates are averaged before the lift is taken (METRICS.md).
        random_auc = sum(m["adaptive_auc"] for m in replicates) / len(replicates)
        out["random_replicates"] = len(replicates)
        out["selection_lift"] = adaptive["adaptive_auc"] - random_auc
    curve = adaptive["curve"]
    if replicates and tau is not None and curve and curve[0] < tau:
        # Estimable only where neither branch met tau at t = 0 (they share that forecast).
        first = [
            acceleration_factor(first_passage(m["curve"], tau), first_passage(curve, tau))
            for m in replicates
        ]
        sust = [
            acceleration_factor(sustained_passage(m["curve"], tau), sustained_passage(curve, tau))
            for m in replicates
        ]
        out["acceleration_first"] = _mean_or_none(first)
        out["acceleration_sustained"] = _mean_or_none(sust)
    elif tau is not None and curve:
        out["target_met_at_t0"] = True
    if "no-evidence" in results:
        out["evidence_lift"] = (
            adaptive["adaptive_auc"] - results["no-evidence"].metrics["adaptive_auc"]
        )
    return out


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def target_tau(body: SpecBody) -> float | None:
    """The declared acceleration target of a spec (older specs held a bare number)."""
    target = body["acceleration_target"]
    value = target.get("tau") if isinstance(target, Mapping) else target
    return None if value is None else json_number(value, "acceleration_target")


__all__ = [
    "BRANCHES",
    "AssignmentMetrics",
    "AssignmentSummary",
    "BranchResult",
    "PreCampaignForecast",
    "assignment_metrics",
    "assignment_summary",
    "default_replicates",
    "random_branches",
    "random_replicate",
    "target_tau",
    "with_replicates",
]
