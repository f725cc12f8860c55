"""The reference forecaster: a precursor-affinity model trained on visible context, updated from
purchased evidence.

Classes are the four reaction categories plus physical failure. For an experiment with
precursors {a, b, ...} and temperature T, the predictive distribution is

    p(k) ∝ (alpha * base_k + sum_p n_{p,k}) / (alpha + sum_p n_p)  *  (r_{T,k})^beta

where n_{p,k} are (soft) class counts of experiments containing precursor p, base_k the overall
context rate and r_{T,k} the smoothed ratio of the class rate at T's temperature band to the
base rate. Counts start from the visible context and grow with every closed experiment, weighted
by the agent's posterior for it, so evidence about an evaluation precursor transfers to held-out
queries that share it. The evidence likelihoods are a declared, hand-written reading of a
refinement (is the target present, how much of it, are only precursors left) and of the
execution record and expert review; they are the agent's interpretation, not the evaluator's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from labreplay.sdk.scoring import CATEGORIES
from labreplay.suites.campaign.chem import close_compound, parse_formula, phase_formula
from labreplay.suites.campaign.events import CategoryForecast
from labreplay.suites.campaign.json_values import json_number, json_object
from labreplay.suites.campaign.protocol import precursors_of

CLASSES: tuple[str, ...] = (*CATEGORIES, "physical_failure")


def classes_of(categories: Sequence[str]) -> tuple[str, ...]:
    """The model's classes: the spec's categories and a physical failure."""
    return (*categories, "physical_failure")


_TEMP_BANDS = (300.0, 500.0, 700.0, 900.0)


def temp_band(temperature: object) -> str:
    if not isinstance(temperature, int | float) or isinstance(temperature, bool):
        return "unknown"
    for edge in _TEMP_BANDS:
        if temperature < edge:
            return f"<{int(edge)}"
    return f">={int(_TEMP_BANDS[-1])}"


def label_of(outcome: Mapping[str, object]) -> str | None:
    valid = outcome.get("valid")
    if valid is False:
        return "physical_failure"
    # A valid outcome's category is one of the spec's (the loaders and cards check it).
    if valid is True and isinstance(outcome.get("category"), str):
        return str(outcome["category"])
    return None


def to_forecast(dist: Mapping[str, float]) -> CategoryForecast:
    categories = [k for k in dist if k != "physical_failure"]
    p_fail = dist["physical_failure"]
    valid_mass = sum(dist[k] for k in categories)
    return {"p_valid": 1.0 - p_fail, "categories": {k: dist[k] / valid_mass for k in categories}}


def from_forecast(forecast: CategoryForecast) -> dict[str, float]:
    v = float(forecast["p_valid"])
    out = {k: v * float(p) for k, p in forecast["categories"].items()}
    out["physical_failure"] = 1.0 - v
    return out


def _normalise(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


class AffinityModel:
    def __init__(
        self,
        alpha: float = 4.0,
        beta: float = 1.0,
        floor: float = 0.01,
        categories: Sequence[str] = CATEGORIES,
    ) -> None:
        self.alpha, self.beta, self.floor = alpha, beta, floor
        self.classes = classes_of(categories)
        self.counts: dict[str, dict[str, float]] = {}
        self.base = {k: 1.0 for k in self.classes}
        self.band_counts: dict[str, dict[str, float]] = {}

    # ------------------------------------------------------------------ training
    def add(
        self,
        precursors: Iterable[str],
        temperature: object,
        dist: Mapping[str, float],
        weight: float = 1.0,
    ) -> None:
        for p in precursors:
            row = self.counts.setdefault(p, {k: 0.0 for k in self.classes})
            for k in self.classes:
                row[k] += weight * dist.get(k, 0.0)
        band = self.band_counts.setdefault(temp_band(temperature), {k: 0.5 for k in self.classes})
        for k in self.classes:
            band[k] += weight * dist.get(k, 0.0)
            self.base[k] += weight * dist.get(k, 0.0)

    def learn(
        self, descriptors: Mapping[str, object], dist: Mapping[str, float], weight: float
    ) -> None:
        self.add(precursors_of(descriptors), descriptors.get("temperature_c"), dist, weight)

    @contextmanager
    def trying(
        self, descriptors: Mapping[str, object], dist: Mapping[str, float], weight: float
    ) -> Iterator[None]:
        """Learn `dist` for the block, then take it back out (and any band it created)."""
        bands = set(self.band_counts)
        self.learn(descriptors, dist, weight)
        try:
            yield
        finally:
            self.learn(descriptors, dist, -weight)
            for band in set(self.band_counts) - bands:
                del self.band_counts[band]

    def touches(self, a: Mapping[str, object], b: Mapping[str, object]) -> bool:
        """Whether learning about `a` moves the prediction for `b`, beyond the base rate."""
        return bool(self.beta) or bool(set(precursors_of(a)).intersection(precursors_of(b)))

    def fit_context(self, rows: Sequence[Mapping[str, object]]) -> AffinityModel:
        """rows: {"descriptors": ..., "outcome": ...} of visible context experiments."""
        for row in rows:
            label = label_of(json_object(row["outcome"], "outcome"))
            if label is None:
                continue
            d = json_object(row["descriptors"], "descriptors")
            self.add(precursors_of(d), d.get("temperature_c"), {label: 1.0})
        return self

    def fit_summary(self, summary: Mapping[str, object]) -> AffinityModel:
        """Train from the compact per-precursor context summary (no temperatures in it)."""
        for precursor, counts in json_object(summary["per_precursor"]).items():
            row = self.counts.setdefault(precursor, {k: 0.0 for k in self.classes})
            for k in self.classes:
                row[k] += json_number(json_object(counts).get(k, 0))
        outcome_counts = json_object(summary["outcome_counts"])
        for k in self.classes:
            self.base[k] += json_number(outcome_counts.get(k, 0))
        return self

    # ------------------------------------------------------------------ prediction
    def predict(self, descriptors: Mapping[str, object]) -> dict[str, float]:
        base = _normalise(self.base)
        num = {k: self.alpha * base[k] for k in self.classes}
        den = self.alpha
        for p in precursors_of(descriptors):
            row = self.counts.get(p)
            if row:
                for k in self.classes:
                    num[k] += row[k]
                den += sum(row.values())
        dist = {k: num[k] / den for k in self.classes}
        band = self.band_counts.get(temp_band(descriptors.get("temperature_c")))
        if band and self.beta:
            band_rate = _normalise(band)
            dist = {k: dist[k] * (band_rate[k] / base[k]) ** self.beta for k in self.classes}
        dist = _normalise(dist)
        return _normalise({k: max(v, self.floor) for k, v in dist.items()})


# ---------------------------------------------------------------------- evidence reading


def _flat(value: float) -> dict[str, float]:
    return {k: value for k in CLASSES}


_ANIONS = frozenset({"O", "H", "C", "N"})


def _cations(formula: str, minor: float = 0.05) -> frozenset[str]:
    """Non-anion elements making up at least `minor` of the cation amount (drops dopants)."""
    try:
        amounts = parse_formula(formula)
    except ValueError:
        return frozenset()
    cat = {el: n for el, n in amounts.items() if el not in _ANIONS}
    total = sum(cat.values())
    return frozenset(el for el, n in cat.items() if total and n / total >= minor)


def _phase_roles(phases: Sequence[object], precursors: Sequence[str]) -> dict[str, float]:
    """Weight fraction of precursor phases, cross phases (cations of two precursors) and
    other phases (a precursor changed on its own)."""
    sets = [_cations(p) for p in precursors]
    out = {"precursor": 0.0, "cross": 0.0, "other": 0.0}
    for ph in phases:
        if not isinstance(ph, Mapping):
            continue
        formula = phase_formula(str(ph.get("name", "")))
        wf = ph.get("weight_fraction")
        wf = float(wf) if isinstance(wf, int | float) and not isinstance(wf, bool) else 0.0
        if any(close_compound(formula, p) for p in precursors):
            out["precursor"] += wf
            continue
        cations = _cations(formula)
        touched = sum(1 for s in sets if s and cations & s)
        distinct = len({s for s in sets if s}) > 1
        out["cross" if (distinct and touched >= 2) else "other"] += wf
    return out


def refinement_likelihood(
    content: Mapping[str, object], descriptors: Mapping[str, object]
) -> dict[str, float]:
    phases = content.get("phases") or []
    if not isinstance(phases, list) or not phases:
        return {**_flat(1.0), "physical_failure": 2.0}
    roles = _phase_roles(phases, precursors_of(descriptors))
    like = {"physical_failure": 0.15}
    if roles["cross"] >= 0.05 and roles["precursor"] < 0.1:
        like.update(completely_reacted=0.6, transformed=0.1, partially_reacted=0.25, unreacted=0.05)
    elif roles["cross"] >= 0.05:
        like.update(completely_reacted=0.2, transformed=0.1, partially_reacted=0.6, unreacted=0.1)
    elif roles["other"] >= 0.05:
        like.update(completely_reacted=0.1, transformed=0.65, partially_reacted=0.1, unreacted=0.15)
    else:
        like.update(
            completely_reacted=0.03, transformed=0.12, partially_reacted=0.05, unreacted=0.8
        )
    return like


def execution_problems(
    content: Mapping[str, object], descriptors: Mapping[str, object]
) -> list[str]:
    """What in an execution record argues against a valid, characterizable sample: nothing
    recovered, a workflow step that did not complete, or recorded elements that do not contain
    the planned ones (a sample-identity conflict). `xrd_met_target_mass` is not used: many runs
    that missed it are valid in the ledger."""
    problems = []
    recovery = content.get("recovery")
    collected = recovery.get("weight_collected_mg") if isinstance(recovery, Mapping) else None
    if isinstance(collected, int | float) and collected <= 0:
        problems.append("no powder recovered")
    status = str(content.get("status", "completed")).lower()
    if status not in ("completed", "complete"):
        problems.append(f"run status {status}")
    tasks = content.get("workflow_tasks")
    if isinstance(tasks, list) and any(
        isinstance(t, Mapping) and str(t.get("status", "COMPLETED")).upper() != "COMPLETED"
        for t in tasks
    ):
        problems.append("a workflow task did not complete")
    recorded = content.get("recorded_elements")
    planned = (
        set().union(*(_cations(p) for p in precursors_of(descriptors))) if descriptors else set()
    )
    if isinstance(recorded, list) and recorded and planned and not planned <= set(recorded):
        problems.append("recorded elements differ from the planned ones")
    return problems


def execution_likelihood(
    content: Mapping[str, object], descriptors: Mapping[str, object]
) -> dict[str, float]:
    problems = execution_problems(content, descriptors)
    return {**_flat(1.0), "physical_failure": 1.0 + 1.5 * len(problems) if problems else 0.7}


def review_weight(content: Mapping[str, object]) -> float:
    """How much to trust the refinement reading after an expert review (exponent)."""
    tier = content.get("final_quality_tier")
    accepted = content.get("accepted")
    if accepted is False or tier == 3:
        return 0.3
    if tier == 1:
        return 1.6
    return 1.0


def posterior(
    prior: Mapping[str, float],
    descriptors: Mapping[str, object],
    revealed: Sequence[Mapping[str, object]],
    review: Mapping[str, object] | None,
) -> dict[str, float]:
    log_post = {k: math.log(max(prior[k], 1e-9)) for k in prior}
    trust = (
        review_weight(json_object(review.get("content", {})))
        if review and "content" in review
        else 1.0
    )
    for item in revealed:
        implied = item.get("implies_category")
        if isinstance(implied, str) and implied in log_post:
            # A record card's measured assay read through the card's declared outcome rule
            # (e.g. a yield and its bin): strong, not certain (a recorded value can be wrong).
            rest = 0.1 / max(1, len(log_post) - 1)
            for k in log_post:
                log_post[k] += math.log(0.9 if k == implied else rest)
            continue
        content = item.get("content")
        if not isinstance(content, Mapping):
            continue
        kind = item.get("kind")
        if kind in ("refinement", "automated_refinement"):
            if kind == "automated_refinement" and not content.get("success", True):
                continue
            like = refinement_likelihood(content, descriptors)
            weight = trust if kind == "refinement" else 0.5
        elif kind == "execution_record":
            like, weight = execution_likelihood(content, descriptors), 1.0
        else:
            continue
        for k in log_post:
            log_post[k] += weight * math.log(like[k])
    top = max(log_post.values())
    post = _normalise({k: math.exp(v - top) for k, v in log_post.items()})
    # A class the prior rules out (a card's table without a validity column) stays out.
    return _normalise({k: max(v, 0.005) if prior[k] > 0 else 0.0 for k, v in post.items()})
