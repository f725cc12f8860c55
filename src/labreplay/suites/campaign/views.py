"""The types of what a campaign agent sees: the agent-visible state (`CampaignEnv.visible_state`)
and its parts, as the reference agents and controls read them.

An observation's `state` and a snapshot's `state` and `panel` are plain JSON built by the
env; `visible_state` and `panel_of` are where an agent takes them as these types (the env is
their only writer, so the shapes are the env's own). Descriptors and evidence items are the
records' JSON, read with isinstance checks where a value is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired, TypedDict, cast

from labreplay.suites.campaign.json_values import json_list, json_object


class PanelItem(TypedDict):
    """A held-out query (or a candidate without its status): id and descriptors only."""

    experiment_id: str
    descriptors: dict[str, object]  # known before the experiment: precursors, target, heating


class VisibleCandidate(TypedDict):
    experiment_id: str  # a candidate this campaign may select
    descriptors: dict[str, object]  # as a held-out query's
    status: str  # "available", "open", "closed" or "abandoned"


class LocalForecast(TypedDict):
    """A forecast the agent submitted for its open experiment."""

    p_valid: float  # P(physically valid and characterizable)
    categories: dict[str, float]  # P(category | valid), summing to 1
    after_reveals: int  # reveals (evidence and review) seen when it was submitted


class PreReview(TypedDict):
    """What the agent expected of a review when it requested one."""

    expect_change: float  # P(the review changes its conclusion)
    expected_tier: int  # the quality tier (1-3) it expected


class ExperimentRecord(TypedDict):
    """What the agent did and saw on one selected experiment."""

    forecasts: list[LocalForecast]  # its forecasts, the prior first
    revealed: list[dict[str, object]]  # evidence items, in the order inspected
    review: dict[str, object] | None  # the expert review's item, once requested
    claims: dict[str, float] | None  # the claim probabilities it closed the experiment with
    pre_review: PreReview | None  # what it expected of the review, once requested


class VisibleState(TypedDict):
    """The campaign as the agent sees it (an observation's and a snapshot's `state`)."""

    assignment: str  # the assignment's id ("long-3", "short-1")
    # the precursors the candidates and queries are drawn around (`eval_groups` on a card's table)
    eval_precursors: NotRequired[list[str]]
    eval_groups: NotRequired[list[str]]  # a card table's evaluation groups
    budgets_left: dict[str, int]  # per budget ("experiments", "evidence", "reviews")
    budgets_total: dict[str, int]  # the same budgets at the start
    evidence_prices: dict[str, int]  # evidence budget units per inspection of each kind
    categories: list[str]  # the reaction categories a forecast distributes over
    candidates: list[VisibleCandidate]  # the experiments it may select, with their status
    # the experiments the panel checkpoints score: never selectable, outcomes never shown
    held_out_queries: list[PanelItem]
    # the context rows (descriptors and outcome) or their summary (ContextSummary), as declared
    context: list[dict[str, object]] | dict[str, object]
    open_experiment: str | None  # the selected experiment not yet closed
    experiments: dict[str, ExperimentRecord]  # per selected experiment
    closed: list[str]  # closed experiments, in order
    claims: NotRequired[list[dict[str, object]]]  # a record card's declared claims
    # a card table's declaration (`card_text.TableDeclaration`): its description, descriptors,
    # categories with their meaning, evidence kinds and reference learner
    table: NotRequired[dict[str, object]]


def visible_state(view: Mapping[str, object]) -> VisibleState:
    """An observation's or snapshot's `state`, as the env built it."""
    return cast(VisibleState, json_object(view["state"], "state"))


def panel_of(snapshot: Mapping[str, object]) -> list[PanelItem]:
    """A snapshot's `panel`: the held-out queries to forecast, as the env built them."""
    return cast(list[PanelItem], json_list(snapshot["panel"], "panel"))


__all__ = [
    "AssignmentRef",
    "EvaluatorRecord",
    "ExperimentRecord",
    "LocalForecast",
    "PanelItem",
    "PreReview",
    "SpecBody",
    "VisibleCandidate",
    "VisibleState",
    "panel_of",
    "spec_body",
    "visible_state",
]


# --------------------------------------------------------------------------- the spec body
class AssignmentRef(TypedDict):
    id: str
    kind: str  # "long" or "short"


class EvaluatorRecord(TypedDict):
    """Behind the firewall: a candidate's or query's recorded outcome and evidence (per kind
    a list of items, or a typed-missing marker)."""

    outcome: dict[str, object]
    evidence: dict[str, object]
    secondary: NotRequired[dict[str, object]]  # a card's secondary outcomes, by column


class SpecBody(TypedDict):
    """A campaign spec's body, as `compiler.build_specs` writes it (checked on load by
    `spec_schema.check_body_schema`). In a spec directory every field outside
    `compiler.VISIBLE_BODY_FIELDS` (`evaluator`, `acceleration_target`, the data hashes of
    `record`) is sealed apart and joined back when a run loads the spec."""

    record: dict[str, object]
    protocol_params: dict[str, object]
    seed: int
    assignment: AssignmentRef
    eval_precursors: list[str]
    budgets: dict[str, int]
    prices: dict[str, int]
    eps: float
    # {"tau", "context_model_score_t0", "delta", "rule"}; older specs held a bare number
    acceleration_target: dict[str, object] | float | None
    categories: NotRequired[list[str]]  # absent from the oldest built-in specs: CATEGORIES
    candidates: list[PanelItem]
    queries: list[PanelItem]
    claims: NotRequired[list[dict[str, object]]]  # a record card's declared claims
    context_summary: dict[str, object]
    context_rows: list[dict[str, object]]
    evaluator: dict[str, EvaluatorRecord]
    roles: dict[str, int]


def spec_body(body: Mapping[str, object]) -> SpecBody:
    """A campaign spec's body (`EnvironmentSpec.body`) as the `SpecBody` it was compiled as."""
    return cast(SpecBody, body)
