"""The one LLM option group of every LLM run (`campaign run`, `conditions run`, the configsearch
optimiser, their `serve` and `labreplay.run`): endpoint, sampling, budgets, retries, caps,
prices. Declared once; the CLI's flags are generated from these fields and the API takes the
same names, so `--max-call-time 30` and `labreplay.run(..., max_call_time=30)` are one option.

`builder_kwargs()` gives the keyword arguments of the suites' LLM agent builders (`make_agent`,
`make_question_agent`, the configsearch optimiser). The API key is read from the variable
`api_key_env` names, when the agent is built, and never stored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, TypedDict, cast

from labreplay import validate
from labreplay.option_fields import Checked, Floats, OneOf, Rule, counts, flag, seconds, seeds
from labreplay.option_fields import Ints as _Ints

if TYPE_CHECKING:
    from labreplay.agents.llm_caps import RunCaps
    from labreplay.agents.llm_config import StructuredMode
    from labreplay.agents.llm_prices import ModelPrice


class BuilderKwargs(TypedDict, total=False):
    """The keyword arguments of the LLM agent builders: what these options set, and the API's
    `api_key` (never an option: a key is not stored)."""

    base_url: str
    provider: str
    temperature: float
    top_p: float
    seed: int
    max_tokens: int
    timeout_s: float
    max_retries: int
    max_repairs: int
    token_param: str
    reasoning_effort: str
    reasoning_tokens: int
    max_retry_wait_s: float
    call_time_s: float
    structured: StructuredMode
    api_key_env: str
    api_key: str
    caps: RunCaps


def _price(label: str, value: object) -> str:
    """`IN,OUT[,CACHED]`, refused as parsed (NaN/inf prices too)."""
    from labreplay.agents.llm_usage import parse_price

    text = str(value)
    parse_price(text)
    return text


def _price_file(label: str, value: object) -> str:
    """A price file, read and refused as parsed, before any store is opened."""
    from labreplay.agents.llm_prices import load_prices

    text = str(value)
    load_prices(text)
    return text


def _key_variable(label: str, value: object) -> str:
    """The name of a set environment variable (its value is read when the agent is built)."""
    if not isinstance(value, str) or not value or value not in os.environ:
        raise validate.bad(label, value, "names no environment variable that is set")
    return value


# The builders' names of the options whose flag says more than the keyword does.
_BUILDER_NAMES = {
    "llm_seed": "seed",
    "timeout": "timeout_s",
    "max_retry_wait": "max_retry_wait_s",
    "max_call_time": "call_time_s",
}
# The options that make the run's caps and prices (`LlmOptions.caps`), not a builder keyword.
_CAP_FIELDS = frozenset(
    {"max_calls", "max_tokens_total", "max_time", "max_cost", "max_total_cost", "prices",
     "price_per_mtok"}
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class LlmOptions(Checked):
    """What an `openai:MODEL` (or `anthropic:`, `openai-api/...`) agent is built with."""

    base_url: str | None = flag(
        None,
        "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (default: OPENAI_BASE_URL, "
        "else the OpenAI API).",
        check=Rule(validate.url, "ftp://example"),
    )
    provider: str | None = flag(
        None,
        "Wire format: auto | openai | anthropic. auto (default): anthropic (the Messages API, "
        "x-api-key, ANTHROPIC_API_KEY) for a base URL on api.anthropic.com, else OpenAI chat "
        "completions.",
        check=OneOf(("auto", "openai", "anthropic")),
    )
    api_key_env: str | None = flag(
        None,
        "Environment variable holding the API key (default: the provider's own, "
        "OPENAI_API_KEY, <SERVICE>_API_KEY for openai-api/<service>/..., ANTHROPIC_API_KEY, "
        "GOOGLE_API_KEY; its value is never stored).",
        check=Rule(_key_variable, "LABREPLAY_NO_SUCH_VARIABLE"),
    )
    temperature: float | None = flag(
        None,
        "Sampling temperature, 0-2 (default 0; none is sent to a reasoning model unless "
        "given here).",
        check=Floats(0.0, 2.0),
    )
    llm_seed: int | None = flag(
        None,
        "Sampling seed sent to the server (default: derived from the run seed).",
        check=seeds(),
    )
    max_tokens: int | None = flag(
        None,
        "Response budget per call. Default: derived from each reply's schema (e.g. panel "
        "size x forecast size, x1.5 margin); a value too small for the panel is refused.",
        check=counts(),
    )
    timeout: float | None = flag(
        None,
        "Per-request timeout in s. Default: derived per call from its response budget, "
        "max(60, max-tokens / 20 tokens/s) (a 3,173-token panel forecast gets 159 s), and the "
        "call's total retry time max(180, 2 x that timeout).",
        check=seconds(),
    )
    max_retries: int | None = flag(
        None,
        "Retries of a transient failure per call (default 4; seeded backoff).",
        check=_Ints(0, 50),
    )
    token_param: str | None = flag(
        None,
        "Request field of the response budget: auto | max_tokens | max_completion_tokens. "
        "auto (default): max_completion_tokens for reasoning models (o1, o3, o4*, gpt-5*), "
        "max_tokens otherwise, switching once when a server refuses max_tokens for "
        "max_completion_tokens.",
        check=OneOf(("auto", "max_tokens", "max_completion_tokens")),
    )
    reasoning_effort: str | None = flag(
        None,
        "Sent as reasoning_effort: minimal | low | medium | high (default: not sent).",
        check=OneOf(("minimal", "low", "medium", "high")),
    )
    reasoning_tokens: int | None = flag(
        None,
        "Completion tokens added to every reply budget of a reasoning model (by name, with "
        "--reasoning-effort, or refusing max_tokens) for its hidden reasoning (default 8192).",
        check=_Ints(0, 1_000_000),
    )
    max_retry_wait: float | None = flag(
        None,
        "Longest Retry-After in s a rate-limited call waits for (default 60; 0-3600). A "
        "server asking for longer fails the call at once, saying so.",
        check=Floats(0.0, 3600.0),
    )
    max_call_time: float | None = flag(
        None,
        "Wall-clock deadline in s on one model call with all its retries (default: the "
        "retry total, max(180, 2 x timeout)); its requests and retry waits all end by then.",
        check=seconds(),
    )
    structured: str | None = flag(
        None,
        "Structured output: auto | json_schema | json_object | off (default auto).",
        check=OneOf(("auto", "json_schema", "json_object", "off")),
    )
    max_calls: int | None = flag(
        None,
        "Cap: model calls per run (a campaign branch, a conditions run). Reaching it ends the "
        "run failed, the cap named; rerun with a higher cap to resume.",
        check=counts(),
    )
    max_tokens_total: int | None = flag(
        None,
        "Cap: prompt + completion tokens per run.",
        check=_Ints(1, validate.MAX_TOKENS_TOTAL),
    )
    max_time: float | None = flag(
        None, "Cap: wall time per run in seconds.", check=seconds(validate.MAX_RUN_TIME_S)
    )
    price_per_mtok: str | None = flag(
        None,
        "IN,OUT[,CACHED]: USD per million prompt / completion / provider-cached prompt "
        "tokens, over any table (e.g. 2.5,10,1.25).",
        check=Rule(_price, "1,x"),
    )
    prices: str | None = flag(
        None,
        "JSON or TOML price file over the built-in list prices: one table per model, "
        'e.g. {"my-model": {"input": 3, "output": 15, "cached_input": 0.3}} (USD per million '
        "tokens). A model in neither has an unknown cost, shown as such.",
        check=Rule(_price_file, "no-such-price-file.json"),
    )
    max_cost: float | None = flag(
        None,
        "Cap: USD per run (cached prompt tokens at the cached rate). A call is sent only if "
        "its worst case (prompt, reply and reasoning budget) fits, so it is never exceeded; "
        "then the run ends failed, 'cost cap' named. Needs the model's price.",
        check=Floats(0.0, 1e9, lo_open=True),
    )
    max_total_cost: float | None = flag(
        None,
        "Cap: USD this command may spend over all its runs (a call is sent only if its "
        "worst case fits). Once reached, every run still to go ends failed, 'cost cap' named.",
        check=Floats(0.0, 1e9, lo_open=True),
    )
    top_p: float | None = flag(
        None, "Nucleus sampling (API only).", check=Floats(0.0, 1.0), cli=False
    )
    max_repairs: int | None = flag(
        None,
        "Repair turns after an unparseable reply (API only; default 2).",
        check=_Ints(0, 10),
        cli=False,
    )

    def check_executor(self, executor: str) -> None:
        """`max_total_cost` counts the spend of this process: dask workers are others."""
        if self.max_total_cost is not None and executor == "dask":
            raise validate.OptionError(
                "--max-total-cost counts the spend of this process: use --executor in-process "
                "or threads with it, not dask"
            )

    def caps(self) -> RunCaps | None:
        """The run caps these options set (None: none)."""
        from labreplay.agents.llm_caps import RunCaps
        from labreplay.agents.llm_prices import SpendLedger, load_prices

        caps = RunCaps(
            max_calls=self.max_calls,
            max_tokens_total=self.max_tokens_total,
            max_time_s=self.max_time,
            max_cost_usd=self.max_cost,
            prices=load_prices(self.prices) if self.prices else None,
            ledger=SpendLedger(self.max_total_cost) if self.max_total_cost is not None else None,
        )
        if caps != RunCaps() or caps.prices is not None or caps.ledger is not None:
            return caps
        return None

    def price(self, agent: str) -> ModelPrice | None:
        """The price of `agent`'s model: --price-per-mtok, else the price file, else the list."""
        from labreplay.agents.llm_usage import run_price

        return run_price(agent, self.price_per_mtok, self.prices)

    def builder_kwargs(self) -> BuilderKwargs:
        """Keyword arguments of the LLM agent builders (only what was set)."""
        from labreplay._provenance import register_secret

        named: dict[str, object] = {
            _BUILDER_NAMES.get(f.name, f.name): getattr(self, f.name)
            for f in fields(self)
            if f.name not in _CAP_FIELDS
        }
        named["caps"] = self.caps()
        if self.api_key_env is not None:
            # whatever its name, its value is a key: no text this process stores or prints holds it
            register_secret(os.environ[self.api_key_env])
        return cast(BuilderKwargs, {k: v for k, v in named.items() if v is not None})


__all__ = ["BuilderKwargs", "LlmOptions"]
