"""A JSON-answering client for any model inspect_ai's model API serves (`openai:MODEL` on an
OpenAI-compatible endpoint, `--provider anthropic`, or an inspect model string).

One logical request = one completion, retried on transient faults; `complete_json` adds schema
validation and bounded repair turns. Nothing here raises on a model or network failure: the
caller gets a `JsonReply` with `error` set, so one bad answer is an invalid action, not the end
of a campaign. The API key goes to inspect's provider only: never an attribute, a param, the
request hash or a record.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict, Unpack
from urllib.parse import urlsplit

from labreplay._provenance import register_secret, scrub_text
from labreplay._rng import derive_seed, make_rng
from labreplay.agents.base import CallRecord, ResponseCache
from labreplay.agents.llm_budget import response_budget
from labreplay.agents.llm_caps import CapMeter, CapReached
from labreplay.agents.llm_config import (
    ANTHROPIC_ENDPOINT,
    DEFAULT_ENDPOINT,
    DEFAULT_REASONING_TOKENS,
    STRUCTURED_FALLBACKS,
    TOKEN_PARAMS,
    RetryPolicy,
    Sampling,
    StructuredMode,
    check_base_url,
    ignoring_host,
    is_reasoning_model,
    public_endpoint,
    resolve_provider,
    secret_query_values,
    thinks_by_default,
)
from labreplay.agents.llm_faults import (
    CallFault,
    describe_failure,
    failure_kind,
    is_unreachable,
    refuses_max_tokens,
)
from labreplay.agents.llm_inspect import (
    CHAT_PROVIDERS,
    EXACT_PROVIDERS,
    NO_SAMPLING_PROVIDERS,
    PLACEHOLDER_KEY,
    SCHEMA_PROVIDERS,
    SEED_PROVIDERS,
    InspectEndpoint,
    check_available,
    inspect_schema,
    key_variables,
)
from labreplay.agents.llm_wire import (
    SCHEMA_FAULT,
    Completion,
    JsonReply,
    build_request,
    cache_key,
    repair_messages,
    validate_reply,
    validator_for_schema,
)
from labreplay.errors import AgentError
from labreplay.runtime.failure import TIME_CAP

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonObject, JsonValue

__all__ = [
    "AsyncLLMClient",
    "JsonReply",
    "LLMClient",
    "RetryPolicy",
    "Sampling",
]

# response_format kinds found to work, per (endpoint, model), for this process: every agent of
# a run (adaptive branch, controls, resumed runs) is a new client, and none should pay for the
# detection again.
_DETECTED_FORMATS: dict[tuple[str, str], list[str]] = {}
# (endpoint, model) pairs whose server refused `max_tokens` for `max_completion_tokens`, for
# this process (token_param "auto"): later clients send `max_completion_tokens` at once.
_NEEDS_COMPLETION_TOKENS: set[tuple[str, str]] = set()

# Error text of a call the open circuit did not send (see `_ClientCore._circuit_open`).
NOT_SENT = "not sent"
# Calls failed in a row after which an endpoint that has answered before is given up on.
CIRCUIT_LIMIT = 4

# What each reply name is for, on the call records (`purpose`).
PURPOSES = {"action": "policy", "panel_forecast": "checkpoint", "answer": "answer"}

# `openai:MODEL` is sent through inspect's openai-api provider under this service name (which
# names no environment variable of ours: the base URL and key are always handed over).
ALIAS_SERVICE = "openai-api/labreplay"


def _alias_available(served: str) -> str:
    """`check_available` for `openai:MODEL` and `--provider anthropic`, whose packages are
    the `llm` extra's (one line naming it otherwise)."""
    try:
        return check_available(served)
    except AgentError:
        raise AgentError(
            "LLM agents need inspect_ai, openai and anthropic: pip install 'labreplay[llm]'"
        ) from None


# What one call of `complete_json` came to: a completion (None: failed) and its record, or the
# caps' refusal to send it.
_Turn = tuple["Completion | None", CallRecord] | CapReached


@dataclass
class _Attempt:
    """The state of one logical call across its retries."""

    request: dict[str, Any]
    started: float
    deadline: float
    messages: Sequence[Mapping[str, str]]
    schema: Mapping[str, JsonValue]
    name: str
    timeout_s: float  # per request: the user's, or derived from this call's response budget
    total_time_s: float  # this call with its retries
    retries: int = 0
    # The last failure said the endpoint is unreachable or refuses us (not merely slow).
    unreachable: bool = False
    timed_out: bool = False  # the last failure was a request timeout
    skipped: bool = False  # not sent at all: the circuit was open
    # When the run's time cap (--max-time) ends this call, if it is sooner than `deadline`'s
    # own bound (the call's total retry time).
    run_deadline: float | None = None
    held_usd: float = 0.0  # the worst case the money caps hold for this call until it is charged


class ClientOptions(TypedDict, total=False):
    """A client's keyword arguments beside its model (`llm.client_options` makes them)."""

    base_url: str | None
    sampling: Sampling
    retry: RetryPolicy
    structured: StructuredMode
    max_repairs: int
    cache: ResponseCache | None
    jitter_seed: int
    meter: CapMeter
    token_param: str
    reasoning_tokens: int | None
    temperature_explicit: bool
    provider: str


@dataclass
class _ClientCore:
    """Everything the sync and async clients share: configuration, request building, the
    structured-output detection, retry arithmetic and the response cache."""

    model: str
    base_url: str | None = None
    sampling: Sampling = field(default_factory=Sampling)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    structured: StructuredMode = "auto"
    max_repairs: int = 2
    cache: ResponseCache | None = None
    jitter_seed: int = 0
    # Spending caps of the current run (reset by the agent at each run start); shared by the
    # sync and async clients of one agent.
    meter: CapMeter = field(default_factory=CapMeter)
    # The run's progress line (`llm_progress.CallProgress`), told of every call and retry.
    progress: Any = None
    # The request field of the response budget (`llm_config.TOKEN_PARAMS`).
    token_param: str = "auto"
    # Completion tokens added to every reply budget of a reasoning model for its hidden
    # reasoning (None: DEFAULT_REASONING_TOKENS).
    reasoning_tokens: int | None = None
    # False when the sampling temperature is only the default (0): then it is not sent to a
    # reasoning model, which takes none. A temperature the user set is always sent.
    temperature_explicit: bool = True
    # The wire format: "openai" (chat completions), "anthropic" (the Messages API) or "auto"
    # (anthropic for a base URL on api.anthropic.com), all through inspect_ai's providers;
    # "inspect": the model is an inspect model string (`openai/gpt-5`, `openai-api/local/m`...)
    # that names its provider itself.
    provider: str = "auto"

    def __post_init__(self) -> None:
        if not self.model:
            raise AgentError("an LLM agent needs a model name, e.g. openai:gpt-4o-mini")
        if self.max_repairs < 0:
            raise AgentError(f"max_repairs must be >= 0, got {self.max_repairs}")
        if self.token_param not in TOKEN_PARAMS:
            raise AgentError(
                f"--token-param must be one of {', '.join(TOKEN_PARAMS)}, got {self.token_param!r}"
            )
        if self.reasoning_tokens is not None and self.reasoning_tokens < 0:
            raise AgentError(f"--reasoning-tokens must be >= 0, got {self.reasoning_tokens}")
        # Every call goes through inspect_ai's model API (`llm_inspect`): `_served` is the
        # inspect model string that carries it. `_inspect` is the inspect provider whose own
        # request rules apply (None: `openai:MODEL`, whose OpenAI-compatible request we build
        # and send byte for byte through inspect's openai-api provider, as before inspect).
        self._inspect: str | None = None
        if self.provider == "inspect":
            self._provider = "inspect"
            self._inspect = check_available(self.model)  # one line, before any store
            self._served = self.model
        else:
            self._provider = resolve_provider(self.provider, self.base_url)
        if self._provider == "anthropic":
            # `--provider anthropic` is inspect's anthropic provider (the Messages API).
            self.base_url = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
            self.base_url = self.base_url or ANTHROPIC_ENDPOINT
            self._served = f"anthropic/{self.model}"
            self._inspect = _alias_available(self._served)
        elif self._provider == "openai":
            self.base_url = self.base_url or os.environ.get("OPENAI_BASE_URL") or None
            self._served = f"{ALIAS_SERVICE}/{self.model}"
            _alias_available(self._served)
        check_base_url(self.base_url)
        self.meter.bind_model(self.model)  # its price; a money cap on an unpriced model refused
        # Circuit breaker: an endpoint that never answered and failed a whole call (with its
        # retries), or failed CIRCUIT_LIMIT calls in a row, is not asked again by this client;
        # the calls are recorded as failed at once instead of each waiting out its retries.
        self._failed_in_row = 0
        self._answered = False
        self._last_failure = ""
        self._last_unreachable = False
        # The response_format kinds to offer, best first. In "auto" mode the first one the
        # server accepts is kept; one it refuses is dropped for the rest of this client's life.
        self._formats: list[str] = list(STRUCTURED_FALLBACKS.get(self.structured, ()))
        self._format_confirmed = self.structured != "auto"
        # An endpoint that ignores response_format and seed gets neither: nothing it did not
        # apply is sent, and none is recorded as applied (see `params`).
        self._ignoring = ignoring_host(self.base_url) if self._provider == "openai" else None
        if self._ignoring is not None:
            self._formats, self._format_confirmed = [], True
        if self._inspect is not None and self._inspect not in CHAT_PROVIDERS:
            # Our response_format goes as is to OpenAI chat providers (detected as natively);
            # to the others only as inspect's response_schema (json_schema), and only by the
            # providers in SCHEMA_PROVIDERS: none is sent to any other.
            keep = self._inspect in SCHEMA_PROVIDERS and "json_schema" in self._formats
            self._formats = ["json_schema"] if keep else []
            self._format_confirmed = self._format_confirmed or not keep
        self._adopt_detected()
        # The server refused `max_tokens` for `max_completion_tokens` (token_param "auto").
        self._learned_completion_tokens = False
        self._jitter = make_rng(self.jitter_seed, "llm-client", "backoff-jitter", self.model)
        # Sampling seed used when the caller gave none: derived from the run seed on reseed(), so
        # a seeded run sends a recorded, reproducible seed to servers that honour one.
        self._derived_sampling_seed: int | None = None

    # ------------------------------------------------------------------ public bits
    def params(self) -> JsonObject:
        """Provenance of this client: model, endpoint (no credentials), sampling, retry rules.

        The request fields are those the configuration sends to its first call; a switch to
        `max_completion_tokens` a server asked for later is recorded on the calls themselves
        (`token_param`) and in the run's usage. An ordinary model's provenance has no key it did
        not have before, so its run ids are unchanged."""
        sampling = self._configured_sampling(self._declared_reasoning())
        reasoning = (
            {"reasoning_tokens": self._reasoning_budget()} if self._declared_reasoning() else {}
        )
        seed: int | str = (
            self.sampling.seed if self.sampling.seed is not None else "derived-from-run-seed"
        )
        structured: str = self.structured
        if self._ignoring is not None:  # what was applied, never what was asked for
            seed = f"not sent: {self._ignoring} ignores seed"
            structured = f"none: {self._ignoring} ignores response_format"
        provider: dict[str, str] = {}  # openai:MODEL: none, so its run ids are unchanged
        if self._inspect is not None:
            # Which layer and provider served the calls, and what it was sent (never inferred).
            provider = {"layer": "inspect_ai", "provider": self._inspect}
            if self._inspect not in SEED_PROVIDERS:
                seed = f"not sent: inspect_ai's {self._inspect} provider passes no seed on"
            if self._formats and self._inspect in CHAT_PROVIDERS:
                structured = f"{self.structured}: response_format sent as is"
            elif self._formats:
                structured = (
                    f"{self.structured}: response_schema (json_schema) via inspect_ai, when the "
                    "schema converts without loss; else none (prompt + validation)"
                )
            elif self.structured != "off":
                structured = (
                    f"none: inspect_ai's {self._inspect} provider gets no "
                    f"{'json_object' if self.structured == 'json_object' else 'response_schema'}"
                    " (prompt + validation)"
                )
        sampled = sampling.as_params()
        if self._inspect in NO_SAMPLING_PROVIDERS:
            for name in ("temperature", "top_p"):
                sampled[name] = f"not sent: inspect_ai's {self._inspect} provider sends none"
        return {
            "model": self.model,
            **provider,
            "endpoint": self.endpoint,
            **sampled,
            **reasoning,
            "sampling_seed": seed,
            "structured": structured,
            "max_repairs": self.max_repairs,
            "retry": self.retry.as_params(),
            "jitter_seed": self.jitter_seed,
        }

    @property
    def endpoint(self) -> str:
        if self._inspect is not None and not self.base_url:
            return f"inspect_ai:{self._inspect} (its default endpoint)"
        return public_endpoint(self.base_url)

    def _adopt_detected(self) -> None:
        known = _DETECTED_FORMATS.get(self._detection_key())
        if self.structured == "auto" and not self._format_confirmed and known is not None:
            self._formats, self._format_confirmed = list(known), True

    def _detection_key(self) -> tuple[str, str]:
        return self.endpoint, self.model

    @property
    def structured_format(self) -> str | None:
        """The response_format kind in use ("json_schema", "json_object" or "none"), or None
        while auto-detection has not had an answer from the server yet."""
        if not self._format_confirmed:
            return None
        return self._formats[0] if self._formats else "none"

    def reseed(self, seed: int) -> None:
        """Restart the backoff jitter stream and the cap meter (called by agents on reset)."""
        self.jitter_seed = seed
        self._jitter = make_rng(seed, "llm-client", "backoff-jitter", self.model)
        self._derived_sampling_seed = derive_seed(seed, "llm-client", "sampling", self.model)
        self.meter.reset()  # a new run: its caps count from zero

    # ------------------------------------------------------------------ shared steps
    def _endpoint(self, api_key: str | None) -> InspectEndpoint:
        """The transport: inspect's provider of `_served`. The key (given: `--api-key-env`;
        else the provider's own variable, `key_variables`, `OPENAI_API_KEY` for `openai:MODEL`)
        goes to the provider and nowhere else, with or without a base URL: a placeholder is
        sent only where no key is set (a local server takes any)."""
        names = ("OPENAI_API_KEY",) if self._provider == "openai" else key_variables(self._served)
        key = api_key or next((os.environ[n] for n in names if os.environ.get(n)), None)
        if self.provider != "inspect":
            key = key or PLACEHOLDER_KEY
        if key and key != PLACEHOLDER_KEY:
            register_secret(key)  # from now on no stored text can hold it
        for secret in secret_query_values(self.base_url):
            register_secret(secret)
        base_url = self.base_url
        if self._provider == "openai":
            base_url = base_url or DEFAULT_ENDPOINT  # the openai SDK's
        return InspectEndpoint(self._served, base_url, key)

    # ------------------------------------------------------------------ reasoning models
    def _declared_reasoning(self) -> bool:
        """A reasoning model by its name or inspect_ai's model database (OpenAI's, or one that
        thinks by default: its hidden reasoning counts against the reply budget too) or by a
        reasoning effort asked for."""
        return (
            is_reasoning_model(self.model)
            or thinks_by_default(self.model)
            or self.sampling.reasoning_effort is not None
        )

    def _refuses_temperature(self, reasoning: bool) -> bool:
        """OpenAI's reasoning models take no temperature (nor a server that asked for
        `max_completion_tokens`, nor a model asked for a reasoning effort); a family that
        merely thinks by default keeps ours."""
        return reasoning and (
            is_reasoning_model(self.model)
            or self._learned_completion_tokens
            or self.sampling.reasoning_effort is not None
        )

    def _reasoning(self) -> bool:
        """A reasoning model as far as this client knows now (a server that refused
        `max_tokens` for `max_completion_tokens` serves one)."""
        return self._declared_reasoning() or self._learned_completion_tokens

    def _reasoning_budget(self) -> int:
        return DEFAULT_REASONING_TOKENS if self.reasoning_tokens is None else self.reasoning_tokens

    def _token_field(self) -> str:
        if self.token_param != "auto":
            return self.token_param
        if is_reasoning_model(self.model) or self._learned_completion_tokens:
            return "max_completion_tokens"
        return "max_tokens"

    def _configured_sampling(self, reasoning: bool) -> Sampling:
        """The sampling controls as sent: the budget's field, and no default temperature for a
        reasoning model (they take none; OpenAI's refuse one)."""
        sampling = self.sampling
        field_name = self._token_field()
        if field_name != sampling.token_field:
            sampling = replace(sampling, token_field=field_name)
        refuses = self._refuses_temperature(reasoning)
        if refuses and not self.temperature_explicit and sampling.temperature is not None:
            sampling = replace(sampling, temperature=None)
        return sampling

    def _request(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], name: str
    ) -> dict[str, Any]:
        self._adopt_detected()  # another client may have found out meanwhile
        if self.token_param == "auto" and self._detection_key() in _NEEDS_COMPLETION_TOKENS:
            self._learned_completion_tokens = True  # another client of this process found out
        reasoning = self._reasoning()
        sampling = self._configured_sampling(reasoning)
        if self._ignoring is not None:
            sampling = replace(sampling, seed=None)
        elif sampling.seed is None and self._derived_sampling_seed is not None:
            sampling = replace(sampling, seed=self._derived_sampling_seed)
        if sampling.max_tokens is None:
            # The response budget is what the reply must hold (llm_budget), not a constant.
            sampling = replace(sampling, max_tokens=response_budget(schema))
        if reasoning and self._reasoning_budget():
            # Hidden reasoning tokens count against the same budget: room for them on top.
            budget = (sampling.max_tokens or 0) + self._reasoning_budget()
            sampling = replace(sampling, max_tokens=budget)
        if self._inspect is not None:
            return self._inspect_request(messages, sampling, schema, name, reasoning)
        fmt = self._formats[0] if self._formats else None
        return build_request(self.model, messages, sampling, schema, name, fmt)

    def _inspect_request(
        self,
        messages: Sequence[Mapping[str, str]],
        sampling: Sampling,
        schema: Mapping[str, Any],
        name: str,
        reasoning: bool,
    ) -> dict[str, Any]:
        """Our request body of an inspect call (hashed and cached like any): what inspect's
        provider is sent, in OpenAI form (`llm_inspect.generate_args` translates it)."""
        if self._inspect not in SEED_PROVIDERS:
            sampling = replace(sampling, seed=None)
        fmt = self._formats[0] if self._formats else None
        converted: Mapping[str, Any] | None = schema
        if fmt and self._inspect not in CHAT_PROVIDERS:
            converted = inspect_schema(schema)  # inspect's response_schema model
        request = build_request(self.model, messages, sampling, converted or {}, name, fmt)
        if converted is None:
            request.pop("response_format", None)  # lossy: not sent, the reply is validated
        if reasoning and self._reasoning_budget() and self._inspect not in EXACT_PROVIDERS:
            request["reasoning_tokens"] = self._reasoning_budget()  # e.g. Claude's thinking
        return request

    def _cached(self, request: Mapping[str, Any]) -> Completion | None:
        if self.cache is None:
            return None
        found = self.cache.cached_response(cache_key(self.model, request))
        return Completion.from_json(found) if found is not None else None

    def _circuit_open(self) -> bool:
        """Give up on an endpoint that refused or could not be reached: after one whole call
        (with its retries) if it never answered, after CIRCUIT_LIMIT calls in a row if it did.
        Calls that timed out (with their retries) count as well, CIRCUIT_LIMIT in a row: a hung
        endpoint is given up on; a busy one (429, 5xx) is not, each call gets its retries."""
        first = not self._answered and self._last_unreachable
        return self._failed_in_row >= (1 if first else CIRCUIT_LIMIT)

    def _skipped(self, attempt: _Attempt) -> CallRecord:
        attempt.skipped = True  # leaves the circuit and its last failure as they are
        return self._record(
            attempt,
            None,
            f"{NOT_SENT}: endpoint failed {self._failed_in_row} call(s) in a row "
            f"(last: {self._last_failure})",
        )

    def _note(self, attempt: _Attempt, error: str | None, cached: bool = False) -> None:
        if attempt.skipped:
            return
        if error is None:
            self._failed_in_row = 0
            self._answered = self._answered or not cached
        elif attempt.unreachable or attempt.timed_out:
            # Timeouts count too: a hung endpoint must not cost every call its whole retries.
            self._failed_in_row += 1
            self._last_failure = error
            self._last_unreachable = attempt.unreachable
        else:
            self._failed_in_row = 0

    def _record(
        self,
        attempt: _Attempt,
        completion: Completion | None,
        error: str | None,
        cached: bool = False,
    ) -> CallRecord:
        if error is not None and not error.startswith(NOT_SENT):
            error = f"{error} (endpoint {self.endpoint})"  # which endpoint failed, always
        record = CallRecord(
            request_hash=cache_key(self.model, attempt.request).split(":", 1)[1],
            model=self.model,
            prompt_tokens=completion.prompt_tokens if completion else None,
            completion_tokens=completion.completion_tokens if completion else None,
            latency_s=0.0 if cached else round(time.monotonic() - attempt.started, 6),
            finish_reason=completion.finish_reason if completion else None,
            retries=attempt.retries,
            error=self._scrub(error),
            cached=cached,
            purpose=PURPOSES.get(attempt.name, attempt.name),
            cached_tokens=completion.cached_tokens if completion else None,
            resolved_model=completion.resolved_model if completion else None,
            parse_error=None,
            max_tokens=attempt.request.get(
                "max_tokens", attempt.request.get("max_completion_tokens")
            ),
            prompt_chars=sum(len(m["content"]) for m in attempt.messages),
            reply_chars=len(completion.text) if completion else None,
        )
        if completion is not None and completion.cache_write_tokens:
            record["cache_write_tokens"] = completion.cache_write_tokens
        if "max_completion_tokens" in attempt.request:  # what was sent (absent: max_tokens)
            record["token_param"] = "max_completion_tokens"
        self._note(attempt, record.get("error"), cached)
        self.meter.charge(record, attempt.held_usd)
        attempt.held_usd = 0.0
        if self.progress is not None:
            self.progress.call(record)
        return record

    def _after_failure(self, attempt: _Attempt, exc: CallFault) -> float | str:
        """Seconds to wait before the next try, or the final error text when giving up."""
        attempt.unreachable = is_unreachable(exc)
        attempt.timed_out = exc.kind == "timeout"
        if (
            self.token_param == "auto"
            and "max_tokens" in attempt.request
            and refuses_max_tokens(exc)
        ):
            # A reasoning model under a name we did not know: send the budget as
            # max_completion_tokens (and no default temperature) from now on, at once; not a
            # retry. Only once: a refusal of the new request is final.
            self._learned_completion_tokens = True
            _NEEDS_COMPLETION_TOKENS.add(self._detection_key())
            attempt.request = self._request(attempt.messages, attempt.schema, attempt.name)
            grown = self.meter.worst_case_usd(attempt.request) - attempt.held_usd
            over = self.meter.admit(grown, count=False) if grown > 0 else None
            if over is not None:  # the reasoning budget it now needs does not fit: not sent
                return str(over)
            attempt.held_usd += max(0.0, grown)
            return 0.0
        kind = failure_kind(exc)
        if kind == "structured_unsupported" and "response_format" in attempt.request:
            # The server refused this response_format kind: drop it and resend at once with
            # the next kind (or none). Not a retry: nothing went wrong on the server's side.
            # Concurrent requests may all be refused for the same kind: drop it only once, and
            # a request refused for a kind already dropped is simply resent.
            refused = attempt.request["response_format"]["type"]
            current = self._formats[0] if self._formats else None
            if refused == current and not self._format_confirmed:
                self._formats.pop(0)
                self._format_confirmed = not self._formats
                if self._format_confirmed:
                    _DETECTED_FORMATS[self._detection_key()] = []
            if refused != current or not self._format_confirmed or not self._formats:
                attempt.request = self._request(attempt.messages, attempt.schema, attempt.name)
                return 0.0
        if kind != "transient":
            return describe_failure(exc)
        if attempt.run_deadline is not None and time.monotonic() >= attempt.run_deadline:
            return self._time_capped(describe_failure(exc))  # e.g. a timeout cut at the cap
        if attempt.retries >= self.retry.max_retries:
            return f"{describe_failure(exc)} (gave up after {attempt.retries} retries)"
        base = min(self.retry.max_delay_s, self.retry.base_delay_s * (2.0**attempt.retries))
        delay = base * (0.5 + float(self._jitter.random()))  # jitter in [0.5, 1.5) x base
        hinted = exc.retry_after
        if hinted is not None:
            if hinted > self.retry.max_retry_wait_s:
                return (
                    f"{describe_failure(exc)} (gave up after {attempt.retries} retries: the "
                    f"server asked to wait {hinted:g} s, over --max-retry-wait "
                    f"{self.retry.max_retry_wait_s:g} s)"
                )
            delay = max(delay, hinted)
        if time.monotonic() + delay >= attempt.deadline:
            if attempt.run_deadline is not None and attempt.run_deadline <= attempt.deadline:
                return self._time_capped(describe_failure(exc))
            return (
                f"{describe_failure(exc)} (gave up after {attempt.retries} retries: total retry "
                f"time {attempt.total_time_s:g}s would be exceeded)"
            )
        attempt.retries += 1
        if self.progress is not None:
            self.progress.retry(describe_failure(exc))
        return delay

    def _time_capped(self, last: str) -> str:
        cap = self.meter.caps.max_time_s
        return f"{TIME_CAP} --max-time {cap:g} reached (the call's last try: {last})"

    def _start(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, JsonValue], name: str
    ) -> _Attempt | CapReached:
        """A call's first request, admitted by the run's caps (else their refusal): a
        response-cache hit too, so a resumed run stops where an uninterrupted one did."""
        now = time.monotonic()
        request = self._request(messages, schema, name)
        held = self.meter.worst_case_usd(request)
        over = self.meter.admit(held)
        if over is not None:
            return over
        budget = request.get("max_tokens", request.get("max_completion_tokens"))
        timeout, total = self.retry.timeout_for(budget), self.retry.total_time_for(budget)
        attempt = _Attempt(request, now, now + total, messages, schema, name, timeout, total)
        attempt.held_usd = held
        run_deadline = self.meter.deadline()
        if run_deadline is not None and run_deadline < attempt.deadline:
            # The run's time cap ends every request and retry wait of this call too.
            attempt.deadline = attempt.run_deadline = run_deadline
        return attempt

    def _capped_reply(
        self, text: str | None, record: CallRecord, calls: list[CallRecord]
    ) -> JsonReply | None:
        """The reply of a call the run's time cap stopped (the run ends failed, cap named)."""
        if not str(record.get("error") or "").startswith(TIME_CAP):
            return None
        over = self.meter.time_cap()
        return JsonReply(None, text, str(over), calls, cap_reached=str(over))

    @staticmethod
    def _scrub(text: str | None) -> str | None:
        """Remove credentials from an error text, in case a server echoed them back."""
        return scrub_text(text) if isinstance(text, str) and text else text

    def _timeout_for(self, attempt: _Attempt) -> float:
        remaining = attempt.deadline - time.monotonic()
        return max(0.05, min(attempt.timeout_s, remaining))

    def _accept(self, attempt: _Attempt, completion: Completion) -> Completion:
        """The transport's Completion, scrubbed, remembered, its structured format confirmed."""
        # A server or proxy that echoes the request headers must not hand the key to the agent
        # (whose replies become events, cache entries and exports).
        # Every text of the reply, the `model` it names too (a server may echo the key there).
        completion = replace(
            completion,
            text=scrub_text(completion.text),
            resolved_model=self._scrub(completion.resolved_model),
            finish_reason=self._scrub(completion.finish_reason),
        )
        if not self._format_confirmed and "response_format" in attempt.request:
            self._format_confirmed = True
            _DETECTED_FORMATS[self._detection_key()] = list(self._formats)
        if self.cache is not None:
            key = cache_key(self.model, attempt.request)
            self.cache.cache_response(key, self.model, completion.to_json())
        return completion

    def _json_turns(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any]
    ) -> Generator[Sequence[Mapping[str, str]], _Turn, JsonReply]:
        """`complete_json` of either client: yields each conversation to send, is sent the
        call's outcome, returns the reply (valid, or why not)."""
        validator = validator_for_schema(schema)
        if isinstance(validator, str):
            return JsonReply(None, None, validator, [])
        conversation: Sequence[Mapping[str, str]] = list(messages)
        calls: list[CallRecord] = []
        text: str | None = None
        problem = "no reply"
        for _turn in range(1 + self.max_repairs):
            outcome = yield conversation
            if isinstance(outcome, CapReached):
                return JsonReply(None, text, str(outcome), calls, cap_reached=str(outcome))
            completion, record = outcome
            calls.append(record)
            if completion is None:
                capped = self._capped_reply(text, record, calls)
                if capped is not None:
                    return capped
                return JsonReply(None, text, record.get("error") or "call failed", calls)
            text = completion.text
            value, problem = validate_reply(text, validator, completion.finish_reason)
            if value is not None:
                return JsonReply(value, text, None, calls)
            record["parse_error"] = problem
            if problem.startswith(SCHEMA_FAULT):
                return JsonReply(None, text, problem, calls)
            conversation = repair_messages(conversation, text, problem)
        tries = 1 + self.max_repairs
        return JsonReply(None, text, f"no valid reply in {tries} attempts: {problem}", calls)


class LLMClient(_ClientCore):
    """Blocking client. `LLMClient("gpt-4o-mini")` reads OPENAI_BASE_URL / OPENAI_API_KEY."""

    def __init__(
        self, model: str, *, api_key: str | None = None, **options: Unpack[ClientOptions]
    ) -> None:
        super().__init__(model, **options)
        self._sdk = self._endpoint(api_key)
        # How a retry waits; a test puts a recorder here to check a Retry-After without waiting.
        self.wait: Callable[[float], None] = time.sleep

    def chat(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], name: str = "reply"
    ) -> tuple[Completion | None, CallRecord]:
        """One logical completion with retries; never raises for model or network faults
        (`CapReached`: the run's caps do not admit it)."""
        turn = self._chat(messages, schema, name)
        if isinstance(turn, CapReached):
            raise turn
        return turn

    def _chat(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], name: str
    ) -> _Turn:
        attempt = self._start(messages, schema, name)
        while not isinstance(attempt, CapReached):
            hit = self._cached(attempt.request)  # checked again if the request was downgraded
            if hit is not None:
                return hit, self._record(attempt, hit, None, cached=True)
            if self._circuit_open():
                return None, self._skipped(attempt)
            if self.progress is not None:
                self.progress.started()
            try:  # on inspect's loop, under a wall-clock deadline for the whole request (an
                # answer trickled byte by byte ends at the call's timeout too)
                sent = self._sdk.create_sync(attempt.request, self._timeout_for(attempt))
                accepted = self._accept(attempt, sent)
                return accepted, self._record(attempt, accepted, None)
            except CallFault as exc:  # anything else is a bug of ours: it surfaces
                outcome = self._after_failure(attempt, exc)
            if isinstance(outcome, str):
                return None, self._record(attempt, None, outcome)
            self.wait(outcome)
        return attempt  # the caps do not admit it

    def complete_json(
        self,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any],
        name: str = "reply",
    ) -> JsonReply:
        """A JSON object valid under `schema`, after at most `max_repairs` repair turns."""
        turns = self._json_turns(messages, schema)
        try:
            conversation = next(turns)
            while True:
                conversation = turns.send(self._chat(conversation, schema, name))
        except StopIteration as done:
            reply: JsonReply = done.value
            return reply


class AsyncLLMClient(_ClientCore):
    """Asyncio client; at most `max_concurrency` requests in flight at once (default: 4, or 1
    for an endpoint on this machine, which usually answers one request at a time: more in
    flight only wait there, and time out)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        max_concurrency: int | None = None,
        **options: Unpack[ClientOptions],
    ) -> None:
        super().__init__(model, **options)
        if max_concurrency is None:
            host = urlsplit(self.base_url or "").hostname
            max_concurrency = 1 if host in ("127.0.0.1", "localhost", "::1") else 4
        if max_concurrency < 1:
            raise AgentError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.max_concurrency = max_concurrency
        self._sdk = self._endpoint(api_key)
        self._gate: asyncio.Semaphore | None = None

    def params(self) -> JsonObject:
        return {**super().params(), "max_concurrency": self.max_concurrency}

    def _semaphore(self) -> asyncio.Semaphore:
        # Created lazily so it binds to the loop that actually runs the requests.
        if self._gate is None:
            self._gate = asyncio.Semaphore(self.max_concurrency)
        return self._gate

    async def _chat(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], name: str
    ) -> _Turn:
        async with self._semaphore():  # admitted by the caps once its turn to be sent came
            attempt = self._start(messages, schema, name)
            while not isinstance(attempt, CapReached):
                hit = self._cached(attempt.request)
                if hit is not None:
                    return hit, self._record(attempt, hit, None, cached=True)
                if self._circuit_open():
                    return None, self._skipped(attempt)
                if self.progress is not None:
                    self.progress.started()
                try:  # under a wall-clock deadline on inspect's loop, as the sync client's
                    timeout = self._timeout_for(attempt)
                    completion = await self._sdk.create_async(attempt.request, timeout)
                    accepted = self._accept(attempt, completion)
                    return accepted, self._record(attempt, accepted, None)
                except CallFault as exc:
                    outcome = self._after_failure(attempt, exc)
                if isinstance(outcome, str):
                    return None, self._record(attempt, None, outcome)
                await asyncio.sleep(outcome)
            return attempt  # the caps do not admit it

    async def complete_json(
        self,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any],
        name: str = "reply",
    ) -> JsonReply:
        turns = self._json_turns(messages, schema)
        try:
            conversation = next(turns)
            while True:
                conversation = turns.send(await self._chat(conversation, schema, name))
        except StopIteration as done:
            reply: JsonReply = done.value
            return reply

    def run_many(
        self,
        jobs: Sequence[tuple[Sequence[Mapping[str, str]], Mapping[str, Any]]],
        name: str = "reply",
    ) -> list[JsonReply]:
        """Many independent requests, `max_concurrency` at a time, for callers without an event
        loop; replies in input order."""
        return asyncio.run(self._in_fresh_loop(jobs, name))

    async def _in_fresh_loop(
        self, jobs: Sequence[tuple[Sequence[Mapping[str, str]], Mapping[str, Any]]], name: str
    ) -> list[JsonReply]:
        # A semaphore belongs to one event loop, and asyncio.run makes a new loop each time:
        # give this loop its own gate (the requests themselves run on inspect's loop).
        outer_gate, self._gate = self._gate, None
        try:
            replies = (self.complete_json(msgs, schema, name) for msgs, schema in jobs)
            return list(await asyncio.gather(*replies))
        finally:
            self._gate = outer_gate
