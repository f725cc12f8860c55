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

from labreplay.suites.campaign.metrics import panel_loss
from labreplay.suites.campaign.model import AffinityModel, label_of, to_forecast
from labreplay.suites.campaign.protocol import precursors_of
from labreplay.suites.campaign.views import SpecBody


class Ceiling(TypedDict):
    """The greedy best set: its held-out gain, its experiments and the update weight."""

    gain: float
    experiments: list[str]
    weight: float | None


UPDATE_WEIGHTS: tuple[float, ...] = (1.0, 3.0, 10.0)
TAU_DELTA_DEFAULT = 0.05


def context_model(body: SpecBody) -> AffinityModel:
    if body["context_rows"]:
        return AffinityModel(categories=body["categories"]).fit_context(body["context_rows"])
    return AffinityModel(beta=0.0, categories=body["categories"]).fit_summary(
        body["context_summary"]
    )


def model_panel_loss(model: AffinityModel, body: SpecBody) -> float:
    forecasts = {
        q["experiment_id"]: to_forecast(model.predict(q["descriptors"])) for q in body["queries"]
    }
    return panel_loss(forecasts, body["evaluator"], float(body["eps"]))[0]


def context_score(body: SpecBody) -> float:
    """The context-trained model's panel score (-loss) at t = 0."""
    return -model_panel_loss(context_model(body), body)


def _learn(model: AffinityModel, body: SpecBody, eid: str, weight: float) -> None:
    label = label_of(body["evaluator"][eid]["outcome"])
    if label is None:
        return  # an unknown outcome teaches nothing
    desc = next(c["descriptors"] for c in body["candidates"] if c["experiment_id"] == eid)
    model.add(precursors_of(desc), desc.get("temperature_c"), {label: 1.0}, weight=weight)


def gain_with_outcomes(body: SpecBody, ids: Sequence[str], weight: float) -> float:
    base = context_model(body)
    before = model_panel_loss(base, body)
    for eid in ids:
        _learn(base, body, eid, weight)
    return before - model_panel_loss(base, body)


def ceiling_selected(body: SpecBody, ids: Sequence[str]) -> float:
    """Ceiling (a): best gain over the declared weights from the system's closed experiments."""
    return max(gain_with_outcomes(body, ids, w) for w in UPDATE_WEIGHTS)


def _query_losses(model: AffinityModel, body: SpecBody, idx: Sequence[int]) -> list[float]:
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
            shared = set(precursors_of(desc[eid]))
            touched[eid] = [
                i
                for i in scorable
                if model.beta or shared.intersection(precursors_of(queries[i]["descriptors"]))
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
                bands = set(model.band_counts)
                _learn(model, body, eid, weight)  # try it, then take it back out exactly
                new = _query_losses(model, body, idx)
                _learn(model, body, eid, -weight)
                for band in set(model.band_counts) - bands:
                    del model.band_counts[band]
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
