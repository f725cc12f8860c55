"""The campaign action vocabulary: JSON schemas per phase and a fast validator.

The schema shown to an agent lists only the actions legal in the current phase; validation is
hand-written (no jsonschema dependency on the hot path) and returns one clear reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias, TypedDict

from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.scoring import CATEGORIES
from labreplay.suites.campaign.card_text import TableDeclaration, categories_text, p_valid_text
from labreplay.suites.campaign.events import CategoryForecast
from labreplay.suites.campaign.json_values import json_list, json_object
from labreplay.suites.campaign.protocol import EVIDENCE_KINDS
from labreplay.suites.campaign.views import SpecBody


class CampaignAction(TypedDict, total=False):
    """An action that passed `validate_fields`: `type` and the fields that type requires,
    each of the checked value type (the runtime's handlers read them)."""

    type: str  # one of the action types the observation's schema offers
    experiment_id: str  # the candidate to select, else the open experiment
    p_valid: float  # submit_forecast: P(physically valid and characterizable)
    categories: dict[str, float]  # submit_forecast: P(category | valid), summing to 1
    kind: str  # inspect_evidence: the evidence kind to buy
    expect_change: float  # request_review: P(the review changes your conclusion)
    expected_tier: int  # request_review: the quality tier (1, 2 or 3) you expect
    claims: dict[str, float]  # close_experiment: per claim, P(the evidence supports it)


# An action as an agent returns it (`act`; `validate_fields` checks it): its type and fields,
# each a string, a number, a probability per category or claim, or null.
ActionReply: TypeAlias = dict[str, str | float | dict[str, float] | None]

# One experiment's forecast in a panel reply: its id, probabilities and weights objects of
# probabilities (the fields the panel schema declares).
PanelEntry: TypeAlias = dict[str, str | float | dict[str, float]]

# A panel forecast as an agent returns it (`forecast`): {"forecasts": [entry, ...]}, with
# "error" when it could not forecast (every entry then takes the declared fallback).
ForecastReply: TypeAlias = dict[str, list[PanelEntry] | str]


def forecast_fields(forecast: CategoryForecast) -> PanelEntry:
    """`forecast`'s fields as a panel entry or a `submit_forecast` action holds them."""
    return {"p_valid": forecast["p_valid"], "categories": forecast["categories"]}


CLAIMS: tuple[str, ...] = (
    "reaction_category",
    "target_presence",
    "phase_identity",
    "phase_quantification",
)


def claim_names(body: SpecBody) -> tuple[str, ...]:
    """The claims a spec asks for at closure: its declared `claims` (a record card's), else
    the four SDL-1 claims of the built-in solid-state records."""
    declared = body.get("claims")
    if isinstance(declared, Sequence) and not isinstance(declared, str):
        return tuple(str(_field(c, "name")) for c in declared)
    return CLAIMS


def _field(obj: object, name: str) -> object:
    """`obj[name]` of a JSON object (TypeError naming the field when `obj` is not one)."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"expected a JSON object with {name!r}, got {type(obj).__name__}")
    return obj[name]


def schema_variants(action_schema_: JsonValue) -> dict[str, Mapping[str, object]]:
    """The properties of each action type an action schema offers, by type, in its order."""
    out: dict[str, Mapping[str, object]] = {}
    for variant in json_list(json_object(action_schema_, "action_schema")["oneOf"], "oneOf"):
        props = json_object(json_object(variant)["properties"], "properties")
        out[str(json_object(props["type"])["const"])] = props
    return out


def schema_variants_of(observation: Mapping[str, JsonValue]) -> dict[str, Mapping[str, object]]:
    """`schema_variants` of an observation's `action_schema`."""
    return schema_variants(observation["action_schema"])


def schema_claims(action_schema_: JsonValue) -> tuple[str, ...]:
    """The claim names an observation's action schema asks for (agents read them there)."""
    variants = json_object(action_schema_, "action_schema").get("oneOf", [])
    for variant in variants if isinstance(variants, list) else []:
        props = variant.get("properties", {}) if isinstance(variant, Mapping) else {}
        type_ = props.get("type", {})
        if isinstance(type_, Mapping) and type_.get("const") == "close_experiment":
            required = _field(props["claims"], "required")
            assert isinstance(required, list)
            return tuple(required)
    return CLAIMS


PHASE_ACTIONS: dict[str, tuple[str, ...]] = {
    "select": ("select_experiment", "stop"),
    "prior_forecast": ("submit_forecast", "stop"),
    "investigate": (
        "inspect_evidence",
        "request_review",
        "submit_forecast",
        "close_experiment",
        "stop",
    ),
    "update_required": ("submit_forecast", "stop"),
    "done": (),
}

_PROB: JsonObject = {"type": "number", "minimum": 0, "maximum": 1}


def forecast_properties(
    categories: Sequence[str] = CATEGORIES, table: TableDeclaration | None = None
) -> JsonObject:
    """`table`: a card table's declaration (`card_text`), whose words the descriptions use."""
    return {
        "p_valid": {**_PROB, "description": p_valid_text(table)},
        "categories": {
            "type": "object",
            "description": categories_text(table),
            "properties": {k: _PROB for k in categories},
            "required": list(categories),
            "additionalProperties": False,
        },
    }


def action_schema(
    phase: str,
    candidate_ids: Sequence[str],
    open_id: str | None,
    kinds: Sequence[str] = EVIDENCE_KINDS,
    review_possible: bool = True,
    categories: Sequence[str] = CATEGORIES,
    claims: Sequence[str] = CLAIMS,
    table: TableDeclaration | None = None,
) -> JsonObject:
    """The actions that can succeed now: the phase's actions, minus a selection without
    candidates, an inspection without an affordable, not yet exhausted kind (`kinds`), and a
    review when none is possible (`review_possible`: budget left, open experiment not reviewed)."""
    ids: JsonObject = (
        {"type": "string", "enum": list(candidate_ids)} if candidate_ids else {"type": "string"}
    )
    open_ref: JsonObject = {"type": "string", "enum": [open_id]} if open_id else {"type": "string"}
    variants: dict[str, JsonObject] = {
        "select_experiment": {"experiment_id": ids},
        "submit_forecast": {"experiment_id": open_ref, **forecast_properties(categories, table)},
        "inspect_evidence": {
            "experiment_id": open_ref,
            "kind": {"type": "string", "enum": list(kinds)},
        },
        "request_review": {
            "experiment_id": open_ref,
            "expect_change": {**_PROB, "description": "P(the review changes your conclusion)"},
            "expected_tier": {"type": "integer", "enum": [1, 2, 3]},
        },
        "close_experiment": {
            "experiment_id": open_ref,
            "claims": {
                "type": "object",
                "description": "per claim, P(your inspected evidence suffices to support it)",
                "properties": {c: _PROB for c in claims},
                "required": list(claims),
                "additionalProperties": False,
            },
        },
        "stop": {},
    }
    one_of: list[JsonValue] = []
    for name in PHASE_ACTIONS[phase]:
        if (
            (name == "inspect_evidence" and not kinds)
            or (name == "request_review" and not review_possible)
            or (name == "select_experiment" and not candidate_ids)
        ):
            continue
        props: JsonObject = {"type": {"type": "string", "const": name}, **variants[name]}
        one_of.append(
            {
                "type": "object",
                "properties": props,
                "required": list(props),
                "additionalProperties": False,
            }
        )
    return {"oneOf": one_of}


def _prob(value: object, name: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{name} must be a number in [0, 1], got {value!r}"
    if not math.isfinite(value) or value < 0 or value > 1:
        return f"{name} must be in [0, 1], got {value!r}"
    return None


def check_distribution(
    categories: object, names: Sequence[str] = CATEGORIES
) -> tuple[dict[str, float] | None, str | None]:
    """`names`: the spec's categories (the four solid-state ones for the built-in records)."""
    if not isinstance(categories, Mapping):
        return None, "categories must be an object with one probability per category"
    keys = set(categories)
    if keys != set(names):
        return None, f"categories must have exactly the keys {list(names)}, got {sorted(keys)}"
    for k in names:
        if (err := _prob(categories[k], f"categories.{k}")) is not None:
            return None, err
    total = float(sum(categories[k] for k in names))
    if abs(total - 1.0) > 1e-3:
        return None, f"categories must sum to 1 (within 1e-3), got {total:.6f}"
    return {k: float(categories[k]) / total for k in names}, None


def validate_fields(
    action: Mapping[str, object],
    kinds: Sequence[str] = EVIDENCE_KINDS,
    categories: Sequence[str] = CATEGORIES,
    claims: Sequence[str] = CLAIMS,
) -> str | None:
    """Type-level checks of an action's own fields (phase rules are the runtime's); `kinds`,
    `categories` and `claims` are the spec's (a record card's table declares its own)."""
    kind = action.get("type")
    required: dict[str, tuple[str, ...]] = {
        "select_experiment": ("experiment_id",),
        "submit_forecast": ("experiment_id", "p_valid", "categories"),
        "inspect_evidence": ("experiment_id", "kind"),
        "request_review": ("experiment_id", "expect_change", "expected_tier"),
        "close_experiment": ("experiment_id", "claims"),
        "stop": (),
    }
    if kind not in required or not isinstance(kind, str):
        return f"unknown action type {kind!r}; expected one of {sorted(required)}"
    extra = set(action) - {"type", *required[kind]}
    if extra:
        return f"{kind}: unexpected field(s) {sorted(extra)}"
    missing = [f for f in required[kind] if f not in action]
    if missing:
        return f"{kind}: missing field(s) {missing}"
    if "experiment_id" in action and not isinstance(action["experiment_id"], str):
        return f"{kind}: experiment_id must be a string"
    if kind == "submit_forecast":
        if (err := _prob(action["p_valid"], "p_valid")) is not None:
            return err
        _, err = check_distribution(action["categories"], categories)
        return err
    if kind == "inspect_evidence" and action["kind"] not in kinds:
        return f"inspect_evidence: kind must be one of {list(kinds)}, got {action['kind']!r}"
    if kind == "request_review":
        if (err := _prob(action["expect_change"], "expect_change")) is not None:
            return err
        tier = action["expected_tier"]
        if isinstance(tier, bool) or tier not in (1, 2, 3):
            return f"request_review: expected_tier must be 1, 2 or 3, got {tier!r}"
    if kind == "close_experiment":
        given = action["claims"]
        if not isinstance(given, Mapping) or set(given) != set(claims):
            return f"close_experiment: claims must have exactly the keys {list(claims)}"
        for c in claims:
            if (err := _prob(given[c], f"claims.{c}")) is not None:
                return err
    return None
