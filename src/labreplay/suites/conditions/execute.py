"""Resolving a conditions agent: a reference agent by name, the LLM agent, or the user's
agent (an object, a factory, a registered name, `MODULE:ATTR`, isolated on request). The runner
(`labreplay.engine.runner`) plays it; `labreplay.suites.conditions.episodes` says how."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labreplay.errors import AgentError
from labreplay.sdk.agents import ResolvedAgent, resolve_agent, resolve_isolated
from labreplay.suites.conditions.agents import QuestionAgent, reference_agent
from labreplay.suites.conditions.questions import Question

QUESTION_CONTRACT = "labreplay.agents.contracts:QuestionAgent"


BUILTIN_AGENTS = ("random", "ranker", "usual_winner", "exclusion", "precedent_ranker", "llm")


def resolve_question_agent(
    agent: object,
    questions: Sequence[Question],
    seed: int,
    model: str | None = None,
    options: Mapping[str, object] | None = None,
    *,
    isolate: bool = False,
    agent_timeout_s: float | None = None,
) -> ResolvedAgent:
    """Any conditions agent: `random`, `ranker`, `llm` (with `model`), an object or factory
    implementing `QuestionAgent`, a registered name or `MODULE:ATTR`; checked against the
    contract before anything runs (one AgentError line otherwise). `isolate=True` serves an
    importable agent from a child process that receives only question views, each answer
    due within `agent_timeout_s` (60 s) or the run is recorded failed."""
    if isolate:
        if isinstance(agent, str) and agent in BUILTIN_AGENTS:
            raise AgentError(
                f"agent {agent!r}: --isolate runs your Python agents (MODULE:ATTR or a "
                "registered name); the reference agents need no isolation"
            )
        return resolve_isolated(agent, QUESTION_CONTRACT, agent_timeout_s)
    if isinstance(agent, str) and agent in BUILTIN_AGENTS:
        built = _builtin(agent, questions, seed, model, options)
        # An LLM agent is labelled with its model as given: its batches are rebuilt from it.
        label = model if agent == "llm" and model else agent
        return ResolvedAgent(label, lambda: built, built.name, built.params(), None, agent, built)
    return resolve_agent(agent, QuestionAgent, also_known=BUILTIN_AGENTS)


def _builtin(
    name: str,
    questions: Sequence[Question],
    seed: int,
    model: str | None,
    options: Mapping[str, object] | None,
) -> QuestionAgent:
    if name == "llm":
        from labreplay.suites.conditions.llm_agent import conditions_agent

        return conditions_agent(model=model, seed=seed, **dict(options or {}))
    return reference_agent(name, questions, seed)


__all__ = ["BUILTIN_AGENTS", "resolve_question_agent"]
