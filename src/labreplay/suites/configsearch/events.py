"""The configsearch suite's events, a discriminated union on `kind` (envelope:
`labreplay.sdk.events`). A sweep run records `infeasible` configurations and one `evaluation`
per (model, configuration); a search run records `ground_truth` (problem `closest`) and one
`step` per suggestion, with the `evaluation`s its steps needed. `PAYLOADS` feeds the
published export schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypeAlias, TypedDict, cast

from labreplay.sdk.events import COMMON_PAYLOADS, HeaderEvent, StoredEvent, checked_kinds


class ConfigJson(TypedDict):
    """A pipeline configuration: OOD radius r, neighbours n, seeds s (`space.Config`)."""

    r: float
    n: int
    s: int


class EvaluationPayload(TypedDict):
    """One model on one configuration (`pipeline.Evaluation.to_json`)."""

    config: ConfigJson
    model: str
    mae: float
    accuracy: float | None
    n_test: int
    fold_test_sizes: list[int]
    n_test_distinct: int
    degenerate_folds: int
    mae_nondegenerate: float | None
    abs_error_sd: float | None
    fold_fits: int


class InfeasiblePayload(TypedDict):
    config: ConfigJson
    reason: str


class GroundTruthPayload(TypedDict):
    gt: str  # the ground-truth model of problem `closest`
    values: dict[str, float]  # its MAE per configuration label
    evaluations: int  # what computing it cost


class StepPayload(TypedDict):
    """One suggestion of a search and what it scored (`search.Step.to_json`)."""

    step: int
    phase: str  # init | bo | random | exhaustive | <agent method> | invalid
    config: ConfigJson | None  # None: an invalid suggestion (nothing evaluated)
    model: str | None
    error: str | None
    maes: dict[str, float]
    objective: float | None
    best_so_far: float
    acquisition: float | None
    new_fits: int


EvaluationEvent: TypeAlias = StoredEvent[Literal["evaluation"], EvaluationPayload]
InfeasibleEvent: TypeAlias = StoredEvent[Literal["infeasible"], InfeasiblePayload]
GroundTruthEvent: TypeAlias = StoredEvent[Literal["ground_truth"], GroundTruthPayload]
StepEvent: TypeAlias = StoredEvent[Literal["step"], StepPayload]
ConfigsearchEvent: TypeAlias = (
    HeaderEvent | EvaluationEvent | InfeasibleEvent | GroundTruthEvent | StepEvent
)

PAYLOADS: Mapping[str, type] = {
    **COMMON_PAYLOADS,
    "evaluation": EvaluationPayload,
    "infeasible": InfeasiblePayload,
    "ground_truth": GroundTruthPayload,
    "step": StepPayload,
}


def configsearch_events(rows: Iterable[Mapping[str, object]]) -> list[ConfigsearchEvent]:
    """Stored events (`Store.events`, a recorder's) as this suite's typed union, each kind
    checked against `PAYLOADS` (StoreError naming an unknown one)."""
    return cast("list[ConfigsearchEvent]", checked_kinds(rows, PAYLOADS, "configsearch"))


__all__ = [
    "PAYLOADS",
    "ConfigJson",
    "ConfigsearchEvent",
    "EvaluationEvent",
    "EvaluationPayload",
    "GroundTruthEvent",
    "GroundTruthPayload",
    "InfeasibleEvent",
    "InfeasiblePayload",
    "StepEvent",
    "StepPayload",
    "configsearch_events",
]
