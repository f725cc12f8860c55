"""`campaign run --agent openai:MODEL --dry-run`: what a run would send, without calling a model.

Every branch (adaptive and each control) is played out by a stand-in policy that answers
each schema with a valid reply (`labreplay.testing.schema_server.instance`: finish the open
experiment, select the next, forecast when required) while the real prompt renderer of the LLM
agent turns every observation and checkpoint into the exact messages the model would receive.
So calls and prompt sizes are the real prompts of a plausible campaign under the same budgets
and caps, not a formula; a real model that inspects more evidence or repairs replies makes
more calls (measured against real runs in `make bench`; see the README).

Tokens follow the one declared rule of every dry run (`labreplay.sdk.agents.token_rule`:
o200k_base where tiktoken has it offline, else characters / 4), completion tokens the
stand-in replies' size under the same rule; the response budget of every call is derived as
in a real run. `cached_tokens` is what a provider's prefix cache would serve: each prompt's
common prefix with the branch's previous one, from 1,024 tokens on (`cached_prefix_tokens`).
Measured against a run on the schema-answering server (short-1, long-1): the
same calls per branch and the same prompt characters.

`upper_bound` is what an agent that spends everything could cost per branch: the harness's
policy-turn cap of the branch (`caps.policy_turn_caps`) plus a panel checkpoint per experiment
the budget allows and two more, each a logical request whose every reply fills its whole
response budget (plus the reasoning budget of a reasoning model) and is refused up to
`max_repairs` times (`spend_ceiling`). Calls and completion tokens are strict bounds; prompt
tokens take every request at the largest prompt the stand-in trajectory rendered (a longer
history renders longer prompts), so they are a scale, not a bound. No provider cache assumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from labreplay.sdk.agents import (
    cached_prefix_tokens,
    chat_tokens,
    count_tokens,
    response_budget,
    spend_ceiling,
    token_rule,
)
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.testing import FINISHING, instance
from labreplay.suites.campaign.actions import ActionReply, ForecastReply
from labreplay.suites.campaign.caps import policy_turn_caps
from labreplay.suites.campaign.json_values import json_object
from labreplay.suites.campaign.runner import run_assignment_branches
from labreplay.suites.campaign.views import spec_body


class BranchTally(TypedDict):
    calls: int
    policy_calls: int
    checkpoint_calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    prompt_chars: int
    largest_prompt_tokens: int
    largest_response_budget: int
    first_prompt: str


class SpendCeiling(TypedDict):
    calls: int
    prompt_tokens: int  # at the largest prompt rendered: a scale, not a bound
    completion_tokens: int


class AssignmentDryRun(TypedDict):
    assignment: str
    partition_seed: int  # the compile seed of the spec's partition (its assignments and panel)
    branches: dict[str, BranchTally]
    upper_bound: SpendCeiling


class DryRunEstimate(TypedDict):
    dry_run: bool
    agent: str
    token_rule: str
    partition_seeds: list[int]  # of the assignments estimated, each once
    seed: int  # the run seed the estimate played (each branch's stream derives from it)
    assignments: list[AssignmentDryRun]
    total: dict[str, int]  # the `TOTALLED` counts over every branch
    controls: dict[str, int]  # the same over the control branches
    upper_bound: SpendCeiling  # over every branch (see the module's docstring)
    upper_bound_rule: str
    cost: NotRequired[float | None]  # USD at the run's prices (added by the caller)
    cost_uncached: NotRequired[float | None]
    upper_bound_cost: NotRequired[float | None]


UPPER_BOUND_RULE = (
    "an agent that spends everything: per branch the policy-turn cap plus a checkpoint per "
    "experiment and two, every reply its whole response budget and refused max_repairs times; "
    "calls and completion tokens strict, prompt tokens at the largest prompt rendered"
)
TOTALLED: tuple[Literal["calls", "prompt_tokens", "cached_tokens", "completion_tokens"], ...] = (
    "calls",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
)


@dataclass
class Tally:
    calls: int = 0
    policy_calls: int = 0
    checkpoint_calls: int = 0
    prompt_chars: int = 0
    reply_chars: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # what a provider's prefix cache would serve (`cached_prefix_tokens`)
    reply_tokens: int = 0
    largest_prompt_tokens: int = 0
    largest_budget: int = 0
    first_prompts: list[str] = field(default_factory=list)
    last_prompt: str = ""

    def add(
        self, messages: Sequence[Mapping[str, str]], reply: JsonValue, schema: Mapping[str, object]
    ) -> None:
        chars = sum(len(m["content"]) for m in messages)
        tokens = chat_tokens(messages)
        text = json.dumps(reply)
        prompt = "\n".join(m["content"] for m in messages)
        self.cached_tokens += cached_prefix_tokens(self.last_prompt, prompt)
        self.last_prompt = prompt
        self.calls += 1
        self.prompt_chars += chars
        self.prompt_tokens += tokens
        self.reply_chars += len(text)
        self.reply_tokens += count_tokens(text)
        self.largest_prompt_tokens = max(self.largest_prompt_tokens, tokens)
        self.largest_budget = max(self.largest_budget, response_budget(schema))
        if len(self.first_prompts) < 2:
            self.first_prompts.append(messages[-1]["content"])


class DryRunAgent:
    """Renders what the LLM agent would send and answers with a valid stand-in reply."""

    def __init__(
        self, name: str, params: Mapping[str, JsonValue], tallies: dict[str, Tally]
    ) -> None:
        from labreplay.suites.campaign.llm_prompts import StateLayout

        self.name, self._params, self._tallies = name, dict(params), tallies
        self.tally = Tally()  # until the runner says which branch this agent plays
        self._layout = StateLayout()

    def params(self) -> JsonObject:
        return dict(self._params)

    def begin_episode(self, spec_id: str, spec_hash: str, branch: str, seed: int) -> None:
        """The runner names the branch this agent plays: its calls are tallied there."""
        self.tally = self._tallies.setdefault(branch, Tally())

    def reset(self, seed: int) -> None:
        self._layout.reset()

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        from labreplay.suites.campaign.llm_prompts import campaign_messages

        schema = json_object(observation.get("action_schema", {}), "action_schema")
        reply = instance(schema, FINISHING)
        self.tally.add(campaign_messages(observation, self._layout), reply, schema)
        self.tally.policy_calls += 1
        return dict(reply)

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        from labreplay.suites.campaign.llm_panel import panel_wire
        from labreplay.suites.campaign.llm_prompts import checkpoint_messages

        schema = json_object(snapshot.get("response_schema", {}), "response_schema")
        wire = panel_wire(schema)  # what the LLM agent asks for (`llm_panel`)
        asked = schema if wire is None else wire.schema
        reply = instance(asked, FINISHING)
        self.tally.add(checkpoint_messages(snapshot, self._layout), reply, asked)
        self.tally.checkpoint_calls += 1
        return dict(reply if wire is None else wire.decode(reply))


def dry_run_assignment(
    spec: EnvironmentSpec,
    agent_name: str,
    params: Mapping[str, JsonValue],
    seed: int,
    controls: tuple[str, ...],
) -> AssignmentDryRun:
    """Per branch: calls (policy / checkpoint), prompt and completion tokens, the largest
    prompt and response budget, and the first prompt rendered."""
    tallies: dict[str, Tally] = {}

    def make() -> DryRunAgent:
        return DryRunAgent(agent_name, params, tallies)

    run_assignment_branches(spec, make, None, seed, controls)
    branches: dict[str, BranchTally] = {
        b: {
            "calls": t.calls,
            "policy_calls": t.policy_calls,
            "checkpoint_calls": t.checkpoint_calls,
            "prompt_tokens": t.prompt_tokens,
            "cached_tokens": t.cached_tokens,
            "completion_tokens": t.reply_tokens,
            "prompt_chars": t.prompt_chars,
            "largest_prompt_tokens": t.largest_prompt_tokens,
            "largest_response_budget": t.largest_budget,
            "first_prompt": t.first_prompts[0] if t.first_prompts else "",
        }
        for b, t in tallies.items()
    }
    return {
        "assignment": spec.body["assignment"]["id"],
        "partition_seed": int(spec_body(spec.body)["seed"]),
        "branches": branches,
        "upper_bound": _ceiling(spec, params, list(tallies.values())),
    }


def _ceiling(
    spec: EnvironmentSpec, params: Mapping[str, JsonValue], tallies: Sequence[Tally]
) -> SpendCeiling:
    """The spend of an agent that spends everything, summed over the branches played."""
    body = spec_body(spec.body)
    experiments = min(int(body["budgets"]["experiments"]), len(body["candidates"]))
    logical = policy_turn_caps(body)["policy_turns_per_branch"] + experiments + 2
    repairs = params.get("max_repairs", 2)
    reasoning = params.get("reasoning_tokens", 0)
    out: SpendCeiling = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for tally in tallies:
        budget = tally.largest_budget + (reasoning if isinstance(reasoning, int) else 0)
        calls, prompt, completion = spend_ceiling(
            tally.largest_prompt_tokens, budget, repairs if isinstance(repairs, int) else 2
        )
        out["calls"] += logical * calls
        out["prompt_tokens"] += logical * prompt
        out["completion_tokens"] += logical * completion
    return out


def dry_run(
    specs: Sequence[EnvironmentSpec],
    agent_name: str,
    params: Mapping[str, JsonValue],
    seed: int,
    controls: tuple[str, ...],
) -> DryRunEstimate:
    """The whole command's estimate: per assignment, and totals with the controls' share."""
    per = [dry_run_assignment(s, agent_name, params, seed, controls) for s in specs]
    total: dict[str, int] = dict.fromkeys(TOTALLED, 0)
    controls_total = dict(total)
    for a in per:
        for b, t in a["branches"].items():
            for k in TOTALLED:
                total[k] += t[k]
                if b != "adaptive":
                    controls_total[k] += t[k]
    ceiling: SpendCeiling = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for a in per:
        for name in ("calls", "prompt_tokens", "completion_tokens"):
            ceiling[name] += a["upper_bound"][name]
    return {
        "dry_run": True,
        "agent": agent_name,
        "token_rule": token_rule(),
        "partition_seeds": sorted({a["partition_seed"] for a in per}),
        "seed": seed,
        "assignments": per,
        "total": total,
        "controls": controls_total,
        "upper_bound": ceiling,
        "upper_bound_rule": UPPER_BOUND_RULE,
    }
