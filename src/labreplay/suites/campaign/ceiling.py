"""What the context-trained reference model can achieve: its t = 0 score, the acceleration
target derived from it, and the evidence ceilings of an assignment (METRICS.md).

The context-trained model is the precursor-affinity model fit on the assignment's visible
context (rows when the spec shows rows, else the per-precursor summary), exactly as the `bayes`
reference and the "context-trained model" reference row build it. Updating it with the *true*
recorded outcome of an experiment adds that outcome to its precursor counts with a weight; the
ceiling is the best held-out gain over the declared weights `UPDATE_WEIGHTS` (an outcome counted
as 1, 3 or 10 context experiments), so no single weighting choice caps what is achievable.

- Ceiling (a): the true outcomes of the experiments the system closed.
- Ceiling (b): the true outcomes of the best T candidates, chosen greedily on held-out gain.
Both are held-out gains (panel loss at t = 0 minus after the update), in nats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from labreplay.suites.campaign.card_text import table_of
from labreplay.suites.campaign.learner import ContextModel, reference_model
from labreplay.suites.campaign.metrics import panel_loss
from labreplay.suites.campaign.model import label_of, to_forecast
from labreplay.suites.campaign.views import SpecBody


class Ceiling(TypedDict):
    """The greedy best set: its held-out gain, its experiments and the update weight."""

    gain: float
    experiments: list[str]
    weight: float | None


UPDATE_WEIGHTS: tuple[float, ...] = (1.0, 3.0, 10.0)


def context_model(body: SpecBody) -> ContextModel:
    context = body["context_rows"] or body["context_summary"]
    return reference_model(body["categories"], context, table_of(body["record"]))


READ_NAMED = 12  # descriptors named in a board's line; the rest are counted


def context_reading(body: SpecBody) -> str | None:
    """What the context-trained model of a card's spec read, from the spec's declaration
    (`record.table`: its learner and descriptors), as `context_model` dispatches; None for a
    built-in record (its model is the affinity model)."""
    declared = table_of(body["record"])
    if declared is None:
        return None
    if not body["context_rows"]:
        return "per-group outcome counts of the context summary (context detail: summary)"
    names = declared["descriptors"]
    more = f" and {len(names) - READ_NAMED} more" if len(names) > READ_NAMED else ""
    return f"{declared['learner']} (descriptors read: {', '.join(names[:READ_NAMED])}{more})"


def model_panel_loss(model: ContextModel, body: SpecBody) -> float:
    forecasts = {
        q["experiment_id"]: to_forecast(model.predict(q["descriptors"])) for q in body["queries"]
    }
    return panel_loss(forecasts, body["evaluator"], float(body["eps"]))[0]


def context_score(body: SpecBody) -> float:
    """The context-trained model's panel score (-loss) at t = 0."""
    return -model_panel_loss(context_model(body), body)


def _learned(body: SpecBody, eid: str) -> tuple[dict[str, object], dict[str, float]] | None:
    """A candidate's descriptors and true outcome; None when unknown (it teaches nothing)."""
    label = label_of(body["evaluator"][eid]["outcome"])
    if label is None:
        return None
    desc = next(c["descriptors"] for c in body["candidates"] if c["experiment_id"] == eid)
    return desc, {label: 1.0}


def _learn(model: ContextModel, body: SpecBody, eid: str, weight: float) -> None:
    if (learned := _learned(body, eid)) is not None:
        model.learn(*learned, weight)


def gain_with_outcomes(body: SpecBody, ids: Sequence[str], weight: float) -> float:
    base = context_model(body)
    before = model_panel_loss(base, body)
    for eid in ids:
        _learn(base, body, eid, weight)
    return before - model_panel_loss(base, body)


def ceiling_selected(body: SpecBody, ids: Sequence[str]) -> float:
    """Ceiling (a): best gain over the declared weights from the system's closed experiments."""
    return max(gain_with_outcomes(body, ids, w) for w in UPDATE_WEIGHTS)


def _query_losses(model: ContextModel, body: SpecBody, idx: Sequence[int]) -> list[float]:
    queries, evaluator, eps = body["queries"], body["evaluator"], float(body["eps"])
    out = []
    for i in idx:
        q = queries[i]
        forecast = {q["experiment_id"]: to_forecast(model.predict(q["descriptors"]))}
        out.append(panel_loss(forecast, evaluator, eps)[0])
    return out


def ceiling_best(body: SpecBody) -> Ceiling:
    """Ceiling (b): greedy choice of T candidates maximising the held-out gain.

    Speed-up, declared: a candidate is scored on the queries sharing one of its precursors (the
    others move only through the overall base rate; with a temperature term, on all queries);
    the chosen set's gain is then computed exactly on the whole panel. A greedy choice is a
    lower bound on the best T, never above what is achievable."""
    horizon = int(body["budgets"]["experiments"])
    pool = [c["experiment_id"] for c in body["candidates"]]
    desc = {c["experiment_id"]: c["descriptors"] for c in body["candidates"]}
    queries = body["queries"]
    scorable = [
        i
        for i, q in enumerate(queries)
        if label_of(body["evaluator"][q["experiment_id"]]["outcome"]) is not None
    ]
    best: Ceiling = {"gain": float("-inf"), "experiments": [], "weight": None}
    if not scorable:
        return {"gain": float("nan"), "experiments": [], "weight": None}
    for weight in UPDATE_WEIGHTS:
        model = context_model(body)
        touched: dict[str, list[int]] = {}
        for eid in pool:
            touched[eid] = [
                i for i in scorable if model.touches(desc[eid], queries[i]["descriptors"])
            ]
        losses = dict(zip(scorable, _query_losses(model, body, scorable), strict=True))
        start = sum(losses.values())
        chosen: list[str] = []
        for _ in range(min(horizon, len(pool))):
            total = sum(losses.values())
            options = []
            for eid in pool:
                if eid in chosen:
                    continue
                idx = touched[eid]
                learned = _learned(body, eid)
                if learned is None:
                    new = _query_losses(model, body, idx)
                else:
                    with model.trying(*learned, weight):  # try it, then take it back out
                        new = _query_losses(model, body, idx)
                options.append((total - sum(losses[i] for i in idx) + sum(new), eid))
            _, pick = min(options)
            chosen.append(pick)
            _learn(model, body, pick, weight)
            # the chosen set is scored exactly: every query moves a little with the base rate
            losses = dict(zip(scorable, _query_losses(model, body, scorable), strict=True))
        gain = (start - sum(losses.values())) / len(scorable)
        if gain > best["gain"]:
            best = {"gain": gain, "experiments": chosen, "weight": weight}
    return best
