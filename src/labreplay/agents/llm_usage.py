"""What a run's model calls cost: `usage_summary` totals one run's call records (tokens
estimated at characters / 4 where the provider reported no `usage`, `estimated_calls` says how
many), `add_usage` sums summaries, `cost` prices one (None: unknown, which `usage_line` says in
words, never as 0). Response-cache hits that cost nothing are counted apart (`cache_hit_*`), so
repricing a summary never charges them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from labreplay.agents.llm_caps import call_tokens
from labreplay.agents.llm_prices import ModelPrice, PriceTable, load_prices
from labreplay.errors import AgentError

# A price as the commands pass it: a model's price, the legacy (IN, OUT) pair, or unknown.
Price = ModelPrice | tuple[float, float] | None
# Tokens of the response-cache hits that cost nothing (see `cost`), present when any.
_HIT_COUNTS = ("cache_hit_prompt_tokens", "cache_hit_cached_tokens", "cache_hit_completion_tokens")

_COUNTS = (
    "calls",
    "cached_calls",
    "failed_calls",
    "invalid_replies",
    "truncated_replies",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "estimated_calls",
    "retries",
)


def usage_summary(calls: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    rows = list(calls)
    out = add_usage(_call_usage(c) for c in rows)
    completion_field = sum(c.get("token_param") == "max_completion_tokens" for c in rows)
    if completion_field:  # only then: an ordinary run's summary keeps its keys
        out["max_completion_tokens_calls"] = completion_field
    return out


def _call_usage(c: Mapping[str, Any]) -> dict[str, Any]:
    """One call record as a usage summary of one call."""
    prompt, completion, estimated = call_tokens(c)
    cached = int(c.get("cached_tokens") or 0)
    out: dict[str, Any] = {
        "calls": 1,
        "cached_calls": int(bool(c.get("cached"))),
        "failed_calls": int(bool(c.get("error"))),
        "invalid_replies": int(bool(c.get("parse_error")) and not c.get("error")),
        "truncated_replies": int(c.get("finish_reason") == "length"),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_tokens": cached,
        "estimated_calls": int(estimated),
        "retries": int(c.get("retries") or 0),
        "latency_s": float(c.get("latency_s") or 0.0),
        "resolved_models": [str(c["resolved_model"])] if c.get("resolved_model") else [],
    }
    if c.get("cache_write_tokens"):  # only then: a summary without writes keeps its keys
        out["cache_write_tokens"] = int(c["cache_write_tokens"])
    money = c.get("cost_usd")
    if isinstance(money, int | float):
        out["cost_usd"] = float(money)
    if c.get("cached") and not money:  # a free hit
        out.update(zip(_HIT_COUNTS, (prompt, cached, completion), strict=True))
    return out


def add_usage(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of several usage summaries (model ids united)."""
    out: dict[str, Any] = dict.fromkeys(_COUNTS, 0)
    latency = 0.0
    models: set[str] = set()
    hits = [0, 0, 0]
    spent, priced, written = 0.0, True, 0
    for part in parts:
        for key in _COUNTS:
            out[key] += int(part.get(key) or 0)
        written += int(part.get("cache_write_tokens") or 0)
        for i, key in enumerate(_HIT_COUNTS):
            hits[i] += int(part.get(key) or 0)
        money = part.get("cost_usd")
        priced = priced and (isinstance(money, int | float) or not part.get("calls"))
        spent += float(money) if isinstance(money, int | float) else 0.0
        latency += float(part.get("latency_s") or 0.0)
        models.update(part.get("resolved_models") or [])
    out["latency_s"] = round(latency, 3)
    out["resolved_models"] = sorted(models)
    if any(hits):
        out.update(zip(_HIT_COUNTS, hits, strict=True))
    if written:
        out["cache_write_tokens"] = written
    if priced and out["calls"]:
        out["cost_usd"] = round(spent, 6)
    return out


def parse_price(text: str | None) -> ModelPrice | None:
    """`--price-per-mtok IN,OUT[,CACHED]` (e.g. "2.5,10,1.25"): USD per million prompt /
    completion / provider-cached prompt tokens (CACHED defaults to IN: no discount)."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) not in (2, 3) or any(not (math.isfinite(v) and v >= 0) for v in values):
        raise AgentError(
            f"--price-per-mtok must be two or three non-negative numbers IN,OUT[,CACHED] (USD "
            f"per million prompt, completion and cached prompt tokens), e.g. 2.5,10,1.25; "
            f"got {text!r}"
        )
    cached = values[2] if len(values) == 3 else None
    return ModelPrice(values[0], values[1], cached, source="--price-per-mtok")


def run_price(
    model: str | None, price_per_mtok: str | None = None, prices_file: str | None = None
) -> ModelPrice | None:
    """The price of a model's calls (`model` a name or an `openai:MODEL` spec):
    `--price-per-mtok` if given, else the model's in `--prices FILE` over the built-in table;
    None for a model in neither (or no model)."""
    explicit = parse_price(price_per_mtok)
    if explicit is not None:
        return explicit
    table = load_prices(prices_file) if prices_file else PriceTable()
    return table.price_for(model.removeprefix("openai:")) if model else None


def cost(usage: Mapping[str, Any], price: Price = None) -> float | None:
    """USD of a usage summary: repriced at `price` when given, else what its calls recorded
    (None: unknown)."""
    if price is None:
        recorded = usage.get("cost_usd")
        return float(recorded) if isinstance(recorded, int | float) else None
    if isinstance(price, tuple):
        price = ModelPrice(price[0], price[1], source="--price-per-mtok")
    hit_prompt, hit_cached, hit_completion = (int(usage.get(k) or 0) for k in _HIT_COUNTS)
    return round(
        price.cost(
            int(usage.get("prompt_tokens") or 0) - hit_prompt,
            int(usage.get("cached_tokens") or 0) - hit_cached,
            int(usage.get("completion_tokens") or 0) - hit_completion,
            int(usage.get("cache_write_tokens") or 0),
        ),
        6,
    )


def usage_line(usage: Mapping[str, Any], price: Price = None) -> str:
    """One line for run output: calls, tokens, cached share, latency, model ids, cost."""
    prompt = int(usage.get("prompt_tokens") or 0)
    cached = int(usage.get("cached_tokens") or 0)
    share = f", {cached / prompt:.0%} of prompt tokens provider-cached" if prompt else ""
    estimated = " (estimated)" if usage.get("estimated_calls") else ""
    money = cost(usage, price)
    models = ", ".join(usage.get("resolved_models") or []) or "-"
    return (
        f"{usage.get('calls', 0)} calls ({usage.get('cached_calls', 0)} from the response cache, "
        f"{usage.get('failed_calls', 0)} failed, {usage.get('invalid_replies', 0)} invalid "
        f"replies, {usage.get('truncated_replies', 0)} cut off, {usage.get('retries', 0)} "
        f"retries); tokens{estimated} {prompt:,} prompt + "
        f"{int(usage.get('completion_tokens') or 0):,} completion{share}; "
        f"latency {float(usage.get('latency_s') or 0):.1f} s; model {models}; "
        + (
            f"cost ${money:.4f}"
            if money is not None
            else "cost unknown (no price for this model: give --prices FILE)"
        )
    )


def ceiling_line(
    ceiling: Mapping[str, object], cost_usd: float | None, rule: str, prompt_strict: bool
) -> str:
    """The dry run's line for an agent that spends everything (`llm_budget.spend_ceiling`):
    calls and completion tokens are bounds; prompt tokens are one too when `prompt_strict`,
    else a scale (said so)."""
    prompt = (
        f"<= {ceiling['prompt_tokens']:,} prompt"
        if prompt_strict
        else f"~{ceiling['prompt_tokens']:,} prompt (at the largest prompt rendered)"
    )
    money = "" if cost_usd is None else f"; cost {'<=' if prompt_strict else '~'}${cost_usd:,.2f}"
    return (
        "UPPER BOUND (an agent that spends everything, before --max-calls/--max-cost): "
        f"{ceiling['calls']:,} calls, {prompt} + <= {ceiling['completion_tokens']:,} completion "
        f"tokens{money} ({rule})."
    )
