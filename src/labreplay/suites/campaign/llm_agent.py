"""The campaign suite's LLM agent: a campaign policy backed by any OpenAI-compatible endpoint.

`LLMCampaignAgent` is a campaign policy: each turn it shows the model our policy prompt, the
phase and its rules, the exact JSON schema of the actions permitted now, and the agent-visible
state as canonical JSON (rendering in `llm_prompts`). It sees nothing but the observation it is
handed, so the runtime's firewall is the only gate on what reaches the model.

A reply that still fails validation after the client's repair turns becomes
`{"type": "invalid", "raw": <text>, "error": <reason>}`, which the runtime records and scores as
an invalid action; a failed panel forecast becomes `{"forecasts": [], "error": <reason>}`, which
the runtime fills with its declared fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Unpack

from labreplay.sdk.agents import (
    CallLog,
    CallRecord,
    LLMClient,
    ResponseCache,
    agent_name,
    client_options,
)
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.options import BuilderKwargs
from labreplay.suites.campaign.actions import ActionReply, ForecastReply
from labreplay.suites.campaign.llm_panel import panel_wire
from labreplay.suites.campaign.llm_prompts import (
    PROMPT_VERSION,
    Conversation,
    campaign_messages,
    checkpoint_messages,
)


class LLMCampaignAgent:
    """A campaign policy backed by a chat model (name `openai:MODEL`)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.name = agent_name(client)
        # The campaign runner records these two on the run row.
        self.model = client.model
        self.endpoint = client.endpoint
        self._log = CallLog()
        self._chat = Conversation()

    def params(self) -> JsonObject:
        return {**self.client.params(), "prompt_version": PROMPT_VERSION}

    def bind_store(self, store: ResponseCache | None) -> None:
        """Use `store`'s response cache, so a resumed run does not repeat completed calls."""
        self.client.cache = store

    def reset(self, seed: int) -> None:
        self._log.reset()
        self._chat.reset()
        self.client.reseed(seed)

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        schema = observation.get("action_schema")
        if not isinstance(schema, Mapping):
            return {"type": "invalid", "raw": "", "error": "observation has no action_schema"}
        reply = self.client.complete_json(
            campaign_messages(observation, self._chat), schema, "action"
        )
        self._log.add(reply)
        action: ActionReply = reply.value if reply.value is not None else {
            "type": "invalid", "raw": reply.text or "", "error": reply.error or "no reply"
        }  # fmt: skip
        self._chat.answered(action)
        return action

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        schema = snapshot.get("response_schema")
        if not isinstance(schema, Mapping):
            return {"forecasts": [], "error": "snapshot has no response_schema"}
        messages = checkpoint_messages(snapshot, self._chat)
        wire = panel_wire(schema)  # rows of numbers instead of objects (`llm_panel`)
        asked = schema if wire is None else wire.schema
        reply = self.client.complete_json(messages, asked, "panel_forecast")
        self._log.add(reply)
        if reply.value is None:
            error = reply.error or "no reply"
            kept = wire.salvage(reply.text) if wire is not None else None
            return {"forecasts": [], "error": error} if kept is None else {**kept, "error": error}
        return reply.value if wire is None else wire.decode(reply.value)

    def drain_calls(self) -> list[CallRecord]:
        return self._log.drain()


def make_agent(
    agent: str, *, store: ResponseCache | None = None, **options: Unpack[BuilderKwargs]
) -> LLMCampaignAgent:
    """Build an LLM campaign agent from `openai:MODEL` (the CLI's --agent) and the LLM options
    (`labreplay.agents.llm.client_options`); `store` enables the persistent response cache."""
    model, api_key, client = client_options(agent, store, **options)
    return LLMCampaignAgent(LLMClient(model, api_key=api_key, **client))
