"""`campaign run --agent openai:MODEL --dry-run`: what a run would send, without calling a model.

Every branch (adaptive and each control) is played out by stand-in policies that answer each
schema with a valid reply (`labreplay.testing.schema_server.instance`: finish the open
experiment, select the next, forecast when required) while the real prompt renderer of the LLM
agent turns every observation and checkpoint into the exact messages the model would receive.
Three stand-ins play (`EVIDENCE_SHARES`): one that inspects nothing, one that spends half and
one that spends all of the evidence and expert-review budgets, the cheapest offered kind first
(the most inspections, each followed by its required forecast), deterministic under the run
seed. The estimate is the range (min-max) over the three: a model that inspects evidence lands
inside it; one that repairs replies makes more calls. So calls and prompt sizes are the real
prompts of plausible campaigns under the same budgets and caps, not a formula.

Tokens follow the model's tokenizer where this machine has it, else the word-piece fallback
(`labreplay.sdk.agents.rule_for`, named in the estimate); completion tokens the stand-in
replies' size under the same rule; the response budget of every call is derived as in a real
run. `cached_tokens` is what a provider's prefix cache would serve: each prompt's common prefix
with the branch's previous one, from 1,024 tokens on (`TokenRule.cached_prefix`); for Anthropic
(`provider: anthropic`), which serves only a prefix ending where an earlier request wrote a
cache entry, the longest such entry (inspect writes one at the system message, the
second-to-last and the last message of each request). A reasoning
model's hidden reasoning is not in the range (no stand-in can know it): `reasoning` prices it at
`REASONING_SHARES` of its per-call budget over the range's calls.

`upper_bound` is what an agent that spends everything could cost per branch: the harness's
policy-turn cap of the branch (`caps.policy_turn_caps`) plus a panel checkpoint per experiment
the budget allows and two more, each a logical request whose every reply fills its whole
response budget (plus the reasoning budget of a reasoning model) and is refused up to
`max_repairs` times (`spend_ceiling`). Calls and completion tokens are strict bounds; prompt
tokens take every request at the largest prompt a stand-in rendered (a longer history renders
longer prompts), so they are a scale, not a bound. No provider cache assumed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from labreplay.sdk.agents import (
    MIN_CACHED_PREFIX_TOKENS,
    TokenRule,
    response_budget,
    rule_for,
    spend_ceiling,
)
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.testing import FINISHING, instance
from labreplay.suites.campaign.actions import ActionReply, ForecastReply
from labreplay.suites.campaign.caps import policy_turn_caps
from labreplay.suites.campaign.json_values import json_object
from labreplay.suites.campaign.runner import run_assignment_branches
from labreplay.suites.campaign.views import spec_body

# Percent of the evidence and expert-review budgets each stand-in spends: the range's ends.
EVIDENCE_SHARES = (0, 50, 100)
# Percent of a reasoning model's per-call reasoning budget the reasoning line prices.
REASONING_SHARES = (25, 50, 100)


class BranchTally(TypedDict):
    calls: int
    policy_calls: int
    checkpoint_calls: int
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
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


class StandInPlay(TypedDict):
    evidence_share: int  # percent of the evidence and review budgets the stand-in spent
    assignments: list[AssignmentDryRun]
    total: dict[str, int]  # the `TOTALLED` counts over every branch
    controls: dict[str, int]  # the same over the control branches
    cost: NotRequired[float | None]  # USD at the run's prices (added by the caller)
    cost_uncached: NotRequired[float | None]


class ReasoningAt(TypedDict):
    share: int  # percent of the per-call reasoning budget
    tokens: list[int]  # [min, max] over the range's calls
    cost: NotRequired[list[float] | None]  # added by the caller


class ReasoningEstimate(TypedDict):
    budget_per_call: int  # `--reasoning-tokens` (or the default sent to a reasoning model)
    at: list[ReasoningAt]


class DryRunEstimate(TypedDict):
    dry_run: bool
    agent: str
    token_rule: str
    partition_seeds: list[int]  # of the assignments estimated, each once
    seed: int  # the run seed the estimate played (each branch's stream derives from it)
    plays: list[StandInPlay]  # one per `EVIDENCE_SHARES`
    range: dict[str, list[int]]  # per `TOTALLED` count: [min, max] over the plays
    range_rule: str
    reasoning_included: bool  # whether the range's completion tokens hold hidden reasoning
    reasoning: NotRequired[ReasoningEstimate]  # a reasoning model's, apart from the range
    upper_bound: SpendCeiling  # over every branch (see the module's docstring)
    upper_bound_rule: str
    cost_range: NotRequired[list[float] | None]  # [min, max] USD with prefix caching (caller)
    cost_uncached_range: NotRequired[list[float] | None]
    upper_bound_cost: NotRequired[float | None]


RANGE_RULE = (
    "min-max over stand-ins that spend 0%, 50% and 100% of the evidence and review budgets "
    "(a model that inspects evidence lands inside; repair turns add calls)"
)
UPPER_BOUND_RULE = (
    "an agent that spends everything: per branch the policy-turn cap plus a checkpoint per "
    "experiment and two, every reply its whole response budget and refused max_repairs times; "
    "calls and completion tokens strict, prompt tokens at the largest prompt rendered"
)
Totalled = Literal[
    "calls", "prompt_tokens", "cached_tokens", "cache_write_tokens", "completion_tokens"
]
TOTALLED: tuple[Totalled, ...] = (
    "calls",
    "prompt_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "completion_tokens",
)


@dataclass
class Tally:
    rule: TokenRule
    calls: int = 0
    policy_calls: int = 0
    checkpoint_calls: int = 0
    prompt_chars: int = 0
    reply_chars: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # what a provider's prefix cache would serve (`cached_prefix`)
    cache_write_tokens: int = 0  # what a message-boundary cache writes (billed at its rate)
    reply_tokens: int = 0
    largest_prompt_tokens: int = 0
    largest_budget: int = 0
    first_prompts: list[str] = field(default_factory=list)
    last_prompt: str = ""
    # The provider caches at message boundaries (Anthropic): what earlier requests wrote.
    by_message: bool = False
    written: dict[tuple[tuple[str, str], ...], int] = field(default_factory=dict)

    def add(
        self, messages: Sequence[Mapping[str, str]], reply: JsonValue, schema: Mapping[str, object]
    ) -> None:
        chars = sum(len(m["content"]) for m in messages)
        tokens = self.rule.chat(messages)
        text = json.dumps(reply)
        prompt = "\n".join(m["content"] for m in messages)
        if self.by_message:
            hit, written = self._written_prefix(messages)
            self.cached_tokens += hit
            self.cache_write_tokens += written
        else:
            self.cached_tokens += self.rule.cached_prefix(self.last_prompt, prompt)
        self.last_prompt = prompt
        self.calls += 1
        self.prompt_chars += chars
        self.prompt_tokens += tokens
        self.reply_chars += len(text)
        self.reply_tokens += self.rule.count(text)
        self.largest_prompt_tokens = max(self.largest_prompt_tokens, tokens)
        self.largest_budget = max(self.largest_budget, response_budget(schema))
        if len(self.first_prompts) < 2:
            self.first_prompts.append(prompt)

    def _written_prefix(self, messages: Sequence[Mapping[str, str]]) -> tuple[int, int]:
        """The tokens a message-boundary cache serves and writes: served, the longest entry an
        earlier request wrote that begins this one (from MIN_CACHED_PREFIX_TOKENS); written,
        the tokens past it up to the last entry this request writes (Anthropic bills them at
        its cache-write rate). inspect's anthropic provider writes three per request: at the
        system message, the second-to-last message and the last (`cache_control`)."""
        key = tuple((m["role"], m["content"]) for m in messages)
        hit = max((n for k, n in self.written.items() if key[: len(k)] == k), default=0)
        hit = hit if hit >= MIN_CACHED_PREFIX_TOKENS else 0
        written_to = hit
        for end in (1, len(key) - 1, len(key)):
            if end > 0 and key[:end] not in self.written:
                self.written[key[:end]] = tokens = self.rule.chat(messages[:end])
                if tokens >= MIN_CACHED_PREFIX_TOKENS:
                    written_to = max(written_to, tokens)
        return hit, written_to - hit


def spending_preference(
    observation: Mapping[str, JsonValue], share: int
) -> tuple[tuple[str, ...], str | None]:
    """The stand-in's order of actions, and the kind it inspects: it buys evidence (the
    cheapest kind offered) and then a review while its spend stays within `share` percent of
    each budget, else it finishes (`FINISHING`)."""
    state = json_object(observation.get("state", {}), "state")
    left = json_object(state.get("budgets_left", {}), "budgets_left")
    total = json_object(state.get("budgets_total", {}), "budgets_total")
    prices = json_object(state.get("evidence_prices", {}), "evidence_prices")

    def fits(budget: str, price: int) -> bool:
        whole, rest = int(str(total.get(budget, 0))), int(str(left.get(budget, 0)))
        return 100 * (whole - rest + price) <= share * whole

    def price(kind: str) -> int:
        return int(str(prices.get(kind, 1)))

    kind = min(_inspectable_kinds(observation.get("action_schema", {})), key=price, default=None)
    buys = kind is not None and fits("evidence", price(kind))
    prefer = ("inspect_evidence",) * buys + ("request_review",) * fits("reviews", 1)
    return prefer + FINISHING, kind


def _inspectable_kinds(schema: JsonValue) -> list[str]:
    variants = json_object(schema, "action_schema").get("oneOf", [])
    for variant in variants if isinstance(variants, list) else []:
        props = json_object(variant, "variant").get("properties", {})
        props = json_object(props, "properties")
        if json_object(props.get("type", {}), "type").get("const") == "inspect_evidence":
            kinds = json_object(props.get("kind", {}), "kind").get("enum", [])
            return [str(k) for k in kinds] if isinstance(kinds, list) else []
    return []


class DryRunAgent:
    """Renders what the LLM agent would send and answers with a valid stand-in reply, spending
    `share` percent of the evidence and review budgets."""

    def __init__(
        self,
        name: str,
        params: Mapping[str, JsonValue],
        tallies: dict[str, Tally],
        share: int,
        rule: TokenRule,
    ) -> None:
        from labreplay.suites.campaign.llm_prompts import Conversation

        self.name, self._params, self._tallies = name, dict(params), tallies
        self._share, self._rule = share, rule
        # Anthropic's cache serves prefixes that end where an earlier request wrote an entry.
        self._by_message = params.get("provider") == "anthropic"
        self.tally = Tally(rule)  # until the runner says which branch this agent plays
        self._chat = Conversation()

    def params(self) -> JsonObject:
        return dict(self._params)

    def begin_episode(self, spec_id: str, spec_hash: str, branch: str, seed: int) -> None:
        """The runner names the branch this agent plays: its calls are tallied there."""
        self.tally = self._tallies.setdefault(
            branch, Tally(self._rule, by_message=self._by_message)
        )

    def reset(self, seed: int) -> None:
        self._chat.reset()

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        from labreplay.suites.campaign.llm_prompts import campaign_messages

        schema = json_object(observation.get("action_schema", {}), "action_schema")
        prefer, kind = spending_preference(observation, self._share)
        reply = dict(instance(schema, prefer))
        if reply.get("type") == "inspect_evidence":
            reply["kind"] = kind
        self.tally.add(campaign_messages(observation, self._chat), reply, schema)
        self._chat.answered(reply)
        self.tally.policy_calls += 1
        return reply

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        from labreplay.suites.campaign.llm_panel import panel_wire
        from labreplay.suites.campaign.llm_prompts import checkpoint_messages

        schema = json_object(snapshot.get("response_schema", {}), "response_schema")
        wire = panel_wire(schema)  # what the LLM agent asks for (`llm_panel`)
        asked = schema if wire is None else wire.schema
        reply = instance(asked, FINISHING)
        self.tally.add(checkpoint_messages(snapshot, self._chat), reply, asked)
        self.tally.checkpoint_calls += 1
        return dict(reply if wire is None else wire.decode(reply))


def dry_run_assignment(
    spec: EnvironmentSpec,
    agent_name: str,
    params: Mapping[str, JsonValue],
    seed: int,
    controls: tuple[str, ...],
    share: int = 0,
) -> AssignmentDryRun:
    """Per branch: calls (policy / checkpoint), prompt and completion tokens, the largest
    prompt and response budget, and the first prompt rendered, for the stand-in that spends
    `share` percent of the evidence and review budgets."""
    tallies: dict[str, Tally] = {}
    rule = rule_for(_model(agent_name, params))

    def make() -> DryRunAgent:
        return DryRunAgent(agent_name, params, tallies, share, rule)

    run_assignment_branches(spec, make, None, seed, controls)
    branches: dict[str, BranchTally] = {
        b: {
            "calls": t.calls,
            "policy_calls": t.policy_calls,
            "checkpoint_calls": t.checkpoint_calls,
            "prompt_tokens": t.prompt_tokens,
            "cached_tokens": t.cached_tokens,
            "cache_write_tokens": t.cache_write_tokens,
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


def _model(agent_name: str, params: Mapping[str, JsonValue]) -> str:
    model = params.get("model")
    return model if isinstance(model, str) else agent_name


def _ceiling(
    spec: EnvironmentSpec, params: Mapping[str, JsonValue], tallies: Sequence[Tally]
) -> SpendCeiling:
    """The spend of an agent that spends everything, summed over the branches played."""
    body = spec_body(spec.body)
    experiments = min(int(body["budgets"]["experiments"]), len(body["candidates"]))
    logical = policy_turn_caps(body)["policy_turns_per_branch"] + experiments + 2
    repairs = params.get("max_repairs", 2)
    out: SpendCeiling = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for tally in tallies:
        budget = tally.largest_budget + reasoning_budget(params)
        calls, prompt, completion = spend_ceiling(
            tally.largest_prompt_tokens, budget, repairs if isinstance(repairs, int) else 2
        )
        out["calls"] += logical * calls
        out["prompt_tokens"] += logical * prompt
        out["completion_tokens"] += logical * completion
    return out


def reasoning_budget(params: Mapping[str, JsonValue]) -> int:
    """The reasoning tokens a call may spend: a reasoning model's params carry them."""
    reasoning = params.get("reasoning_tokens", 0)
    return reasoning if isinstance(reasoning, int) else 0


def _play(
    specs: Sequence[EnvironmentSpec],
    agent_name: str,
    params: Mapping[str, JsonValue],
    seed: int,
    controls: tuple[str, ...],
    share: int,
) -> StandInPlay:
    per = [dry_run_assignment(s, agent_name, params, seed, controls, share) for s in specs]
    total: dict[str, int] = dict.fromkeys(TOTALLED, 0)
    controls_total = dict(total)
    for a in per:
        for b, t in a["branches"].items():
            for k in TOTALLED:
                total[k] += t[k]
                if b != "adaptive":
                    controls_total[k] += t[k]
    return {
        "evidence_share": share,
        "assignments": per,
        "total": total,
        "controls": controls_total,
    }


def dry_run(
    specs: Sequence[EnvironmentSpec],
    agent_name: str,
    params: Mapping[str, JsonValue],
    seed: int,
    controls: tuple[str, ...],
) -> DryRunEstimate:
    """The whole command's estimate: per stand-in and assignment, the range over the stand-ins,
    a reasoning model's reasoning apart, and the ceiling."""
    plays = [_play(specs, agent_name, params, seed, controls, s) for s in EVIDENCE_SHARES]
    spans: dict[str, list[int]] = {
        k: [min(p["total"][k] for p in plays), max(p["total"][k] for p in plays)] for k in TOTALLED
    }
    ceiling: SpendCeiling = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for i in range(len(specs)):  # each assignment's largest ceiling over the stand-ins
        for name in ("calls", "prompt_tokens", "completion_tokens"):
            ceiling[name] += max(p["assignments"][i]["upper_bound"][name] for p in plays)
    first = plays[0]["assignments"]
    estimate: DryRunEstimate = {
        "dry_run": True,
        "agent": agent_name,
        "token_rule": rule_for(_model(agent_name, params)).name,
        "partition_seeds": sorted({a["partition_seed"] for a in first}),
        "seed": seed,
        "plays": plays,
        "range": spans,
        "range_rule": RANGE_RULE,
        "reasoning_included": False,
        "upper_bound": ceiling,
        "upper_bound_rule": UPPER_BOUND_RULE,
    }
    budget = reasoning_budget(params)
    if budget:
        low, high = spans["calls"]
        estimate["reasoning"] = {
            "budget_per_call": budget,
            "at": [
                {"share": s, "tokens": [low * budget * s // 100, high * budget * s // 100]}
                for s in REASONING_SHARES
            ],
        }
    return estimate
