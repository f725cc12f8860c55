"""The `bayes` reference's rules for what to buy and what to select (used by `agents`).

Declared, general rules read from the visible state only: which evidence kinds the schema
offers, whether the record showed the pipeline run missing, whether an expert-selected
refinement was seen, and the expected information of a candidate for the held-out panel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.actions import schema_variants_of
from labreplay.suites.campaign.json_values import json_list, json_object
from labreplay.suites.campaign.learner import ContextModel
from labreplay.suites.campaign.views import VisibleState

PIPELINE_KINDS = frozenset(
    {"execution_record", "thermal_history", "xrd_scan", "automated_refinement"}
)


def offered_kinds(observation: Mapping[str, JsonValue]) -> list[str]:
    props = schema_variants_of(observation).get("inspect_evidence")
    if props is None:
        return []
    return [str(k) for k in json_list(json_object(props["kind"]).get("enum", []))]


def is_selected(item: Mapping[str, object]) -> bool:
    content = item.get("content")
    return isinstance(content, Mapping) and content.get("selected") is True


def pipeline_availability(state: VisibleState) -> tuple[int, int]:
    """Experiments of this campaign where a pipeline kind was bought: (run found, probed)."""
    found = tries = 0
    for record in state["experiments"].values():
        items = [r for r in record["revealed"] if r.get("kind") in PIPELINE_KINDS]
        if items:
            tries += 1
            found += int(any("missing" not in r for r in items))
    return found, tries


LEARN_WEIGHT = 3.0  # a closed experiment counts as this many context experiments


def _kl(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    return sum(p[k] * math.log(p[k] / q[k]) for k in p if p[k] > 0)


def expected_panel_information(
    model: ContextModel,
    desc: Mapping[str, object],
    queries: Sequence[Mapping[str, object]],
    now: Sequence[Mapping[str, float]],
    weight: float,
) -> float:
    """sum_k p(k) sum_q KL(p_q | learned k || p_q): learn each outcome, measure, take it back."""
    touched = [i for i, d in enumerate(queries) if model.touches(desc, d)]
    if not touched:
        return 0.0
    total = 0.0
    for k, pk in model.predict(desc).items():
        if pk <= 0:
            continue  # a class the model cannot predict (no validity column) teaches nothing
        with model.trying(desc, {k: 1.0}, weight):
            total += pk * sum(_kl(model.predict(queries[i]), now[i]) for i in touched)
    return total
