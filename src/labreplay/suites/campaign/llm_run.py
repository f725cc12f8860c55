"""The LLM parts of `campaign run`: the up-front budget check, the progress line, the dry run
and the per-run cost lines. Kept apart from the CLI module so the command stays thin."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from labreplay.sdk.agents import (
    Agent,
    CallProgress,
    Price,
    add_usage,
    ceiling_line,
    check_user_budget,
    cost,
    is_llm_agent,
    response_budget,
    usage_line,
)
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.events import JsonObject
from labreplay.suites.campaign.branches import AssignmentSummary
from labreplay.suites.campaign.env import CampaignEnv
from labreplay.suites.campaign.llm_panel import panel_wire
from labreplay.suites.campaign.runner import AgentFactory


def panel_schema_of(spec: EnvironmentSpec) -> JsonObject:
    env = CampaignEnv(spec)
    env.reset(0)
    return env.checkpoint_snapshot()["response_schema"]


def check_max_tokens(specs: Sequence[EnvironmentSpec], max_tokens: int | None) -> None:
    """Refuse a `--max-tokens` too small for the largest panel forecast of `specs`."""
    if max_tokens is None or not specs:
        return
    largest = max((panel_schema_of(s) for s in specs), key=response_budget)
    wire = panel_wire(largest)  # the agent asks for rows (`llm_panel`): their size is the minimum
    asked = largest if wire is None else wire.schema
    what = "a panel forecast" if wire is None else f"a {len(wire.ids)}-query panel forecast"
    check_user_budget(max_tokens, asked, what)


@contextmanager
def with_progress(make: AgentFactory, label: str) -> Iterator[AgentFactory]:
    """`make`, with every LLM agent it builds reporting to one progress line on stderr."""
    progress = CallProgress(label)

    def build() -> Agent:
        agent = make()
        client = getattr(agent, "client", None)
        if client is not None and hasattr(client, "progress"):
            client.progress = progress
        return agent

    try:
        yield build
    finally:
        progress.close()


def print_dry_run(
    specs: Sequence[EnvironmentSpec],
    agent: str,
    make: AgentFactory,
    seed: int,
    controls: tuple[str, ...],
    price: Price,
    json_out: bool,
) -> None:
    from labreplay.errors import AgentError
    from labreplay.sdk.cli import console, print_json
    from labreplay.suites.campaign.dry_run import dry_run

    if not is_llm_agent(agent):
        raise AgentError(
            f"--dry-run estimates LLM runs (--agent openai:MODEL); {agent!r} is not one"
        )
    params = make().params()  # builds the client: the endpoint is checked, nothing is sent
    estimate = dry_run(specs, agent, params, seed, controls)
    estimate["cost"] = cost(estimate["total"], price)  # cached prefixes at the cached rate
    # the bound if the provider cached nothing
    estimate["cost_uncached"] = cost({**estimate["total"], "cached_tokens": 0}, price)
    estimate["upper_bound_cost"] = cost({**estimate["upper_bound"], "cached_tokens": 0}, price)
    if json_out:
        print_json(estimate)
        return
    for a in estimate["assignments"]:
        parts = ", ".join(
            f"{b} {t['calls']} calls / {t['prompt_tokens']:,} + {t['completion_tokens']:,} tok"
            for b, t in a["branches"].items()
        )
        console.print(f"{a['assignment']}: {parts}")
    first = estimate["assignments"][0]["branches"]["adaptive"] if specs else None
    if first is not None:
        console.print(
            f"first adaptive prompt ({len(first['first_prompt']):,} characters; largest prompt "
            f"~{first['largest_prompt_tokens']:,} tokens, largest response budget "
            f"{first['largest_response_budget']:,}):"
        )
        console.print(first["first_prompt"][:600] + " ...", markup=False)
    total, ctl = estimate["total"], estimate["controls"]
    money = (
        f"; cost ${estimate['cost']:.2f} with prefix caching, ${estimate['cost_uncached']:.2f} "
        "without"
        if estimate["cost"] is not None
        else "; cost unknown (no price for this model)"
    )
    console.print(
        f"DRY RUN (no model called): {len(specs)} assignments (partition seed(s) "
        f"{', '.join(map(str, estimate['partition_seeds']))}; run seed {estimate['seed']}), "
        f"{total['calls']:,} calls, "
        f"~{total['prompt_tokens']:,} prompt + ~{total['completion_tokens']:,} completion tokens"
        f"{money}; controls {ctl['calls']:,} calls, ~{ctl['prompt_tokens']:,} prompt tokens "
        f"({ctl['prompt_tokens'] / max(1, total['prompt_tokens']):.0%}). Estimated with a "
        f"stand-in policy; tokens counted as {estimate['token_rule']}."
    )
    console.print(
        ceiling_line(
            estimate["upper_bound"],
            estimate["upper_bound_cost"],
            estimate["upper_bound_rule"],
            prompt_strict=False,
        )
    )


def print_run_costs(console: Console, results: Sequence[AssignmentSummary], price: Price) -> None:
    """Per assignment: the adaptive branch's and the controls' accounting, then the total."""
    everything: list[Mapping[str, Any]] = []
    for r in results:
        usage = r.get("usage") or {}
        if not usage:
            continue
        adaptive = usage.get("adaptive", {})
        controls = add_usage(u for b, u in usage.items() if b != "adaptive")
        console.print(f"{r['assignment']['id']} adaptive: {usage_line(adaptive, price)}")
        if controls["calls"]:
            console.print(f"{r['assignment']['id']} controls: {usage_line(controls, price)}")
        if r.get("status") == "failed" and r.get("cause"):
            console.print(f"{r['assignment']['id']} failed: {r['cause']}")
        everything.extend(usage.values())
    if everything:
        console.print(f"total: {usage_line(add_usage(everything), price)}")
