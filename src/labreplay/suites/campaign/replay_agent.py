"""Scripted replay of a stored campaign trajectory (a campaign agent, so it lives in the suite).

Replays exactly what a stored run did: every action it submitted (accepted or not, in order)
and every checkpoint forecast it gave. Rerunning a replay on the same spec and seed reproduces
the stored trajectory hash, which makes a stored run auditable without the original agent (an
LLM, say). Events written by the harness rather than the agent (a forced stop) end the replay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labreplay.errors import AgentError
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.actions import ForecastReply, forecast_fields
from labreplay.suites.campaign.events import campaign_events


class ReplayAgent:
    name = "replay"

    def __init__(self, events: Sequence[Mapping[str, object]], source_run: str = "") -> None:
        self.source_run = source_run
        typed = campaign_events(events)
        self._actions = [dict(e["payload"]["action"]) for e in typed if e["kind"] == "action"]
        self._forecasts: list[ForecastReply] = [
            {
                "forecasts": [
                    {"experiment_id": k, **forecast_fields(v)}
                    for k, v in e["payload"]["forecasts"].items()
                ]
            }
            for e in typed
            if e["kind"] == "checkpoint"
        ]
        self.reset(0)

    def params(self) -> JsonObject:
        return {"source_run": self.source_run}

    def reset(self, seed: int) -> None:
        self._next_action = 0
        self._next_forecast = 0

    def act(self, observation: Mapping[str, JsonValue]) -> JsonObject:
        if self._next_action >= len(self._actions):
            return {"type": "stop"}
        action = self._actions[self._next_action]
        self._next_action += 1
        return action

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        if self._next_forecast >= len(self._forecasts):
            raise AgentError(
                f"replay of run {self.source_run or '?'}: no stored checkpoint left to replay"
            )
        forecast = self._forecasts[self._next_forecast]
        self._next_forecast += 1
        return forecast
