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
    for play in estimate["plays"]:
        play["cost"] = cost(play["total"], price)  # cached prefixes at the cached rate
        play["cost_uncached"] = cost(
            {**play["total"], "cached_tokens": 0, "cache_write_tokens": 0}, price
        )
    estimate["cost_range"] = _cost_span([p.get("cost") for p in estimate["plays"]])
    estimate["cost_uncached_range"] = _cost_span(
        [p.get("cost_uncached") for p in estimate["plays"]]
    )
    for at in estimate.get("reasoning", {"at": []})["at"]:  # billed as completion tokens
        at["cost"] = _cost_span([cost({"completion_tokens": t}, price) for t in at["tokens"]])
    estimate["upper_bound_cost"] = cost(
        {**estimate["upper_bound"], "cached_tokens": 0, "cache_write_tokens": 0}, price
    )
    if json_out:
        print_json(estimate)
        return
    for i, assignment in enumerate(estimate["plays"][0]["assignments"]):
        per = [p["assignments"][i]["branches"] for p in estimate["plays"]]
        parts = ", ".join(
            f"{b} {_span([p[b]['calls'] for p in per])} calls / "
            f"{_span([p[b]['prompt_tokens'] for p in per])} + "
            f"{_span([p[b]['completion_tokens'] for p in per])} tok"
            for b in per[0]
        )
        console.print(f"{assignment['assignment']}: {parts}")
    first = estimate["plays"][0]["assignments"][0]["branches"]["adaptive"] if specs else None
    if first is not None:
        console.print(
            f"first adaptive prompt ({len(first['first_prompt']):,} characters; largest prompt "
            f"~{first['largest_prompt_tokens']:,} tokens, largest response budget "
            f"{first['largest_response_budget']:,}):"
        )
        console.print(first["first_prompt"][:1200] + " ...", markup=False)
    span, ctl = estimate["range"], [p["controls"] for p in estimate["plays"]]
    cached, uncached = estimate["cost_range"], estimate["cost_uncached_range"]
    money = (
        f"; cost ${_span(cached, '{:.2f}')} with prefix caching, "
        f"${_span(uncached, '{:.2f}')} without"
        if cached is not None and uncached is not None
        else "; cost unknown (no price for this model)"
    )
    reasoning = "; reasoning not included (see REASONING)" if "reasoning" in estimate else ""
    console.print(
        f"DRY RUN (no model called): {len(specs)} assignments (partition seed(s) "
        f"{', '.join(map(str, estimate['partition_seeds']))}; run seed {estimate['seed']}), "
        f"{_span(span['calls'])} calls, ~{_span(span['prompt_tokens'])} prompt + "
        f"~{_span(span['completion_tokens'])} completion tokens{money}; controls "
        f"{_span([c['calls'] for c in ctl])} calls, ~{_span([c['prompt_tokens'] for c in ctl])} "
        f"prompt tokens. Ranges: {estimate['range_rule']}{reasoning}; tokens counted as "
        f"{estimate['token_rule']}.",
        markup=False,  # the install hint's [extra] is not markup
    )
    if "reasoning" in estimate:
        found = estimate["reasoning"]
        shares = "; ".join(
            f"{at['share']}% {_span(at['tokens'])} tokens"
            + (f" ${_span(c, '{:,.2f}')}" if (c := at.get("cost")) else "")
            for at in found["at"]
        )
        console.print(
            "REASONING (hidden, billed as completion tokens, not in the range above): "
            f"{found['budget_per_call']:,} reasoning tokens per call (--reasoning-tokens) over "
            f"{_span(span['calls'])} calls; at {shares}."
        )
    console.print(
        ceiling_line(
            estimate["upper_bound"],
            estimate["upper_bound_cost"],
            estimate["upper_bound_rule"],
            prompt_strict=False,
        )
    )


def _span(values: Sequence[float], form: str = "{:,}") -> str:
    """min-max of `values` (one number when they agree)."""
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low}-{high}"


def _cost_span(costs: Sequence[float | None]) -> list[float] | None:
    known = [c for c in costs if c is not None]
    return [min(known), max(known)] if known and len(known) == len(costs) else None


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
