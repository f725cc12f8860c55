"""The one LLM option set of every LLM run command (`campaign run`, `conditions run`, the
configsearch optimiser): endpoint, sampling, budgets, retries, caps, prices, dry run.

Each command lists these typer options and hands their values to `agent_options`, which
returns the keyword arguments of the suites' LLM agent builders (`make_agent`,
`make_question_agent`). The API key is read from the variable `--api-key-env` names, at build
time, and never stored.
"""

from __future__ import annotations

import os
from typing import Any

import typer

from labreplay._provenance import register_secret
from labreplay.agents.llm_caps import RunCaps
from labreplay.cli._common import (
    choice,
    count_check,
    finite_float_check,
    int_range,
    positive_float,
    seed_check,
    timeout_check,
    url_check,
)
from labreplay.errors import AgentError
from labreplay.validate import MAX_RUN_TIME_S, MAX_TOKENS_TOTAL

BaseUrlOption = typer.Option(
    None,
    "--base-url",
    help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: OPENAI_BASE_URL, "
    "else the OpenAI API).",
    callback=url_check("--base-url"),
)
ProviderOption = typer.Option(
    None,
    "--provider",
    help="Wire format: auto | openai | anthropic. auto (default): anthropic (the Messages API, "
    "x-api-key, ANTHROPIC_API_KEY) for a base URL on api.anthropic.com, else OpenAI chat "
    "completions.",
    callback=choice("--provider", ("auto", "openai", "anthropic")),
)
ApiKeyEnvOption = typer.Option(
    None,
    "--api-key-env",
    help="Environment variable holding the API key (default: the provider's own, "
    "OPENAI_API_KEY, <SERVICE>_API_KEY for openai-api/<service>/..., ANTHROPIC_API_KEY, "
    "GOOGLE_API_KEY; its value is never stored).",
)
TemperatureOption = typer.Option(
    None,
    "--temperature",
    help="Sampling temperature, 0-2 (default 0; none is sent to a reasoning model unless "
    "given here).",
    callback=finite_float_check("--temperature", 0.0, 2.0),
)
LlmSeedOption = typer.Option(
    None,
    "--llm-seed",
    help="Sampling seed sent to the server (default: derived from the run seed).",
    callback=seed_check("--llm-seed"),
)
MaxTokensOption = typer.Option(
    None,
    "--max-tokens",
    help="Response budget per call. Default: derived from each reply's schema (e.g. panel "
    "size x forecast size, x1.5 margin); a value too small for the panel is refused.",
    callback=count_check("--max-tokens"),
)
TimeoutOption = typer.Option(
    None,
    "--timeout",
    help="Per-request timeout in s. Default: derived per call from its response budget, "
    "max(60, max-tokens / 20 tokens/s) (a 3,173-token panel forecast gets 159 s), and the "
    "call's total retry time max(180, 2 x that timeout).",
    callback=timeout_check("--timeout"),
)
MaxRetryWaitOption = typer.Option(
    None,
    "--max-retry-wait",
    help="Longest Retry-After in s a rate-limited call waits for (default 60; 0-3600). A "
    "server asking for longer fails the call at once, saying so.",
    callback=finite_float_check("--max-retry-wait", 0.0, 3600.0),
)
MaxCallTimeOption = typer.Option(
    None,
    "--max-call-time",
    help="Wall-clock deadline in s on one model call with all its retries (default: the "
    "retry total, max(180, 2 x timeout)); its requests and retry waits all end by then.",
    callback=finite_float_check("--max-call-time", 0.0, 86400.0, lo_open=True),
)
TokenParamOption = typer.Option(
    None,
    "--token-param",
    help="Request field of the response budget: auto | max_tokens | max_completion_tokens. "
    "auto (default): max_completion_tokens for reasoning models (o1, o3, o4*, gpt-5*), "
    "max_tokens otherwise, switching once when a server refuses max_tokens for "
    "max_completion_tokens.",
    callback=choice("--token-param", ("auto", "max_tokens", "max_completion_tokens")),
)
ReasoningEffortOption = typer.Option(
    None,
    "--reasoning-effort",
    help="Sent as reasoning_effort: minimal | low | medium | high (default: not sent).",
    callback=choice("--reasoning-effort", ("minimal", "low", "medium", "high")),
)
ReasoningTokensOption = typer.Option(
    None,
    "--reasoning-tokens",
    help="Completion tokens added to every reply budget of a reasoning model (by name, with "
    "--reasoning-effort, or refusing max_tokens) for its hidden reasoning (default 8192).",
    callback=int_range("--reasoning-tokens", 0, 1_000_000),
)
MaxRetriesOption = typer.Option(
    None,
    "--max-retries",
    help="Retries of a transient failure per call (default 4; seeded backoff).",
    callback=int_range("--max-retries", 0, 50),
)
MaxCallsOption = typer.Option(
    None,
    "--max-calls",
    help="Cap: model calls per run (a campaign branch, a conditions run). Reaching it ends the "
    "run failed, the cap named; rerun with a higher cap to resume.",
    callback=count_check("--max-calls"),
)
MaxTokensTotalOption = typer.Option(
    None,
    "--max-tokens-total",
    help="Cap: prompt + completion tokens per run.",
    callback=int_range("--max-tokens-total", 1, MAX_TOKENS_TOTAL),
)
MaxTimeOption = typer.Option(
    None,
    "--max-time",
    help="Cap: wall time per run in seconds.",
    callback=positive_float("--max-time", MAX_RUN_TIME_S),
)


def _price_check(value: str | None) -> str | None:
    """Refused as the option is parsed, before any store is opened (NaN/inf prices too)."""
    from labreplay.agents.llm_usage import parse_price

    parse_price(value)
    return value


PriceOption = typer.Option(
    None,
    "--price-per-mtok",
    help="IN,OUT[,CACHED]: USD per million prompt / completion / provider-cached prompt "
    "tokens, over any table (e.g. 2.5,10,1.25).",
    callback=_price_check,
)


def _prices_check(value: str | None) -> str | None:
    """A bad price file is refused as the option is parsed, before any store is opened."""
    from labreplay.agents.llm_prices import load_prices

    if value is not None:
        load_prices(value)
    return value


PricesOption = typer.Option(
    None,
    "--prices",
    help="JSON or TOML price file over the built-in list prices: one table per model, "
    'e.g. {"my-model": {"input": 3, "output": 15, "cached_input": 0.3}} (USD per million '
    "tokens). A model in neither has an unknown cost, shown as such.",
    callback=_prices_check,
)
MaxCostOption = typer.Option(
    None,
    "--max-cost",
    help="Cap: USD per run, at the list cost of its calls (cached prompt tokens at the cached "
    "rate). Reaching it ends the run failed, 'cost cap' named; needs the model's price.",
    callback=finite_float_check("--max-cost", 0.0, 1e9, lo_open=True),
)
MaxTotalCostOption = typer.Option(
    None,
    "--max-total-cost",
    help="Cap: USD this command may spend over all its runs (response-cache hits are free). "
    "Once reached, every run still to go ends failed, 'cost cap' named.",
    callback=finite_float_check("--max-total-cost", 0.0, 1e9, lo_open=True),
)
DryRunOption = typer.Option(
    False,
    "--dry-run",
    help="Render the prompts and estimate calls and tokens without calling the model; exit 0.",
)
LimitOption = typer.Option(
    None,
    "--limit",
    help="Run only the first N units (assignments, questions) in an order seeded by --seed.",
    callback=count_check("--limit"),
)


def agent_options(
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    temperature: float | None = None,
    llm_seed: int | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    max_calls: int | None = None,
    max_tokens_total: int | None = None,
    max_time: float | None = None,
    token_param: str | None = None,
    reasoning_effort: str | None = None,
    reasoning_tokens: int | None = None,
    max_retry_wait: float | None = None,
    max_call_time: float | None = None,
    prices: str | None = None,
    max_cost: float | None = None,
    max_total_cost: float | None = None,
    provider: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments for the LLM agent builders (only what the user set)."""
    if temperature is not None and not 0.0 <= temperature <= 2.0:
        raise AgentError(f"--temperature must be in [0, 2], got {temperature}")
    options: dict[str, Any] = {
        k: v
        for k, v in (
            ("base_url", base_url),
            ("temperature", temperature),
            ("seed", llm_seed),
            ("max_tokens", max_tokens),
            ("timeout_s", timeout),
            ("max_retries", max_retries),
            ("token_param", token_param),
            ("reasoning_effort", reasoning_effort),
            ("reasoning_tokens", reasoning_tokens),
            ("max_retry_wait_s", max_retry_wait),
            ("call_time_s", max_call_time),
            ("provider", provider),
        )
        if v is not None
    }
    if api_key_env is not None:
        if not api_key_env or api_key_env not in os.environ:
            raise AgentError(f"--api-key-env {api_key_env!r}: no such environment variable is set")
        options["api_key_env"] = api_key_env
        # whatever its name, its value is a key: no text this process stores or prints holds it
        register_secret(os.environ[api_key_env])
    from labreplay.agents.llm_prices import SpendLedger, load_prices

    caps = RunCaps(
        max_calls=max_calls,
        max_tokens_total=max_tokens_total,
        max_time_s=max_time,
        max_cost_usd=max_cost,
        prices=load_prices(prices) if prices else None,
        ledger=SpendLedger(max_total_cost) if max_total_cost is not None else None,
    )
    if caps != RunCaps() or caps.prices is not None or caps.ledger is not None:
        options["caps"] = caps
    return options


def resolve_api_key(api_key_env: str | None) -> str | None:
    """The key in `api_key_env` (None: the client reads the provider's own variable,
    `llm_inspect.key_variables`)."""
    return os.environ.get(api_key_env) if api_key_env else None
