"""Shared plumbing of the LLM agents over any OpenAI-compatible endpoint: the agent spec
(`openai:MODEL`, or an inspect model string such as `openai/gpt-5`, `openai-api/local/m` or
`mockllm/model`, served through inspect_ai's model API: `llm_inspect`), the client options
every suite's LLM agent takes, and the per-run call log.

The agents themselves live in their suites (the campaign policy in
`labreplay.suites.campaign.llm_agent`, the conditions question agent in
`labreplay.suites.conditions.llm_agent`), so the core never holds a suite's prompts.
"""

from __future__ import annotations

import os
from dataclasses import fields, replace
from typing import TYPE_CHECKING, TypeVar, Unpack, cast

from labreplay.agents.base import CallRecord, ResponseCache
from labreplay.agents.llm_caps import CapMeter, CapReached
from labreplay.agents.llm_client import ClientOptions, JsonReply
from labreplay.agents.llm_config import (
    STRUCTURED_FALLBACKS,
    RetryPolicy,
    Sampling,
)
from labreplay.agents.llm_inspect import is_inspect_spec
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from labreplay.agents.llm_client import AsyncLLMClient, LLMClient
    from labreplay.agents.llm_options import BuilderKwargs

AGENT_PREFIX = "openai:"
_T = TypeVar("_T", bound="DataclassInstance")


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


def is_llm_agent(agent: object) -> bool:
    """Whether `agent` names an LLM agent: `openai:MODEL` (our own OpenAI-compatible client) or
    an inspect model string `PROVIDER/MODEL` (inspect_ai's model API)."""
    return isinstance(agent, str) and (agent.startswith(AGENT_PREFIX) or is_inspect_spec(agent))


def parse_agent_spec(agent: str) -> str:
    """The model of an LLM agent spec: MODEL of `openai:MODEL` (the model may itself contain
    ':', as Ollama's do), or the inspect model string itself (`openai-api/local/smollm2`)."""
    if is_inspect_spec(agent):
        return agent.strip()
    if not agent.startswith(AGENT_PREFIX) or not agent[len(AGENT_PREFIX) :].strip():
        raise AgentError(
            f"agent {agent!r} is not an LLM agent spec; expected 'openai:MODEL' or an inspect "
            "model string PROVIDER/MODEL, e.g. openai:gpt-4o-mini, openai:llama3.2:1b, "
            "openai/gpt-5 or openai-api/local/smollm2"
        )
    return agent[len(AGENT_PREFIX) :].strip()


def agent_provider(agent: str, provider: str | None) -> str:
    """The client's `provider` of an agent spec: "inspect" for an inspect model string (which
    names its provider itself), else `--provider` (default "auto")."""
    if not is_inspect_spec(agent):
        return provider or "auto"
    if provider not in (None, "auto"):
        raise AgentError(
            f"--provider {provider} applies to openai:MODEL; {agent!r} is an inspect model "
            "string, whose provider is its first part"
        )
    return "inspect"


def agent_name(client: LLMClient | AsyncLLMClient) -> str:
    """The agent's name of a client: `openai:MODEL`, or the inspect model string."""
    model = str(client.model)
    return model if getattr(client, "_inspect", None) else f"{AGENT_PREFIX}{model}"


def client_options(
    agent: str, store: ResponseCache | None = None, **options: Unpack[BuilderKwargs]
) -> tuple[str, str | None, ClientOptions]:
    """The model, API key and client keyword arguments of an LLM agent spec built with
    `options` (`LlmOptions.builder_kwargs()`, or the API's own names): the one place a suite's
    builder turns options into a client. `temperature=None` is the default: 0 for an ordinary
    model, none sent to a reasoning model (which takes none); a given one is sent to every
    model. The key is read from `api_key_env` now and held by the client's provider only."""
    structured = options.get("structured", "auto")
    if structured not in STRUCTURED_FALLBACKS:
        raise AgentError(
            f"structured must be one of {sorted(STRUCTURED_FALLBACKS)}, got {structured!r}"
        )
    given = cast("BuilderKwargs", {k: v for k, v in options.items() if v is not None})
    api_key = options.get("api_key") or os.environ.get(options.get("api_key_env") or "") or None
    # Each option goes where a field of its name is: the client, its sampling or its retry
    # rules, so an option those declare needs no line here.
    client = cast(
        ClientOptions, {k: v for k, v in given.items() if k in ClientOptions.__annotations__}
    )
    client.update(
        {
            "sampling": _made(Sampling, given),
            "temperature_explicit": "temperature" in given,
            # no --timeout: derived per call (the policy's own default is a fixed 60 s)
            "retry": replace(_made(RetryPolicy, given), timeout_s=given.get("timeout_s")),
            "cache": store,
            "meter": CapMeter(options.get("caps")),
            "provider": agent_provider(agent, options.get("provider")),
        }
    )
    return parse_agent_spec(agent), api_key, client


def _made(cls: type[_T], options: BuilderKwargs) -> _T:
    """`cls` made from the options named as its fields (its defaults for the rest)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in options.items() if k in names})
