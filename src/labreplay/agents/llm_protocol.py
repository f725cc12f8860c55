"""The pure parts of talking to a chat model: request shape, reply parsing and validation,
repair turns, fault classification. No I/O here, so the sync and async clients share it and
tests can check it directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from labreplay._hashing import sha256_json
from labreplay.agents.base import CallRecord
from labreplay.errors import AgentError

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
_ERROR_TEXT_LIMIT = 400
# Problems that start with this are the environment's fault: no repair turn can fix them.
SCHEMA_FAULT = "the environment's schema"
_MAX_JSON_STARTS = 64  # how many '{' positions we try when a reply wraps JSON in prose


@dataclass(frozen=True)
class Sampling:
    """Decoding controls sent with every request (None = leave the server's default)."""

    temperature: float | None = 0.0
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = 512

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise AgentError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise AgentError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise AgentError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.seed is not None and self.seed < 0:
            raise AgentError(f"seed must be >= 0, got {self.seed}")

    def as_request(self) -> dict[str, Any]:
        fields = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
        }
        return {k: v for k, v in fields.items() if v is not None}

    def as_params(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "sampling_seed": self.seed,
            "max_tokens": self.max_tokens,
        }


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on transient-fault retries: a count, a per-request timeout and a total time."""

    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    total_time_s: float = 180.0
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise AgentError(f"max_retries must be >= 0, got {self.max_retries}")
        for name in ("base_delay_s", "max_delay_s"):
            if getattr(self, name) < 0:
                raise AgentError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("total_time_s", "timeout_s"):
            if getattr(self, name) <= 0:
                raise AgentError(f"{name} must be > 0, got {getattr(self, name)}")

    def as_params(self) -> dict[str, Any]:
        return {
            "max_retries": self.max_retries,
            "base_delay_s": self.base_delay_s,
            "max_delay_s": self.max_delay_s,
            "total_time_s": self.total_time_s,
            "timeout_s": self.timeout_s,
        }


@dataclass(frozen=True)
class Completion:
    """The parts of a chat completion we keep (and cache)."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Completion:
        return cls(
            text=str(data.get("text") or ""),
            finish_reason=data.get("finish_reason"),
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
        )


@dataclass
class JsonReply:
    """Outcome of `complete_json`: a valid object, or the last raw text and why it failed."""

    value: dict[str, Any] | None
    text: str | None
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.value is not None


class MalformedResponse(Exception):
    """HTTP 200 whose body was not a chat completion (a proxy's error page, truncated JSON)."""


# ---------------------------------------------------------------------- requests
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def build_request(
    model: str,
    messages: Sequence[Mapping[str, str]],
    sampling: Sampling,
    schema: Mapping[str, Any],
    name: str,
    response_format: str | None,
) -> dict[str, Any]:
    """The exact chat.completions request body (minus transport options)."""
    request: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        **sampling.as_request(),
    }
    if response_format == "json_object":
        request["response_format"] = {"type": "json_object", "schema": dict(schema)}
    elif response_format == "json_schema":
        request["response_format"] = {
            "type": "json_schema",
            # strict=False: strict mode demands schema features (all keys required, no
            # free-form objects) that our action schemas do not promise.
            "json_schema": {
                "name": _SCHEMA_NAME.sub("_", name)[:64] or "reply",
                "schema": dict(schema),
                "strict": False,
            },
        }
    return request


def request_hash(request: Mapping[str, Any]) -> str:
    return sha256_json(dict(request))


def cache_key(model: str, request: Mapping[str, Any]) -> str:
    """Response-cache key: the model name plus the sha256 of the canonical request."""
    return f"{model}:{request_hash(request)}"


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
    """Values of credential-like query parameters (api-key, key, token...) of `base_url`."""
    if not base_url:
        return []
    from labreplay._provenance import is_secret_name

    try:
        query = urlsplit(base_url).query
    except ValueError:
        return []
    return [v for k, v in parse_qsl(query, keep_blank_values=False) if is_secret_name(k)]


# ---------------------------------------------------------------------- replies
def parse_completion(response: Any) -> Completion | str:
    """A Completion from an SDK response object, or a description of why it is not one."""
    choices = getattr(response, "choices", None)
    if not choices:
        shown = str(response)[:80].replace("\n", " ")
        return f"malformed response: body is not a chat completion ({shown!r})"
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    usage = getattr(response, "usage", None)
    return Completion(
        text=content if isinstance(content, str) else "",
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=_int_or_none(getattr(usage, "prompt_tokens", None)),
        completion_tokens=_int_or_none(getattr(usage, "completion_tokens", None)),
    )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text`: the whole text, a fenced block, or embedded in prose."""
    stripped = text.strip()
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(stripped))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    tries = 0
    while start != -1 and tries < _MAX_JSON_STARTS:
        try:
            value, _end = decoder.raw_decode(stripped, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = stripped.find("{", start + 1)
        tries += 1
    return None


def validator_for_schema(schema: Mapping[str, Any]) -> Any:
    """A jsonschema validator for `schema`, or an error text if it is not a schema at all.

    The schema is not checked against its meta-schema here: that costs ~40 ms per schema and
    the environment publishes a new one almost every step. A schema that turns out broken
    during validation is reported by `validate_reply` instead.
    """
    try:
        import jsonschema
    except ModuleNotFoundError as exc:
        raise AgentError(
            "LLM agents need the jsonschema package: pip install 'labreplay[llm]'"
        ) from exc
    if not isinstance(schema, Mapping):
        return f"{SCHEMA_FAULT} is not a JSON object: {_clip(repr(schema))}"
    return jsonschema.validators.validator_for(schema)(dict(schema))


def validate_reply(
    text: str, validator: Any, finish_reason: str | None
) -> tuple[dict[str, Any] | None, str]:
    """(object, "") when `text` holds a schema-valid JSON object, else (None, reason)."""
    value = extract_json_object(text)
    if value is None:
        reason = "the reply contains no JSON object"
        if finish_reason == "length":
            reason += " (the reply was cut off at the token limit)"
        return None, reason
    import jsonschema

    try:
        if validator.is_valid(value):  # the fast path; error details only when needed
            return value, ""
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except Exception as exc:
        # Only now pay for the meta-schema check: it tells a broken schema (the environment's
        # fault, reported as data) from a failure of ours (re-raised).
        try:
            type(validator).check_schema(validator.schema)
        except jsonschema.SchemaError as bad:
            return None, f"{SCHEMA_FAULT} is invalid: {_clip(bad.message)}"
        import referencing.exceptions

        unusable = jsonschema.exceptions.UnknownType | referencing.exceptions.Unresolvable
        if isinstance(exc, unusable):
            return None, f"{SCHEMA_FAULT} cannot be evaluated: {_clip(str(exc))}"
        raise
    if error is None:  # pragma: no cover - is_valid and iter_errors disagree
        return value, ""
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    return None, f"schema violation at {where}: {_clip(error.message)}"


def repair_messages(
    conversation: Sequence[Mapping[str, str]], reply: str, problem: str
) -> list[dict[str, str]]:
    """The conversation plus the rejected reply and a turn that says what was wrong with it."""
    return [
        *({"role": m["role"], "content": m["content"]} for m in conversation),
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": (
                f"That reply cannot be used: {problem}. Answer again with exactly one JSON "
                "object that satisfies the schema given above, and nothing else."
            ),
        },
    ]


# ---------------------------------------------------------------------- faults
FailureKind = Literal["transient", "structured_unsupported", "fatal"]
_TRANSIENT_STATUS = {408, 409, 429}
_STRUCTURED_HINTS = ("response_format", "json_schema", "grammar", "schema")


def is_call_failure(exc: BaseException) -> bool:
    """True for faults of the model, server or network; False for bugs that must surface."""
    if isinstance(exc, MalformedResponse | OSError):
        return True
    import openai

    return isinstance(exc, openai.OpenAIError)


def failure_kind(exc: BaseException) -> FailureKind:
    """Whether a failed call is worth retrying, means the server lacks structured output, or is
    final (bad key, unknown model, prompt too long...)."""
    if isinstance(exc, MalformedResponse):
        return "transient"
    import openai

    if isinstance(exc, openai.APIConnectionError):  # includes timeouts
        return "transient"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = str(exc).lower()
        if status in {400, 404, 415, 422, 501} and any(h in text for h in _STRUCTURED_HINTS):
            return "structured_unsupported"
        if status == 500 and "response_format" in text:
            # llama-cpp-python answers an unknown response_format type with a 500 that quotes
            # its request validation error: a refusal, not a fault worth retrying.
            return "structured_unsupported"
        if status in _TRANSIENT_STATUS or status >= 500:
            return "transient"
        return "fatal"
    if isinstance(exc, openai.APIResponseValidationError):
        return "transient"
    if isinstance(exc, OSError):
        return "transient"
    return "fatal"


def describe_failure(exc: BaseException) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {_clip(str(exc.__cause__ or exc))}"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {_clip(str(exc))}"
    return f"{type(exc).__name__}: {_clip(str(exc))}"


def retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After hint in seconds (numeric form only)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after")
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is not None and value >= 0 else None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."
