"""The campaign's events, a discriminated union on `kind` (envelope: `labreplay.sdk.events`).

A branch's chain is `reset`, then (once the header lands) `header`, then checkpoints, actions,
departures and harness stops in the order they happened, and `end` last. The payloads are
what `CampaignEnv` appends (`env.py`); `PAYLOADS` feeds the published export schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, NotRequired, TypeAlias, TypedDict, cast

from labreplay.sdk.events import (
    COMMON_PAYLOADS,
    HeaderEvent,
    JsonObject,
    StoredEvent,
    checked_kinds,
)


class ResetPayload(TypedDict):
    seed: int
    spec_id: str
    budgets: dict[str, int]  # the campaign's total budgets (experiments, evidence, ...)


class ActionPayload(TypedDict):
    """An action as the agent gave it, whether it was accepted, and in which phase."""

    action: JsonObject  # `{"raw": repr}` when the agent's value was not a JSON object
    accepted: bool
    phase: str
    reason: NotRequired[str]  # why a rejected action was refused
    revealed_item: NotRequired[str | None]  # the evidence item an accepted inspection showed
    cost: NotRequired[dict[str, int]]  # budget spent by an accepted action


class CategoryForecast(TypedDict):
    p_valid: float
    categories: dict[str, float]  # outcome category -> probability (sums to 1)


class CheckpointPayload(TypedDict):
    """The panel forecast over every held-out query after `t` closed experiments."""

    t: int
    state_hash: str
    forecasts: dict[str, CategoryForecast]  # query id -> forecast
    fallbacks: int  # entries missing or malformed, filled by the declared fallback
    errors: list[str]  # the first few reasons


class HarnessPayload(TypedDict, total=False):
    """The harness ended the campaign; exactly one cause is recorded."""

    forced_stop: str  # too many invalid actions in a row
    agent_failed: str  # the agent stopped answering (timeout, its process died)
    cap_reached: str  # a declared cap (turns, time, tokens) was reached


class ControlPayload(TypedDict):
    departure: JsonObject  # a matched control's declared departure from its schedule


class EndPayload(TypedDict):
    reason: str  # "stopped", "budget" or a harness stop
    closed: list[str]  # experiment ids in the order they were closed
    budgets_left: dict[str, int]
    invalid_actions: int


class LabPayload(TypedDict):
    """One post of a live run's lab (`live.lab`): as it came, and how it was answered."""

    post: JsonObject  # evidence, outcome, deviation or record (`live.record.POSTS`; `{"raw"}`: no JSON)
    accepted: bool
    error: NotRequired[str]  # why a refused post was refused


ResetEvent: TypeAlias = StoredEvent[Literal["reset"], ResetPayload]
ActionEvent: TypeAlias = StoredEvent[Literal["action"], ActionPayload]
CheckpointEvent: TypeAlias = StoredEvent[Literal["checkpoint"], CheckpointPayload]
HarnessEvent: TypeAlias = StoredEvent[Literal["harness"], HarnessPayload]
ControlEvent: TypeAlias = StoredEvent[Literal["control"], ControlPayload]
EndEvent: TypeAlias = StoredEvent[Literal["end"], EndPayload]
LabEvent: TypeAlias = StoredEvent[Literal["lab"], LabPayload]

CampaignEvent: TypeAlias = (
    HeaderEvent
    | ResetEvent
    | ActionEvent
    | CheckpointEvent
    | HarnessEvent
    | ControlEvent
    | EndEvent
    | LabEvent
)

PAYLOADS: Mapping[str, type] = {
    **COMMON_PAYLOADS,
    "reset": ResetPayload,
    "action": ActionPayload,
    "checkpoint": CheckpointPayload,
    "harness": HarnessPayload,
    "control": ControlPayload,
    "end": EndPayload,
    "lab": LabPayload,
}


def checkpoint_payloads(rows: Iterable[Mapping[str, object]]) -> list[CheckpointPayload]:
    """The `checkpoint` payloads of a branch's events, in order."""
    out: list[CheckpointPayload] = []
    for event in campaign_events(rows):
        if event["kind"] == "checkpoint":
            out.append(event["payload"])
    return out


def campaign_events(rows: Iterable[Mapping[str, object]]) -> list[CampaignEvent]:
    """Stored events (`Store.events`, a recorder's) as this suite's typed union, each kind
    checked against `PAYLOADS` (StoreError naming an unknown one)."""
    return cast("list[CampaignEvent]", checked_kinds(rows, PAYLOADS, "campaign"))


__all__ = [
    "PAYLOADS",
    "ActionEvent",
    "ActionPayload",
    "CampaignEvent",
    "CategoryForecast",
    "CheckpointEvent",
    "CheckpointPayload",
    "ControlEvent",
    "ControlPayload",
    "EndEvent",
    "EndPayload",
    "HarnessEvent",
    "HarnessPayload",
    "LabEvent",
    "LabPayload",
    "ResetEvent",
    "ResetPayload",
    "campaign_events",
    "checkpoint_payloads",
]
