"""What a run's model calls cost: the accounting every board, run output and report shows.

`usage_summary(calls)` totals one run's call records (the `llm_calls` rows): calls, calls
answered from the response cache, failed calls, unusable replies, replies cut off at the token
limit, prompt / completion / provider-cached tokens, latency, retries and the model ids the
provider answered with; `max_completion_tokens_calls` (present only when nonzero) counts the
calls that sent their budget as `max_completion_tokens` (a reasoning model's field). Tokens are the provider's `usage` where it reports it, else the
declared estimate of `llm_caps.estimate_tokens` (characters / 4); `estimated_calls` says how
many calls used the estimate. `add_usage` sums such summaries (per system, per branch).

`cost(usage, price)` turns tokens into money at `--price-per-mtok IN,OUT` (price per million
prompt and completion tokens); provider-cached prompt tokens are priced like the others (the
discount differs between providers; the cached share is shown beside it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from labreplay.agents.llm_caps import call_tokens
from labreplay.errors import AgentError

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
    out: dict[str, Any] = dict.fromkeys(_COUNTS, 0)
    latency = 0.0
    models: set[str] = set()
    completion_field = 0  # calls that sent their budget as max_completion_tokens
    for c in calls:
        out["calls"] += 1
        completion_field += int(c.get("token_param") == "max_completion_tokens")
        out["cached_calls"] += int(bool(c.get("cached")))
        out["failed_calls"] += int(bool(c.get("error")))
        out["invalid_replies"] += int(bool(c.get("parse_error")) and not c.get("error"))
        out["truncated_replies"] += int(c.get("finish_reason") == "length")
        prompt, completion, estimated = call_tokens(c)
        out["prompt_tokens"] += prompt
        out["completion_tokens"] += completion
        out["estimated_calls"] += int(estimated)
        out["cached_tokens"] += int(c.get("cached_tokens") or 0)
        out["retries"] += int(c.get("retries") or 0)
        latency += float(c.get("latency_s") or 0.0)
        if c.get("resolved_model"):
            models.add(str(c["resolved_model"]))
    out["latency_s"] = round(latency, 3)
    out["resolved_models"] = sorted(models)
    if completion_field:  # only then: an ordinary run's summary keeps its keys
        out["max_completion_tokens_calls"] = completion_field
    return out


def add_usage(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of several usage summaries (model ids united)."""
    out: dict[str, Any] = dict.fromkeys(_COUNTS, 0)
    latency = 0.0
    models: set[str] = set()
    for part in parts:
        for key in _COUNTS:
            out[key] += int(part.get(key) or 0)
        latency += float(part.get("latency_s") or 0.0)
        models.update(part.get("resolved_models") or [])
    out["latency_s"] = round(latency, 3)
    out["resolved_models"] = sorted(models)
    return out


def parse_price(text: str | None) -> tuple[float, float] | None:
    """`--price-per-mtok IN,OUT` (e.g. "2.5,10"): money per million prompt / completion tokens."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or any(not (math.isfinite(v) and v >= 0) for v in values):
        raise AgentError(
            f"--price-per-mtok must be two non-negative numbers IN,OUT (price per million prompt "
            f"and completion tokens), e.g. 2.5,10; got {text!r}"
        )
    return values[0], values[1]


def cost(usage: Mapping[str, Any], price: tuple[float, float] | None) -> float | None:
    if price is None:
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    return round((prompt * price[0] + completion * price[1]) / 1e6, 6)


def usage_line(usage: Mapping[str, Any], price: tuple[float, float] | None = None) -> str:
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
        f"latency {float(usage.get('latency_s') or 0):.1f} s; model {models}"
        + (f"; cost {money:.4f}" if money is not None else "")
    )
