"""Resolving a campaign agent: a reference agent by name, `openai:MODEL`, the oracle, or the
user's agent (an object, a factory, a registered name, `MODULE:ATTR`, isolated on request)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labreplay.errors import AgentError
from labreplay.sdk.agents import Agent, ResolvedAgent
from labreplay.suites.campaign.agents import ORACLE_NAME, REFERENCE_AGENTS

AgentFactory = Callable[[], Agent]
# Where an isolated child process finds the reference agents (module:attribute).
ISOLATED_FACTORY = "labreplay.suites.campaign.agents:REFERENCE_AGENTS"


def _llm_factory(name: str, **options: Any) -> AgentFactory:
    try:
        from labreplay.suites.campaign.llm_agent import make_agent
    except ImportError as exc:
        raise AgentError(f"LLM agents are unavailable: {exc}") from exc

    def build() -> Agent:
        agent = make_agent(name, **options)
        if not isinstance(agent, Agent):
            raise AgentError(f"{name} did not build a campaign agent")
        return agent

    return build


def resolve_campaign_agent(
    agent: Any,
    isolate: bool = False,
    agent_timeout_s: float | None = None,
    **options: Any,
) -> ResolvedAgent:
    """Any campaign agent (object, factory, reference or registered name, `MODULE:ATTR`,
    `openai:MODEL`, or `oracle`: the labelled ceiling that reads each spec's evaluator record,
    run on the adaptive branch only and never ranked), checked against `CampaignAgent` before
    anything runs.

    `isolate=True` serves a Python agent from a child process that receives only observations
    (`labreplay.agents.isolated`; its module is imported there, never here), each call
    answered within `agent_timeout_s` (default 60 s) or the run is recorded failed.
    """
    from labreplay.sdk.agents import CampaignAgent, ResolvedAgent, is_llm_agent, resolve_agent

    if isolate:
        from labreplay.sdk.agents import CAMPAIGN_CONTRACT, resolve_isolated

        if is_llm_agent(agent):
            raise AgentError(
                f"agent {agent!r}: --isolate runs Python agents; an LLM agent already sends the "
                "model only the visible state"
            )
        builtin_refs = {name: f"{ISOLATED_FACTORY}[{name}]" for name in REFERENCE_AGENTS}
        # the child builds and checks the agent: refused here, exit 2
        return resolve_isolated(
            agent, CAMPAIGN_CONTRACT, agent_timeout_s, builtin_refs=builtin_refs
        )
    if agent == ORACLE_NAME:
        from labreplay.suites.campaign.agents import OracleAgent

        def per_spec_only() -> Agent:
            raise AgentError(
                "agent 'oracle' reads each spec's evaluator record: run it with "
                "run_assignments (or `campaign run --agent oracle`), which builds one per spec"
            )

        ceiling = OracleAgent({})
        return ResolvedAgent(
            agent, per_spec_only, ceiling.name, ceiling.params(), None, ORACLE_NAME, None
        )
    if isinstance(agent, str) and is_llm_agent(agent):
        make = _llm_factory(agent, **options)
        llm = make()
        return ResolvedAgent(agent, make, llm.name, llm.params(), None, agent, llm)
    builtins = {name: cls for name, cls in REFERENCE_AGENTS.items()}
    return resolve_agent(
        agent,
        CampaignAgent,
        builtins=builtins,
        builtin_ref=ISOLATED_FACTORY,
        also_known=(ORACLE_NAME,),
    )


def agent_factory(name: Any, isolate: bool = False, **options: Any) -> AgentFactory:
    """A factory for any campaign agent (see `resolve_campaign_agent`)."""
    timeout_s = options.pop("agent_timeout_s", None)
    return resolve_campaign_agent(name, isolate, timeout_s, **options).make


__all__ = ["ISOLATED_FACTORY", "AgentFactory", "agent_factory", "resolve_campaign_agent"]
