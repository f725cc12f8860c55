"""The held-out panel's outcomes as a live lab posts them: `{"post": "panel_outcome",
"experiment_id": QUERY_ID, "outcome": {"valid": ..., ...}}`, at any time while the campaign
runs, once per panel experiment. Like every post they are `lab` events of the run's chain, but
no selected experiment's record: the stored scores read the panel from the spec (a live run's
as a replay's), and `live.scores` rescores the panel from these posts as they arrive."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.live.record import LAB_KIND

PANEL_POST = "panel_outcome"


def panel_refusal(
    post: Mapping[str, JsonValue], panel: Collection[str], posted: Collection[str]
) -> tuple[int, str] | None:
    """Why a panel outcome post is refused (the statuses of `LiveLab._refusal`)."""
    eid = post.get("experiment_id")
    if not isinstance(eid, str) or eid not in panel:
        return 404, f"unknown panel experiment {eid!r}"
    if eid in posted:
        return 409, f"duplicate post: the panel outcome of {eid!r} was posted"
    outcome = post.get("outcome")
    if not isinstance(outcome, Mapping) or not isinstance(outcome.get("valid"), bool):
        return 400, "a panel_outcome post needs 'outcome': {\"valid\": true|false, ...}"
    return None


def split_panel(
    events: Sequence[Mapping[str, object]],
) -> tuple[list[Mapping[str, object]], list[Mapping[str, object]]]:
    """A run's events without its panel outcome posts (accepted or not), and those posts."""
    others: list[Mapping[str, object]] = []
    panel: list[Mapping[str, object]] = []
    for event in events:
        payload = event["payload"]
        post = payload.get("post") if isinstance(payload, Mapping) else None
        is_panel = isinstance(post, Mapping) and post.get("post") == PANEL_POST
        (panel if event["kind"] == LAB_KIND and is_panel else others).append(event)
    return others, panel


def panel_outcomes(events: Sequence[Mapping[str, object]]) -> dict[str, JsonObject]:
    """The panel outcomes a run's lab posted and the run accepted: query id -> outcome, in
    arrival order."""
    out: dict[str, JsonObject] = {}
    for event in split_panel(events)[1]:
        payload = event["payload"]
        if isinstance(payload, Mapping) and payload["accepted"]:
            out[str(payload["post"]["experiment_id"])] = dict(payload["post"]["outcome"])
    return out


__all__ = ["PANEL_POST", "panel_outcomes", "panel_refusal", "split_panel"]
