"""Agents for suite authors: the agent contracts a suite's environments call, agent resolution
(`resolve_agent`, `--isolate`), isolation errors, and the LLM client, config, budgets, caps
and usage that LLM agents share.

    from labreplay.sdk.agents import CampaignAgent, resolve_agent, LLMClient, RunCaps

Names are imported from the core on first use (PEP 562), so importing this module is cheap
and a name costs what importing it from its core module did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.agents.base import Agent, CallRecord, ResponseCache, call_failures, drain_calls
    from labreplay.agents.contracts import (
        AnswersInBatches,
        CampaignAgent,
        Configuration,
        Observation,
        Optimizer,
        OptimizerHistory,
        QuestionAgent,
        Snapshot,
        Trial,
        acquisition_of,
        bind_response_cache,
        close_agent,
        isolation_of,
        model_of,
        sandbox_of,
    )
    from labreplay.agents.inspect_offline import allow_mockllm_offline, mockllm_offline_state
    from labreplay.agents.isolated import (
        CAMPAIGN_CONTRACT,
        AgentNonJSON,
        AgentUnavailable,
        json_problem,
        plain_repr,
        raised_message,
    )
    from labreplay.agents.llm import (
        AGENT_PREFIX,
        CallLog,
        agent_name,
        agent_provider,
        client_options,
        is_llm_agent,
        parse_agent_spec,
    )
    from labreplay.agents.llm_budget import check_user_budget, response_budget, spend_ceiling
    from labreplay.agents.llm_caps import CapReached, RunCaps
    from labreplay.agents.llm_client import AsyncLLMClient, LLMClient
    from labreplay.agents.llm_config import (
        DEFAULT_MAX_RETRY_WAIT_S,
        StructuredMode,
        public_endpoint,
    )
    from labreplay.agents.llm_inspect import is_builtin_spec
    from labreplay.agents.llm_progress import CallProgress
    from labreplay.agents.llm_tokens import MIN_CACHED_PREFIX_TOKENS, TokenRule, rule_for
    from labreplay.agents.llm_usage import (
        Price,
        add_usage,
        ceiling_line,
        cost,
        parse_price,
        run_price,
        usage_line,
        usage_summary,
    )
    from labreplay.agents.llm_wire import JsonReply, extract_json_object
    from labreplay.agents.resolve import (
        ResolvedAgent,
        build_from_ref,
        resolve_agent,
        resolve_isolated,
    )

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.agents.base": (
        "Agent",
        "CallRecord",
        "ResponseCache",
        "call_failures",
        "drain_calls",
    ),
    "labreplay.agents.contracts": (
        "AnswersInBatches",
        "CampaignAgent",
        "Configuration",
        "Observation",
        "Optimizer",
        "OptimizerHistory",
        "QuestionAgent",
        "Snapshot",
        "Trial",
        "acquisition_of",
        "bind_response_cache",
        "close_agent",
        "isolation_of",
        "sandbox_of",
        "model_of",
    ),
    "labreplay.agents.isolated": (
        "CAMPAIGN_CONTRACT",
        "AgentNonJSON",
        "AgentUnavailable",
        "json_problem",
        "plain_repr",
        "raised_message",
    ),
    "labreplay.agents.llm": (
        "AGENT_PREFIX",
        "CallLog",
        "agent_name",
        "agent_provider",
        "client_options",
        "is_llm_agent",
        "parse_agent_spec",
    ),
    "labreplay.agents.inspect_offline": ("allow_mockllm_offline", "mockllm_offline_state"),
    "labreplay.agents.llm_inspect": ("is_builtin_spec",),
    "labreplay.agents.llm_budget": (
        "check_user_budget",
        "response_budget",
        "spend_ceiling",
    ),
    "labreplay.agents.llm_caps": (
        "CapReached",
        "RunCaps",
    ),
    "labreplay.agents.llm_client": (
        "AsyncLLMClient",
        "LLMClient",
    ),
    "labreplay.agents.llm_config": (
        "DEFAULT_MAX_RETRY_WAIT_S",
        "StructuredMode",
        "public_endpoint",
    ),
    "labreplay.agents.llm_progress": ("CallProgress",),
    "labreplay.agents.llm_usage": (
        "Price",
        "add_usage",
        "ceiling_line",
        "cost",
        "parse_price",
        "run_price",
        "usage_line",
        "usage_summary",
    ),
    "labreplay.agents.llm_tokens": ("MIN_CACHED_PREFIX_TOKENS", "TokenRule", "rule_for"),
    "labreplay.agents.llm_wire": (
        "JsonReply",
        "extract_json_object",
    ),
    "labreplay.agents.resolve": (
        "ResolvedAgent",
        "build_from_ref",
        "resolve_agent",
        "resolve_isolated",
    ),
}

__all__ = [
    "AGENT_PREFIX",
    "CAMPAIGN_CONTRACT",
    "DEFAULT_MAX_RETRY_WAIT_S",
    "MIN_CACHED_PREFIX_TOKENS",
    "Agent",
    "AgentNonJSON",
    "AgentUnavailable",
    "AnswersInBatches",
    "AsyncLLMClient",
    "CallLog",
    "CallProgress",
    "CallRecord",
    "CampaignAgent",
    "CapReached",
    "Configuration",
    "JsonReply",
    "LLMClient",
    "Observation",
    "Optimizer",
    "OptimizerHistory",
    "Price",
    "QuestionAgent",
    "ResolvedAgent",
    "ResponseCache",
    "RunCaps",
    "Snapshot",
    "StructuredMode",
    "TokenRule",
    "Trial",
    "acquisition_of",
    "add_usage",
    "agent_name",
    "agent_provider",
    "allow_mockllm_offline",
    "bind_response_cache",
    "build_from_ref",
    "call_failures",
    "ceiling_line",
    "check_user_budget",
    "client_options",
    "close_agent",
    "cost",
    "drain_calls",
    "extract_json_object",
    "is_builtin_spec",
    "is_llm_agent",
    "isolation_of",
    "json_problem",
    "mockllm_offline_state",
    "model_of",
    "parse_agent_spec",
    "parse_price",
    "plain_repr",
    "public_endpoint",
    "raised_message",
    "resolve_agent",
    "resolve_isolated",
    "response_budget",
    "rule_for",
    "run_price",
    "sandbox_of",
    "spend_ceiling",
    "usage_line",
    "usage_summary",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
