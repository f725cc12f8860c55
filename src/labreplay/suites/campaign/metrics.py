"""Campaign metrics from a trajectory and the evaluator record (METRICS.md, campaign suite).

Pure functions: events + spec body in, numbers out. Experiments whose recorded outcome is Missing
are excluded from every loss and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NotRequired, TypedDict

from labreplay.sdk.scoring import (
    CATEGORIES,
    adaptive_auc,
    binary_log_loss,
    carry_forward,
    held_out_gain,
    joint_log_loss,
)
from labreplay.suites.campaign.actions import CLAIMS
from labreplay.suites.campaign.bayes_rules import is_selected
from labreplay.suites.campaign.events import CategoryForecast, campaign_events
from labreplay.suites.campaign.json_values import json_list, json_number, json_object
from labreplay.suites.campaign.live.panel import split_panel
from labreplay.suites.campaign.live.record import lab_evaluator
from labreplay.suites.campaign.model import label_of
from labreplay.suites.campaign.protocol import REVIEW_KIND
from labreplay.suites.campaign.views import EvaluatorRecord, SpecBody


class _Forecast(TypedDict):
    p_valid: float
    categories: dict[str, float]
    after: int  # reveals seen when it was submitted


class _PreReview(TypedDict):
    expect_change: float
    expected_tier: object  # as the action gave it (compared with the recorded tier)
    forecasts_before: int


class ExperimentTrace(TypedDict):
    """One selected experiment as the trajectory and the evaluator record tell it."""

    forecasts: list[_Forecast]
    revealed: list[Mapping[str, object]]
    review: Mapping[str, object] | None
    claims: Mapping[str, object] | None
    reveals: int
    pre_review: NotRequired[_PreReview]


class BranchMetrics(TypedDict):
    """A branch's scores and counts (METRICS.md, campaign suite)."""

    curve: list[float]
    panel_losses: list[float]
    panel_losses_raw: list[float | None]
    adaptive_auc: float
    held_out_gain: float
    held_out_gain_raw: float | None
    panel_excluded_missing: int
    checkpoints: int
    checkpoint_fallbacks: int
    local_gain_mean: float | None
    local_gain_count: int
    local_gain_missing: int
    local_improved: int
    local_worsened: int
    claim_log_loss: float | None
    overclaim_rate: float | None
    movements: dict[str, int]
    reviews: int
    review_change_log_loss: float | None
    review_tier_accuracy: float | None
    experiments_closed: int
    stopped_early: bool
    unused_experiments: int
    unused_evidence: int
    actions: int
    invalid_actions: int
    policy_calls: int
    forecast_calls: int
    local_forecasts: int
    evidence_actions: int
    control_departures: int
    departure_experiments: int


def _distribution(value: object) -> dict[str, float]:
    """An accepted action's category distribution (the env checked its numbers)."""
    return {str(k): json_number(v) for k, v in json_object(value, "categories").items()}


def _outcome(evaluator: Mapping[str, EvaluatorRecord], eid: str) -> tuple[bool, str | None] | None:
    label = label_of(json_object(json_object(evaluator[eid])["outcome"], "outcome"))
    if label is None:
        return None
    return (False, None) if label == "physical_failure" else (True, label)


def _loss(forecast: CategoryForecast, outcome: tuple[bool, str | None], eps: float | None) -> float:
    q = forecast["categories"]
    # The spec's categories: the four built-in ones in their declared order (the loss sums
    # them in that order, so stored scores recompute to the same bits), else the forecast's.
    categories = CATEGORIES if set(q) == set(CATEGORIES) else tuple(q)
    return joint_log_loss(forecast["p_valid"], q, outcome[0], outcome[1], eps, categories)


def panel_loss(
    forecasts: Mapping[str, CategoryForecast],
    evaluator: Mapping[str, EvaluatorRecord],
    eps: float | None,
) -> tuple[float, int]:
    """Mean joint loss over the panel; returns (loss, number of experiments excluded)."""
    losses, excluded = [], 0
    for eid, forecast in forecasts.items():
        outcome = _outcome(evaluator, eid)
        if outcome is None:
            excluded += 1
            continue
        losses.append(_loss(forecast, outcome, eps))
    return (sum(losses) / len(losses) if losses else math.nan), excluded


def claim_targets(
    record: ExperimentTrace, declared: Sequence[Mapping[str, object]] | None = None
) -> dict[str, int]:
    """1 iff the support rule holds for the evidence the agent inspected. `declared`: a
    record card's claims, each supported when every evidence kind of its `supported_by` was
    inspected for the experiment; None: the four SDL-1 claims of the solid-state records
    (a selected refinement and an accepted expert review of tier 1-2; tier 1 for phase
    quantification)."""
    revealed = [json_object(r, "revealed item") for r in json_list(record["revealed"])]
    if declared is not None:
        seen = {str(r.get("kind")) for r in revealed}
        if record.get("review"):
            seen.add("expert_review")
        return {
            str(c["name"]): int(all(str(k) in seen for k in json_list(c["supported_by"])))
            for c in declared
        }
    selected = any(r.get("kind") == "refinement" and is_selected(r) for r in revealed)
    review = record.get("review") or {}
    content = review.get("content") if isinstance(review, Mapping) else None
    content = content if isinstance(content, Mapping) else {}
    accepted = content.get("accepted") is True
    tier = content.get("final_quality_tier")
    ok = selected and accepted and tier in (1, 2)
    quant = selected and accepted and tier == 1
    return {c: int(quant if c == "phase_quantification" else ok) for c in CLAIMS}


def _sign(x: float, tol: float = 1e-12) -> int:
    return 0 if abs(x) <= tol else (1 if x > 0 else -1)


def _top(forecast: CategoryForecast) -> str:
    if float(forecast["p_valid"]) < 0.5:
        return "physical_failure"
    cats = forecast["categories"]
    return str(max(sorted(cats), key=lambda k: float(cats[k])))


def _review_forecasts(
    experiments: Mapping[str, ExperimentTrace], eps: float
) -> tuple[list[float], list[int]]:
    """Pre-review forecasts against what happened: did the review change the agent's
    conclusion (its most likely outcome before vs after the review), and which tier came back."""
    losses: list[float] = []
    tiers: list[int] = []
    for record in experiments.values():
        pre = record.get("pre_review")
        if not pre:
            continue
        forecasts = record["forecasts"]
        before = forecasts[pre["forecasts_before"] - 1] if pre["forecasts_before"] else None
        after = (
            forecasts[pre["forecasts_before"]] if len(forecasts) > pre["forecasts_before"] else None
        )
        if before is not None and after is not None:
            changed = int(_top(before) != _top(after))
            losses.append(binary_log_loss(float(pre["expect_change"]), changed, eps))
        review = record.get("review") or {}
        content = review.get("content") if isinstance(review, Mapping) else None
        if isinstance(content, Mapping) and content.get("final_quality_tier") is not None:
            tiers.append(int(content["final_quality_tier"] == pre["expected_tier"]))
    return losses, tiers


def branch_metrics(events: Sequence[Mapping[str, object]], body: SpecBody) -> BranchMetrics:
    # a live run's experiments are scored from what its lab posted (the replay's: unchanged);
    # its panel, like a replay's, from the spec (`live.scores` rescores it from the lab's posts)
    kinds = (*body["prices"], REVIEW_KIND)
    evaluator = lab_evaluator(split_panel(events)[0], body["evaluator"], kinds)
    eps = float(body["eps"])
    horizon = int(body["budgets"]["experiments"])
    typed = campaign_events(events)
    checkpoints = [e["payload"] for e in typed if e["kind"] == "checkpoint"]
    actions = [e["payload"] for e in typed if e["kind"] == "action"]
    panel = [panel_loss(c["forecasts"], evaluator, eps) for c in checkpoints]
    raw = [panel_loss(c["forecasts"], evaluator, None)[0] for c in checkpoints]
    losses = carry_forward([p[0] for p in panel], horizon)
    raw_losses = carry_forward(raw, horizon)
    scores = [-x for x in losses]
    # Local forecasts, claims and movements, from the agent's own history.
    experiments: dict[str, ExperimentTrace] = {}
    open_id: str | None = None
    for a in actions:
        if not a["accepted"]:
            continue
        act = a["action"]
        if act["type"] == "select_experiment":
            open_id = str(act["experiment_id"])
            experiments[open_id] = {
                "forecasts": [],
                "revealed": [],
                "review": None,
                "claims": None,
                "reveals": 0,
            }
        elif act["type"] == "submit_forecast" and open_id:
            experiments[open_id]["forecasts"].append(
                {
                    "p_valid": json_number(act["p_valid"]),
                    "categories": _distribution(act["categories"]),
                    "after": experiments[open_id]["reveals"],
                }
            )
        elif act["type"] in ("inspect_evidence", "request_review") and open_id:
            if act["type"] == "request_review":
                experiments[open_id]["pre_review"] = {
                    "expect_change": json_number(act["expect_change"]),
                    "expected_tier": act["expected_tier"],
                    "forecasts_before": len(experiments[open_id]["forecasts"]),
                }
            experiments[open_id]["reveals"] += 1
        elif act["type"] == "close_experiment" and open_id:
            experiments[open_id]["claims"] = json_object(act["claims"], "claims")
            open_id = None
    # Revealed contents come from the evaluator record by item id (the trajectory keeps ids).
    for a in actions:
        item_id = a.get("revealed_item")
        if not a["accepted"] or not item_id:
            continue
        eid = str(a["action"]["experiment_id"])
        payload: Mapping[str, object] = a  # older trajectories name the kind revealed
        kind = str(payload.get("revealed_kind") or item_id.split(":", 1)[0])
        items = evaluator[eid]["evidence"].get(kind)
        item = (
            next((i for i in items if i.get("item_id") == item_id), None)
            if isinstance(items, list)
            else None
        )
        entry = item or {"item_id": item_id, "kind": kind}
        if "kind" not in entry:  # a declared claim's support rule reads the kind inspected
            entry = {**entry, "kind": kind}
        if kind == "expert_review":
            experiments[eid]["review"] = entry
        else:
            experiments[eid]["revealed"].append(entry)
    closed = [
        str(a["action"]["experiment_id"])
        for a in actions
        if a["accepted"] and a["action"]["type"] == "close_experiment"
    ]
    review_losses, tier_hits = _review_forecasts(experiments, eps)
    local_gains: list[float] = []
    local_missing = 0
    claim_losses: list[float] = []
    overclaims = eligible_claims = 0
    movements = {"same": 0, "opposite": 0, "zero": 0}
    for t, eid in enumerate(closed, start=1):
        record = experiments[eid]
        outcome = _outcome(evaluator, eid)
        forecasts = record["forecasts"]
        local_change = 0.0
        if outcome is not None and forecasts:
            prior = _loss(forecasts[0], outcome, eps)
            final = _loss(forecasts[-1], outcome, eps)
            if record["reveals"] == 0 and all(f["after"] == 0 for f in forecasts):
                local_missing += 1
            else:
                local_gains.append(prior - final)
            local_change = prior - final
        if record["claims"]:
            declared = body.get("claims")
            targets = claim_targets(record, declared if isinstance(declared, list) else None)
            for c in targets:
                p = json_number(record["claims"][c])
                claim_losses.append(binary_log_loss(p, targets[c], eps))
                eligible_claims += 1
                overclaims += int(p > 0.5 and targets[c] == 0)
        if t < len(losses):
            held_change = losses[t - 1] - losses[t]
            local_sign, held_sign = _sign(local_change), _sign(held_change)
            key = (
                "zero"
                if local_sign == 0 or held_sign == 0
                else ("same" if local_sign == held_sign else "opposite")
            )
            movements[key] += 1
    accepted = [a for a in actions if a["accepted"]]
    stopped = any(a["action"]["type"] == "stop" for a in accepted)
    ends = [e["payload"] for e in typed if e["kind"] == "end"]
    budgets_left = ends[0]["budgets_left"] if ends else {}
    return {
        "curve": scores,
        "panel_losses": losses,
        "panel_losses_raw": [x if math.isfinite(x) else None for x in raw_losses],
        "adaptive_auc": adaptive_auc(scores),
        "held_out_gain": held_out_gain(losses),
        "held_out_gain_raw": (
            held_out_gain(raw_losses) if all(math.isfinite(x) for x in raw_losses) else None
        ),
        "panel_excluded_missing": panel[0][1] if panel else 0,
        "checkpoints": len(checkpoints),
        "checkpoint_fallbacks": sum(int(c["fallbacks"]) for c in checkpoints),
        "local_gain_mean": (sum(local_gains) / len(local_gains)) if local_gains else None,
        "local_gain_count": len(local_gains),
        "local_gain_missing": local_missing,
        "local_improved": sum(1 for g in local_gains if g > 1e-12),
        "local_worsened": sum(1 for g in local_gains if g < -1e-12),
        "claim_log_loss": (sum(claim_losses) / len(claim_losses)) if claim_losses else None,
        "overclaim_rate": (overclaims / eligible_claims) if eligible_claims else None,
        "movements": movements,
        "reviews": len(review_losses),
        "review_change_log_loss": (sum(review_losses) / len(review_losses))
        if review_losses
        else None,
        "review_tier_accuracy": (sum(tier_hits) / len(tier_hits)) if tier_hits else None,
        "experiments_closed": len(closed),
        "stopped_early": stopped and len(closed) < horizon,
        "unused_experiments": int(budgets_left.get("experiments", 0)),
        "unused_evidence": int(budgets_left.get("evidence", 0)),
        "actions": len(actions),
        "invalid_actions": sum(1 for a in actions if not a["accepted"]),
        # SDL-1 matches the no-evidence control on policy-action calls: every action the
        # branch submitted (accepted or not); `forecast_calls` are the evaluator's panel
        # checkpoints (t = 0..closures), `local_forecasts` the submitted local forecasts.
        "policy_calls": len(actions),
        "forecast_calls": len(checkpoints),
        "local_forecasts": sum(1 for a in actions if a["action"].get("type") == "submit_forecast"),
        "evidence_actions": sum(
            1
            for a in actions
            if a["accepted"] and a["action"].get("type") in ("inspect_evidence", "request_review")
        ),
        "control_departures": sum(1 for e in typed if e["kind"] == "control"),
        # Departures counted in experiments (a slot with several departures counts once).
        "departure_experiments": len(
            {e["payload"]["departure"].get("slot") for e in typed if e["kind"] == "control"}
        ),
    }
