"""LLM agents over any OpenAI-compatible endpoint.

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

import os
from collections.abc import Mapping
from typing import Any

from labreplay.agents.base import CallRecord, ResponseCache
from labreplay.agents.llm_caps import CapMeter, CapReached, RunCaps
from labreplay.agents.llm_client import JsonReply, LLMClient
from labreplay.agents.llm_config import (
    STRUCTURED_FALLBACKS,
    RetryPolicy,
    Sampling,
    StructuredMode,
    public_endpoint,
)
from labreplay.agents.llm_prompts import (
    PROMPT_VERSION,
    StateLayout,
    campaign_messages,
    checkpoint_messages,
)
from labreplay.errors import AgentError

AGENT_PREFIX = "openai:"


class CallLog:
    """Numbers every model call of a run in order, for the `llm_calls` table."""

    def __init__(self) -> None:
        self._pending: list[CallRecord] = []
        self._next = 0

    def reset(self) -> None:
        self._pending = []
        self._next = 0

    def add(self, reply: JsonReply) -> None:
        """Log the reply's calls; raise `CapReached` if a run cap stopped it."""
        self.add_all([reply])

    def add_all(self, replies: list[JsonReply]) -> None:
        """Log every reply's calls, then raise `CapReached` if a cap stopped any of them (so
        the calls made before the cap are all accounted)."""
        capped = None
        for reply in replies:
            for call in reply.calls:
                self._pending.append(CallRecord(call_index=self._next, **call))
                self._next += 1
            capped = capped or reply.cap_reached
        if capped is not None:
            cap, _, detail = capped.removeprefix("cap reached: ").partition(" (")
            raise CapReached(cap, detail.rstrip(")"))

    def drain(self) -> list[CallRecord]:
        out, self._pending = self._pending, []
        return out


class LLMCampaignAgent:
    """A campaign policy backed by a chat model (name `openai:MODEL`)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.name = f"{AGENT_PREFIX}{client.model}"
        # The campaign runner records these two on the run row.
        self.model = client.model
        self.endpoint = public_endpoint(client.base_url)
        self._log = CallLog()
        self._layout = StateLayout()

    def params(self) -> dict[str, Any]:
        return {**self.client.params(), "prompt_version": PROMPT_VERSION}

    def bind_store(self, store: ResponseCache | None) -> None:
        """Use `store`'s response cache, so a resumed run does not repeat completed calls."""
        self.client.cache = store

    def reset(self, seed: int) -> None:
        self._log.reset()
        self._layout.reset()
        self.client.reseed(seed)

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        schema = observation.get("action_schema")
        if not isinstance(schema, Mapping):
            return {"type": "invalid", "raw": "", "error": "observation has no action_schema"}
        reply = self.client.complete_json(
            campaign_messages(observation, self._layout), schema, "action"
        )
        self._log.add(reply)
        if reply.value is not None:
            return reply.value
        return {"type": "invalid", "raw": reply.text or "", "error": reply.error or "no reply"}

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        schema = snapshot.get("response_schema")
        if not isinstance(schema, Mapping):
            return {"forecasts": [], "error": "snapshot has no response_schema"}
        messages = checkpoint_messages(snapshot, self._layout)
        reply = self.client.complete_json(messages, schema, "panel_forecast")
        self._log.add(reply)
        if reply.value is not None:
            return reply.value
        return {"forecasts": [], "error": reply.error or "no reply"}

    def drain_calls(self) -> list[CallRecord]:
        return self._log.drain()


def parse_agent_spec(agent: str) -> str:
    """The model name in `openai:MODEL` (the model may itself contain ':', as Ollama's do)."""
    if not agent.startswith(AGENT_PREFIX) or not agent[len(AGENT_PREFIX) :].strip():
        raise AgentError(
            f"agent {agent!r} is not an LLM agent spec; expected 'openai:MODEL', "
            "e.g. openai:gpt-4o-mini or openai:llama3.2:1b"
        )
    return agent[len(AGENT_PREFIX) :].strip()


def client_options(
    base_url: str | None,
    temperature: float | None,
    top_p: float | None,
    seed: int | None,
    max_tokens: int | None,
    timeout_s: float,
    max_retries: int,
    max_repairs: int,
    structured: str,
    store: ResponseCache | None,
    caps: RunCaps | None = None,
) -> dict[str, Any]:
    if structured not in STRUCTURED_FALLBACKS:
        raise AgentError(
            f"structured must be one of {sorted(STRUCTURED_FALLBACKS)}, got {structured!r}"
        )
    return {
        "base_url": base_url,
        "sampling": Sampling(
            temperature=temperature, top_p=top_p, seed=seed, max_tokens=max_tokens
        ),
        "retry": RetryPolicy(max_retries=max_retries, timeout_s=timeout_s),
        "structured": structured,
        "max_repairs": max_repairs,
        "cache": store,
        "meter": CapMeter(caps),
    }


def make_agent(
    agent: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    temperature: float | None = 0.0,
    top_p: float | None = None,
    seed: int | None = None,
    max_tokens: int | None = None,
    timeout_s: float = 60.0,
    max_retries: int = 4,
    max_repairs: int = 2,
    structured: StructuredMode = "auto",
    store: ResponseCache | None = None,
    caps: RunCaps | None = None,
) -> LLMCampaignAgent:
    """Build an LLM campaign agent from `openai:MODEL` (used by the CLI's --agent).

    `base_url`/`api_key` default to OPENAI_BASE_URL / OPENAI_API_KEY. `seed` is the sampling
    seed sent to the server (default: derived from the run seed). `store` enables the
    persistent response cache. `max_tokens=None` derives each call's response budget from its
    schema (`llm_budget`); `caps` bound what each run may spend (`llm_caps`). Question agents
    for the conditions suite are built by
    `labreplay.suites.conditions.llm_agent.make_question_agent`.
    """
    model = parse_agent_spec(agent)
    if api_key is None and api_key_env:
        api_key = os.environ.get(api_key_env)  # read now, held by the SDK client only
    options = client_options(
        base_url,
        temperature,
        top_p,
        seed,
        max_tokens,
        timeout_s,
        max_retries,
        max_repairs,
        structured,
        store,
        caps,
    )
    return LLMCampaignAgent(LLMClient(model, api_key=api_key, **options))
