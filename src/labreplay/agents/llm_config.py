"""Configuration of a chat-model client: decoding controls, retry bounds, structured-output
modes and the endpoint (validated before the first call; shown in provenance without
credentials). Pure values; the one thing read is inspect_ai's model database, which ships
inside that package (which models reason).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from labreplay._provenance import is_secret_name
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonObject

StructuredMode = Literal["auto", "json_schema", "json_object", "off"]
# What each mode offers, best first. "json_schema" is the OpenAI form (also vLLM, Ollama,
# llama.cpp's own server); "json_object" with a "schema" field is llama-cpp-python's form,
# which it turns into a grammar. "auto" tries both, then plain text plus validation.
STRUCTURED_FALLBACKS: dict[str, tuple[str, ...]] = {
    "auto": ("json_schema", "json_object"),
    "json_schema": ("json_schema",),
    "json_object": ("json_object",),
    "off": (),
}

# Endpoint used by the openai package when no base URL is given.
DEFAULT_ENDPOINT = "https://api.openai.com/v1"

# The request field that carries the response budget. "max_tokens" is what every
# OpenAI-compatible server takes; OpenAI's reasoning models (o1, o3, o4-mini, GPT-5) refuse it
# and take "max_completion_tokens". "auto" sends "max_completion_tokens" to a model whose name
# says it reasons (`is_reasoning_model`), "max_tokens" to every other, and switches once when a
# server refuses "max_tokens" naming "max_completion_tokens" (see `llm_client`).
TOKEN_PARAMS: tuple[str, ...] = ("auto", "max_tokens", "max_completion_tokens")
# Values of `reasoning_effort` (sent as is; OpenAI's reasoning models and several
# OpenAI-compatible servers take it).
REASONING_EFFORTS: tuple[str, ...] = ("minimal", "low", "medium", "high")
# Completion tokens added to each call's reply budget for a reasoning model's hidden reasoning
# (its `max_completion_tokens` counts them too): without them a 89-260-token action budget is
# spent on reasoning before any reply is written. An explicit `--reasoning-tokens N` replaces it.
DEFAULT_REASONING_TOKENS = 8192
# Model names (after any "provider/" prefix) of OpenAI's reasoning families: o1, o3, o4-mini...
# and gpt-5, gpt-5-mini, gpt-5.1..., gpt-6-sol...
_REASONING_NAME = re.compile(
    r"^(o[1-9](?:$|[-_.:])|gpt-(?:[5-9]|[1-9]\d)(?:$|[-_.:]))", re.IGNORECASE
)


def _bare_name(model: str) -> str:
    return model.strip().rsplit("/", 1)[-1]


@functools.lru_cache(maxsize=256)
def catalogue_entry(model: str) -> tuple[str, bool | None, str | None] | None:
    """What inspect_ai's model database (shipped with the package, kept by the field) says of
    a model: (organization, reasons, default reasoning effort), or None where it does not know
    the name or inspect_ai is not installed. The full string is asked first, then the bare
    name (`openai-api/vllm/...` paths are not in it)."""
    try:
        from inspect_ai.model import get_model_info
    except ImportError:
        return None
    for name in dict.fromkeys((model.strip(), _bare_name(model))):
        try:
            info = get_model_info(name)
        except Exception:  # a database that cannot answer knows nothing
            return None
        if info is not None:
            return (info.organization or "", info.reasoning, info.reasoning_effort_default)
    return None


def is_reasoning_model(model: str) -> bool:
    """True for OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, gpt-5-mini, gpt-6-sol...): by
    name, or by inspect_ai's model database for an OpenAI model it says reasons."""
    if _REASONING_NAME.match(_bare_name(model)):
        return True
    entry = catalogue_entry(model)
    return entry is not None and entry[0].lower() == "openai" and entry[1] is True


# Families (outside OpenAI's) that think by default, whose hidden reasoning tokens count against
# the reply's output budget: Gemini 2.5 Pro/Flash (not Flash-Lite), Gemini 3 and the -latest
# aliases, DeepSeek's reasoner and R1, Grok 4 (not its "non-reasoning" variants), Grok 3 Mini
# and Grok Code, GLM 4.5 and later, MiniMax M, Qwen3 (not its Instruct/Coder variants), QwQ,
# gpt-oss, and any "-thinking" model. A reply budget without room for the thinking is cut off
# before the answer (issue 35: 24 of 24 replies). Claude thinks only when asked
# (--reasoning-effort / --reasoning-tokens).
_THINKS_BY_DEFAULT = re.compile(
    r"^(gemini-2\.5-(?:pro|flash)(?!-lite)|gemini-3|deepseek-reasoner|deepseek-r1|grok-4"
    r"|gemini-(?:pro|flash)-latest|grok-3-mini|grok-code|glm-(?:4\.[5-9]|[5-9])|minimax-m"
    r"|qwen3(?!.*(?:instruct|coder))|qwq|gpt-oss"
    r"|.*thinking)",
    re.IGNORECASE,
)
_DOES_NOT_THINK = re.compile(r"non-?reasoning|non-?think|no-?think", re.IGNORECASE)


def thinks_by_default(model: str) -> bool:
    """True for models that reason before every reply without being asked: the name rules
    above, or inspect_ai's model database (a reasoning model with a default effort other than
    "none", Claude's excepted: its effort applies only once thinking is asked for). Where the
    database says a model does not reason, it does not. A wrong yes costs reply budget only;
    a wrong no cuts replies off, so the rules lean to yes."""
    name = _bare_name(model)
    entry = catalogue_entry(model)
    if _DOES_NOT_THINK.search(name) or (entry is not None and entry[1] is False):
        return False
    if _THINKS_BY_DEFAULT.match(name):
        return True
    if entry is None:
        return False
    organization, reasons, effort = entry
    return bool(reasons) and effort not in (None, "none") and organization.lower() != "anthropic"


# The controls always in a client's params (the rest only where set; `token_field` as
# `token_param`).
_ALWAYS_IN_PARAMS = frozenset({"temperature", "top_p", "seed", "max_tokens", "token_field"})


@dataclass(frozen=True)
class Sampling:
    """Decoding controls sent with every request (None = leave the server's default; for
    `max_tokens`, None = derived per call from the reply's schema, see `llm_budget`)."""

    temperature: float | None = 0.0
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    # Sent as `reasoning_effort` when set (reasoning models only).
    reasoning_effort: str | None = None
    # The request field that carries `max_tokens` ("max_tokens" or "max_completion_tokens").
    token_field: str = "max_tokens"

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise AgentError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise AgentError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise AgentError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.seed is not None and self.seed < 0:
            raise AgentError(f"seed must be >= 0, got {self.seed}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise AgentError(
                f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, "
                f"got {self.reasoning_effort!r}"
            )
        if self.token_field not in TOKEN_PARAMS[1:]:
            raise AgentError(
                f"token_field must be max_tokens or max_completion_tokens, got {self.token_field!r}"
            )

    def as_request(self) -> JsonObject:
        """Every control that is set, by its field's name (the budget under `token_field`): a
        control added here is sent with no other line."""
        sent = {
            self.token_field if f.name == "max_tokens" else f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "token_field"
        }
        return {k: v for k, v in sent.items() if v is not None}

    def as_params(self) -> JsonObject:
        params: JsonObject = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "sampling_seed": self.seed,
            "max_tokens": self.max_tokens if self.max_tokens is not None else "derived",
        }
        # Any other control only where set, so an ordinary model's provenance (and the run ids
        # built from it) stay what they were.
        for f in fields(self):
            if f.name not in _ALWAYS_IN_PARAMS and getattr(self, f.name) is not None:
                params[f.name] = getattr(self, f.name)
        if self.token_field != "max_tokens":
            params["token_param"] = self.token_field
        return params


# The derived per-request timeout (`RetryPolicy(timeout_s=None)`, what the LLM builders and
# the CLI use when no --timeout is given) is never below this...
MIN_TIMEOUT_S = 60.0
# ...and leaves the server time to write the call's whole response budget at this speed. Why a
# floor of 20 tokens/s: a fixed 60 s timed out every panel forecast of a small local model
# (SmolLM2 on a loaded 2-core CPU took 89-127 s per checkpoint, prompt evaluation included);
# its 3,173-token budget at 20 tokens/s gives 159 s. Hosted APIs write far faster, so a hung
# request is still cut after a bounded time.
MIN_TOKENS_PER_S = 20.0
# The total time of one call with its retries is at least this many attempts of its timeout.
MIN_ATTEMPTS_IN_TOTAL = 2
# Retry-After: honoured up to this by default; a value over the limit is refused as absurd.
DEFAULT_MAX_RETRY_WAIT_S = 60.0
MAX_RETRY_WAIT_LIMIT_S = 3600.0
DERIVED_TIMEOUT = f"derived: max({MIN_TIMEOUT_S:g} s, max_tokens / {MIN_TOKENS_PER_S:g} tok/s)"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on transient-fault retries: a count, a per-request timeout and a total time.

    `timeout_s=None` derives both per call from its response budget: the timeout is
    max(MIN_TIMEOUT_S, max_tokens / MIN_TOKENS_PER_S) and the total time
    max(total_time_s, MIN_ATTEMPTS_IN_TOTAL x that timeout). A given `timeout_s` is used as is,
    with `total_time_s` as is."""

    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    total_time_s: float = 180.0
    timeout_s: float | None = 60.0
    # The longest `Retry-After` a server may ask for: a call asked to wait longer gives up at
    # once (with that said), instead of retrying early into another refusal.
    max_retry_wait_s: float = DEFAULT_MAX_RETRY_WAIT_S
    # A wall-clock deadline on one call with all its retries (--max-call-time), over any other
    # rule: its requests' timeouts and retry waits all end by then. None: the total above.
    call_time_s: float | None = None

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise AgentError(f"max_retries must be >= 0, got {self.max_retries}")
        if not 0 <= self.max_retry_wait_s <= MAX_RETRY_WAIT_LIMIT_S:
            raise AgentError(
                f"--max-retry-wait must be in [0, {MAX_RETRY_WAIT_LIMIT_S:g}] seconds, "
                f"got {self.max_retry_wait_s:g}"
            )
        for name in ("base_delay_s", "max_delay_s"):
            if getattr(self, name) < 0:
                raise AgentError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("total_time_s", "timeout_s", "call_time_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise AgentError(f"{name} must be > 0, got {value}")

    def timeout_for(self, max_tokens: int | None) -> float:
        """The per-request timeout of a call whose response budget is `max_tokens`."""
        if self.timeout_s is not None:
            return self.timeout_s
        return max(MIN_TIMEOUT_S, (max_tokens or 0) / MIN_TOKENS_PER_S)

    def total_time_for(self, max_tokens: int | None) -> float:
        """The time one call may take with all its retries."""
        if self.call_time_s is not None:
            return self.call_time_s
        if self.timeout_s is not None:
            return self.total_time_s
        return max(self.total_time_s, MIN_ATTEMPTS_IN_TOTAL * self.timeout_for(max_tokens))

    def as_params(self) -> JsonObject:
        derived = self.timeout_s is None
        params: JsonObject = {
            "max_retries": self.max_retries,
            "base_delay_s": self.base_delay_s,
            "max_delay_s": self.max_delay_s,
            "total_time_s": (
                f"derived: max({self.total_time_s:g} s, {MIN_ATTEMPTS_IN_TOTAL} x timeout)"
                if derived
                else self.total_time_s
            ),
            "timeout_s": DERIVED_TIMEOUT if derived else self.timeout_s,
        }
        if self.max_retry_wait_s != DEFAULT_MAX_RETRY_WAIT_S:  # the default keeps run ids
            params["max_retry_wait_s"] = self.max_retry_wait_s
        if self.call_time_s is not None:
            params["call_time_s"] = self.call_time_s
        return params


def _host(base_url: str | None) -> str:
    """The lower-case host of `base_url` ("" for none, or one that does not parse)."""
    try:
        return (urlsplit(base_url).hostname or "").lower() if base_url else ""
    except ValueError:
        return ""


def ignoring_host(base_url: str | None) -> str | None:
    """The host of `base_url` if it ignores response_format and seed, else None. Anthropic's
    OpenAI-compatible endpoint answers 200 either way, so a detection that the server "took" a
    format would record structured output that never happened: none is sent there, and
    provenance says so."""
    host = _host(base_url)
    return host if host == ANTHROPIC_HOST else None


def check_base_url(base_url: str | None) -> None:
    """Refuse, before any call, a base URL no request could reach (no scheme, no host...)."""
    if base_url is None:
        return
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise AgentError(f"base URL {public_endpoint_safe(base_url)!r} is invalid: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.port == 0:
        raise AgentError(
            f"base URL {public_endpoint_safe(base_url)!r} is not an http(s) URL with a host, "
            "e.g. http://127.0.0.1:8080/v1"
        )


def public_endpoint_safe(base_url: str) -> str:
    """`public_endpoint`, or the text without its query when it does not even parse."""
    try:
        return public_endpoint(base_url)
    except ValueError:
        return base_url.split("?", 1)[0]


def public_endpoint(base_url: str | None) -> str:
    """The endpoint as it may appear in provenance: no user:password, query or fragment."""
    if not base_url:
        return DEFAULT_ENDPOINT
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def secret_query_values(base_url: str | None) -> list[str]:
    """Values of credential-like query parameters (api-key, key, token...) of `base_url`, and
    the password of its `user:password@` part (sent as Basic auth, so a server can echo it)."""
    if not base_url:
        return []
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return []
    found = [v for k, v in parse_qsl(parts.query, keep_blank_values=False) if is_secret_name(k)]
    return [*found, parts.password] if parts.password else found


# ---------------------------------------------------------------------- providers
ANTHROPIC_HOST = "api.anthropic.com"
ANTHROPIC_ENDPOINT = "https://api.anthropic.com/v1"
# `--provider` of `openai:MODEL`: "openai" (an OpenAI-compatible chat endpoint), "anthropic"
# (Anthropic's Messages API, through inspect_ai's anthropic provider), or "auto" (anthropic for
# a base URL on api.anthropic.com).
PROVIDERS = ("auto", "openai", "anthropic")


def resolve_provider(provider: str, base_url: str | None) -> str:
    """ "openai" or "anthropic": as asked, or ("auto") by the base URL's host."""
    if provider not in PROVIDERS:
        raise AgentError(f"--provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    if provider != "auto":
        return provider
    return "anthropic" if _host(base_url) == ANTHROPIC_HOST else "openai"
