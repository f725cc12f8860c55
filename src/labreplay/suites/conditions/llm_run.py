"""The LLM parts of `conditions run`: the up-front budget check, the dry run and the usage
line. Kept apart from the CLI module so the command stays thin."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NotRequired, Protocol, TypedDict, runtime_checkable

from labreplay.sdk.agents import (
    Price,
    ceiling_line,
    check_user_budget,
    cost,
    response_budget,
    rule_for,
    spend_ceiling,
    usage_line,
)
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.questions import Question, QuestionView, agent_view

if TYPE_CHECKING:
    from rich.console import Console

    from labreplay.suites.conditions.agents import QuestionAgent


@runtime_checkable
class RendersQuestions(Protocol):
    """An agent that renders its own prompts (the LLM agent): what a dry run can estimate."""

    name: str

    def render(self, view: QuestionView, /) -> str: ...

    def params(self) -> Mapping[str, JsonValue]: ...


class DryRun(TypedDict):
    dry_run: bool
    agent: str
    questions: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    largest_prompt_tokens: int
    token_rule: str
    first_prompt: str
    # An agent that spends everything: every reply fills its whole response budget (plus a
    # reasoning model's reasoning budget) and is refused max_repairs times (`spend_ceiling`);
    # strict bounds, each question's own prompt and budget.
    upper_bound: dict[str, int]
    cost: NotRequired[float | None]
    upper_bound_cost: NotRequired[float | None]


def _schema(view: QuestionView) -> JsonObject:
    from labreplay.suites.conditions.llm_prompts import question_schema

    return question_schema(view)


def check_answer_budget(questions: Sequence[Question], max_tokens: int | None) -> None:
    """Refuse a `--max-tokens` too small for the largest answer schema of `questions`."""
    if max_tokens is None or not questions:
        return
    largest = max((_schema(agent_view(q)) for q in questions), key=response_budget)
    check_user_budget(max_tokens, largest, "the largest answer of these questions")


def estimate(agent: RendersQuestions, questions: Sequence[Question]) -> DryRun:
    """Calls and tokens of answering `questions` with `agent` (one call per question when every
    reply is valid; repairs add calls), from the real rendered prompts; nothing is sent.
    Tokens follow the model's tokenizer where this machine has it, else the declared fallback
    (`rule_for`); a reply is counted as a valid answer to its schema, compact JSON."""
    from labreplay.sdk.testing import instance
    from labreplay.suites.conditions.llm_prompts import question_messages

    prompt = 0
    completion = 0
    largest = 0
    first = ""
    params = agent.params()
    model = params.get("model")
    rule = rule_for(model if isinstance(model, str) else agent.name)
    repairs, reasoning = params.get("max_repairs", 2), params.get("reasoning_tokens", 0)
    ceiling = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    for q in questions:
        view = agent_view(q)
        schema = _schema(view)
        messages = question_messages(agent.render(view), schema)
        tokens = rule.chat(messages)
        prompt += tokens
        largest = max(largest, tokens)
        completion += rule.count(json.dumps(instance(schema)))
        first = first or messages[-1]["content"]
        budget = response_budget(schema) + (reasoning if isinstance(reasoning, int) else 0)
        most = spend_ceiling(tokens, budget, repairs if isinstance(repairs, int) else 2)
        for name, value in zip(ceiling, most, strict=True):
            ceiling[name] += value
    return {
        "dry_run": True,
        "agent": agent.name,
        "questions": len(questions),
        "calls": len(questions),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "largest_prompt_tokens": largest,
        "token_rule": rule.name,
        "first_prompt": first,
        "upper_bound": ceiling,
    }


def print_conditions_dry_run(
    agent: QuestionAgent,
    questions: Sequence[Question],
    price: Price,
    json_out: bool,
) -> None:
    from labreplay.errors import AgentError
    from labreplay.sdk.cli import console, print_json

    if not isinstance(agent, RendersQuestions):
        raise AgentError(
            f"--dry-run estimates LLM runs (--agent openai:MODEL); {agent.name!r} is not one"
        )
    found = estimate(agent, questions)
    found["cost"] = cost(found, price)
    found["upper_bound_cost"] = cost({**found["upper_bound"], "cached_tokens": 0}, price)
    if json_out:
        print_json(found)
        return
    console.print(f"first prompt ({len(found['first_prompt']):,} characters):")
    console.print(found["first_prompt"][:600] + " ...", markup=False)
    money = (
        f"; cost ${found['cost']:.2f}"
        if found["cost"] is not None
        else "; cost unknown (no price for this model)"
    )
    console.print(
        f"DRY RUN (no model called): {found['questions']} questions, {found['calls']} calls, "
        f"~{found['prompt_tokens']:,} prompt + ~{found['completion_tokens']:,} completion "
        f"tokens{money} (tokens counted as {found['token_rule']})",
        markup=False,  # the install hint's [extra] is not markup
    )
    rule = "every reply its whole response budget and refused max_repairs times"
    console.print(
        ceiling_line(found["upper_bound"], found["upper_bound_cost"], rule, prompt_strict=True)
    )


def print_usage(console: Console, result: Mapping[str, object], price: Price) -> None:
    usage = result.get("usage")
    if not usage or not isinstance(usage, Mapping):  # a dict whenever the run called a model
        return
    console.print(
        f"invalid answers {result.get('invalid_answers', 0)} (no usable reply); "
        f"{usage_line(usage, price)}"
    )
