"""A live run's scores as its outcomes arrive, from its events and spec alone (pure; the board
reads them from the store, finished runs and running ones alike).

- Prequential log loss: each experiment's outcome, as the lab posted it, scored against the
  last forecast the agent submitted for it before the outcome entered the chain (the prior
  forecast, unless the outcome came after revisions), with the suite's joint loss; per outcome
  in arrival order and as a running mean. A deviation without outcome (a failed experiment,
  a silent lab) is counted, not scored.
- The held-out panel: every checkpoint's forecasts scored against the panel outcomes the lab
  has posted (`live.panel`; the agent never sees them, so a checkpoint after an outcome's
  arrival is still a forecast), the others "pending". A lab that posts none leaves the whole
  panel pending: the run's stored scores (from the spec's recorded panel) are then the only
  panel figures.
- Adaptive AUC and held-out gain: the suite's own functions over that curve; `final` once the
  campaign has closed and no panel outcome is pending (they then equal the stored scores).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypedDict

from labreplay.sdk.scoring import adaptive_auc, carry_forward, held_out_gain
from labreplay.suites.campaign.events import CategoryForecast, campaign_events
from labreplay.suites.campaign.json_values import json_number, json_object
from labreplay.suites.campaign.live.panel import panel_outcomes
from labreplay.suites.campaign.live.record import LAB_KIND
from labreplay.suites.campaign.metrics import panel_loss
from labreplay.suites.campaign.views import EvaluatorRecord, SpecBody


class OutcomeScore(TypedDict):
    """One experiment's outcome as it arrived: the loss of the forecast standing before it."""

    experiment_id: str
    loss: float | None  # None: no forecast before it, or an outcome without a label
    running: float | None  # the prequential log loss over the outcomes scored so far


class LiveScores(TypedDict):
    outcomes: list[OutcomeScore]
    prequential_log_loss: float | None
    deviations: int  # experiments whose result was a deviation (nothing to score)
    panel_size: int
    panel_arrived: int
    panel_pending: list[str]  # panel experiments the lab has not posted an outcome for
    panel_losses: list[float | None]  # per checkpoint, over the arrived outcomes
    closed: bool  # the campaign has ended (its `end` event is in)
    final: bool  # closed, no panel outcome pending: the replay's figures
    curve: list[float] | None  # s_t = -panel loss, carried to the horizon (None: none arrived)
    adaptive_auc: float | None  # over the arrived panel outcomes
    held_out_gain: float | None


def live_scores(events: Sequence[Mapping[str, object]], body: SpecBody) -> LiveScores:
    eps = float(body["eps"])
    standing: dict[str, CategoryForecast] = {}  # experiment -> its last forecast so far
    outcomes: list[OutcomeScore] = []
    scored: list[float] = []
    deviations = 0
    for event in events:
        payload = json_object(event["payload"])
        if event["kind"] == "action" and payload["accepted"]:
            action = json_object(payload["action"])
            if action["type"] == "submit_forecast":
                standing[str(action["experiment_id"])] = {
                    "p_valid": json_number(action["p_valid"]),
                    "categories": {
                        str(k): json_number(v) for k, v in json_object(action["categories"]).items()
                    },
                }
        elif event["kind"] == LAB_KIND and payload["accepted"]:
            post = json_object(payload["post"])
            eid = str(post.get("experiment_id"))  # a record post or a note may name none
            if post["post"] == "deviation":
                deviations += 1
            elif post["post"] == "outcome":
                loss: float | None = None
                if eid in standing:
                    value, unlabelled = panel_loss(
                        {eid: standing[eid]},
                        {eid: {"evidence": {}, "outcome": dict(json_object(post["outcome"]))}},
                        eps,
                    )
                    loss = None if unlabelled else value
                if loss is not None:
                    scored.append(loss)
                running = sum(scored) / len(scored) if scored else None
                outcomes.append({"experiment_id": eid, "loss": loss, "running": running})
    arrived: dict[str, EvaluatorRecord] = {
        q: {"evidence": {}, "outcome": dict(o)} for q, o in panel_outcomes(events).items()
    }
    queries = [str(q["experiment_id"]) for q in body["queries"]]
    typed = campaign_events(events)
    checkpoints = [e["payload"]["forecasts"] for e in typed if e["kind"] == "checkpoint"]
    losses: list[float | None] = []
    for forecasts in checkpoints:
        value = panel_loss({q: f for q, f in forecasts.items() if q in arrived}, arrived, eps)[0]
        losses.append(value if math.isfinite(value) else None)
    closed = any(e["kind"] == "end" for e in typed)
    curve: list[float] | None = None
    auc = gain = None
    known = [x for x in losses if x is not None]
    if known and len(known) == len(losses):
        carried = carry_forward(known, int(body["budgets"]["experiments"]))
        curve = [-x for x in carried]
        auc, gain = adaptive_auc(curve), held_out_gain(carried)
    pending = [q for q in queries if q not in arrived]
    return {
        "outcomes": outcomes,
        "prequential_log_loss": outcomes[-1]["running"] if outcomes else None,
        "deviations": deviations,
        "panel_size": len(queries),
        "panel_arrived": len(queries) - len(pending),
        "panel_pending": pending,
        "panel_losses": losses,
        "closed": closed,
        "final": closed and not pending,
        "curve": curve,
        "adaptive_auc": auc,
        "held_out_gain": gain,
    }


__all__ = ["LiveScores", "OutcomeScore", "live_scores"]
