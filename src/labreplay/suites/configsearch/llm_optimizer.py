"""A configsearch optimiser backed by a chat model (`--agent openai:MODEL`).

It implements the one optimiser contract, `labreplay.agents.contracts.Optimizer`
(`name`, `params`, `suggest`, `observe`). Each `suggest` shows the model the problem, the
direction of its objective, the trials so far (initial design included) and the untried
candidates as compact tables, and asks for one JSON object `{"index": I}` naming an untried
candidate (the schema's enum lists exactly those). The chosen candidate is returned as the
suggestion, so a reply outside the enum can never be evaluated.

An LLM failure is data: a call that fails (endpoint down, 200 with a body that is not a chat
completion, no JSON in the reply) makes `suggest` raise `AgentError` naming the endpoint, which
the search records as an invalid step (the step is spent, nothing is evaluated). Every call is
kept in one `CallTally` shared by the optimisers a factory builds (one per seed), so the
command can total calls and tokens and call a run whose every call failed `failed` (unranked).

Histories arrive either as the contract's plain JSON `OptimizerHistory` or as the suite's
older `History` object; both are read through `_plain_history`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, Unpack

from labreplay.errors import AgentError
from labreplay.sdk import canonical_json
from labreplay.sdk.agents import (
    CallRecord,
    Configuration,
    LLMClient,
    OptimizerHistory,
    Trial,
    agent_name,
    client_options,
    usage_summary,
)
from labreplay.sdk.events import JsonObject
from labreplay.sdk.options import BuilderKwargs

PROMPT_VERSION = "lr-llm-configsearch-1"
SYSTEM = (
    "You choose the next configuration to evaluate in a budgeted search over data "
    "configurations of a materials property model. Each message shows the problem, the trials "
    "so far and the untried candidates. Answer with exactly one JSON object that satisfies the "
    "JSON Schema given: no explanations, no markdown."
)
_AXES = ("r", "n", "s", "model")


@dataclass
class CallTally:
    """Every model call of the optimisers built by one factory (all seeds of a run)."""

    calls: list[CallRecord] = field(default_factory=list)

    def usage(self) -> dict[str, object]:
        return usage_summary(self.calls)

    def all_failed(self) -> bool:
        return bool(self.calls) and all(c.get("error") for c in self.calls)


class _Observation(Protocol):
    """One evaluated suggestion of the older `History` object."""

    step: int
    config: Configuration
    model: str | None
    objective: float


class LegacyHistory(Protocol):
    """The suite's older `History` object, as `_plain_history` reads it."""

    problem: str
    direction: str  # "min" | "max"
    budget: int
    candidates: Sequence[Configuration]
    observations: Sequence[_Observation]

    def untried(self) -> Iterable[int]: ...


def _trial(o: _Observation) -> Trial:
    configuration = o.config.copy()
    if o.model:
        configuration["model"] = o.model
    return {"step": o.step, "configuration": configuration, "objective": o.objective}


def _plain_history(history: OptimizerHistory | LegacyHistory) -> OptimizerHistory:
    if isinstance(history, Mapping):
        return OptimizerHistory(**history)
    # The suite's `History` object: untried candidates with their index, trials from
    # observations.
    candidates: list[Configuration] = [
        {**history.candidates[i], "index": i} for i in history.untried()
    ]
    trials = [_trial(o) for o in history.observations]
    direction: Literal["maximize", "minimize"] = (
        "maximize" if history.direction == "max" else "minimize"
    )
    return {
        "problem": history.problem,
        "direction": direction,
        "candidates": candidates,
        "trials": trials,
        "budget": history.budget,
    }


def _row(config: Configuration, axes: Sequence[str]) -> list[object]:
    return [config.get(a) for a in axes]


def suggestion_messages(history: OptimizerHistory) -> tuple[list[dict[str, str]], list[int]]:
    """The chat messages for one suggestion, and the candidate indices the reply may name."""
    candidates = list(history.get("candidates") or [])
    axes = [a for a in _AXES if any(a in c for c in candidates)]
    indices = [int(c.get("index", i)) for i, c in enumerate(candidates)]
    trials = [
        [*_row(t.get("configuration") or {}, axes), t.get("objective")]
        for t in history.get("trials") or []
    ]
    goal = "maximise" if str(history.get("direction", "")).startswith("max") else "minimise"
    lines = [
        f"PROBLEM: {history.get('problem')} (the objective is to {goal}).",
        f"BUDGET: {history.get('budget')} steps; left: {history.get('budget_left', 'unknown')}.",
        "r = fraction of the second data source, n = training size, s = test size.",
        f"TRIALS (columns {canonical_json([*axes, 'objective'])}): {canonical_json(trials)}",
        f"UNTRIED CANDIDATES (columns {canonical_json(['index', *axes])}): "
        + canonical_json([[i, *_row(c, axes)] for i, c in zip(indices, candidates, strict=True)]),
        "Reply with the index of the candidate to evaluate next, valid under this JSON Schema:",
        canonical_json(_schema(indices)),
    ]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "\n".join(lines)},
    ], indices


def _schema(indices: list[int]) -> JsonObject:
    return {
        "type": "object",
        "properties": {"index": {"type": "integer", "enum": [*indices]}},
        "required": ["index"],
        "additionalProperties": False,
    }


class LLMOptimizer:
    """A configsearch optimiser backed by a chat model (name `openai:MODEL`)."""

    def __init__(self, client: LLMClient, tally: CallTally | None = None) -> None:
        self.client = client
        self.name = agent_name(client)
        self.tally = tally if tally is not None else CallTally()
        self._calls = CallTally()  # this search's own calls (the tally spans every seed)

    def model_calls(self) -> list[CallRecord]:
        return [c.copy() for c in self._calls.calls]

    def params(self) -> JsonObject:
        return {**self.client.params(), "prompt_version": PROMPT_VERSION}

    def observe(self, result: Trial) -> None:
        return None  # every trial is in the next history

    def suggest(self, history: OptimizerHistory | LegacyHistory) -> Configuration:
        plain = _plain_history(history)
        messages, indices = suggestion_messages(plain)
        if not indices:
            raise AgentError("no untried candidate left")
        reply = self.client.complete_json(messages, _schema(indices), "suggestion")
        self.tally.calls += [c.copy() for c in reply.calls]
        self._calls.calls += [c.copy() for c in reply.calls]
        value = reply.value
        if not isinstance(value, Mapping) or value.get("index") not in indices:
            raise AgentError(reply.error or f"reply {reply.text!r} names no untried candidate")
        chosen = plain["candidates"][indices.index(int(value["index"]))].copy()
        chosen.pop("index", None)
        chosen.pop("features", None)
        return chosen


def make_factory(
    agent: str, **options: Unpack[BuilderKwargs]
) -> tuple[Callable[[], LLMOptimizer], CallTally]:
    """A zero-argument factory of LLM optimisers (one per seed) sharing one `CallTally`, from
    the one LLM option set (`LlmOptions.builder_kwargs()`)."""
    tally = CallTally()

    def build() -> LLMOptimizer:
        model, api_key, client = client_options(agent, None, **options)
        return LLMOptimizer(LLMClient(model, api_key=api_key, **client), tally)

    build()  # refuse a bad spec or option now, before any work
    return build, tally
