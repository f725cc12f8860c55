"""Shared plumbing of the LLM agents over any OpenAI-compatible endpoint: the agent spec
(`openai:MODEL`, or an inspect model string such as `openai/gpt-5`, `openai-api/local/m` or
`mockllm/model`, served through inspect_ai's model API: `llm_inspect`), the client options
every suite's LLM agent takes, and the per-run call log.

The agents themselves live in their suites (the campaign policy in
`labreplay.suites.campaign.llm_agent`, the conditions question agent in
`labreplay.suites.conditions.llm_agent`), so the core never holds a suite's prompts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from labreplay.agents.base import CallRecord, ResponseCache
from labreplay.agents.llm_caps import CapMeter, CapReached, RunCaps
from labreplay.agents.llm_client import JsonReply
from labreplay.agents.llm_config import (
    DEFAULT_MAX_RETRY_WAIT_S,
    STRUCTURED_FALLBACKS,
    RetryPolicy,
    Sampling,
)
from labreplay.agents.llm_inspect import is_inspect_spec
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from labreplay.agents.llm_client import AsyncLLMClient, ClientOptions, LLMClient
    from labreplay.agents.llm_config import StructuredMode

AGENT_PREFIX = "openai:"
# The sampling temperature of an ordinary model when the user sets none.
DEFAULT_TEMPERATURE = 0.0


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
    base_url: str | None,
    temperature: float | None,
    top_p: float | None,
    seed: int | None,
    max_tokens: int | None,
    timeout_s: float | None,
    max_retries: int,
    max_repairs: int,
    structured: str,
    store: ResponseCache | None,
    caps: RunCaps | None = None,
    *,
    token_param: str = "auto",
    reasoning_effort: str | None = None,
    reasoning_tokens: int | None = None,
    max_retry_wait_s: float = DEFAULT_MAX_RETRY_WAIT_S,
    call_time_s: float | None = None,
    provider: str = "auto",
) -> ClientOptions:
    """The LLM client's keyword arguments. `temperature=None` is the default: 0 for an
    ordinary model, none sent to a reasoning model (which takes none); a given temperature is
    sent to every model."""
    if structured not in STRUCTURED_FALLBACKS:
        raise AgentError(
            f"structured must be one of {sorted(STRUCTURED_FALLBACKS)}, got {structured!r}"
        )
    return {
        "base_url": base_url,
        "sampling": Sampling(
            temperature=DEFAULT_TEMPERATURE if temperature is None else temperature,
            top_p=top_p,
            seed=seed,
            max_tokens=max_tokens,
            reasoning_effort=reasoning_effort,
        ),
        "temperature_explicit": temperature is not None,
        "retry": RetryPolicy(
            max_retries=max_retries,
            timeout_s=timeout_s,
            max_retry_wait_s=max_retry_wait_s,
            call_time_s=call_time_s,
        ),
        "structured": cast("StructuredMode", structured),  # a key of STRUCTURED_FALLBACKS
        "max_repairs": max_repairs,
        "cache": store,
        "meter": CapMeter(caps),
        "token_param": token_param,
        "reasoning_tokens": reasoning_tokens,
        "provider": provider,
    }
