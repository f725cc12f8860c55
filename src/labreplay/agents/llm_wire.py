"""The wire format of a chat model: the request body, the reply we keep (and cache), JSON
extraction, schema validation and repair turns. No I/O here, so the sync and async clients
share it and tests can check it directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

from labreplay._hashing import sha256_json
from labreplay.agents.base import NO_JSON_REPLY, CallRecord
from labreplay.agents.llm_config import Sampling
from labreplay.agents.llm_faults import clip as _clip
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonObject, JsonValue

# Problems that start with this are the environment's fault: no repair turn can fix them.
SCHEMA_FAULT = "the environment's schema"
_MAX_JSON_STARTS = 64  # how many '{' positions we try when a reply wraps JSON in prose


@dataclass(frozen=True)
class Completion:
    """The parts of a chat completion we keep (and cache)."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    # Prompt tokens the provider served from its prefix cache, and the model id it answered
    # with (a dated snapshot behind an alias): None where the provider does not say.
    cached_tokens: int | None = None
    resolved_model: str | None = None
    # Prompt tokens written to the provider's prompt cache (Anthropic's
    # `cache_creation_input_tokens`, billed above the input rate); None where not reported.
    cache_write_tokens: int | None = None

    def to_json(self) -> JsonObject:
        out: JsonObject = asdict(self)
        if self.cache_write_tokens is None:  # only then: cached replies keep their form
            del out["cache_write_tokens"]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Completion:
        found: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**{**found, "text": str(data.get("text") or "")})


@dataclass
class JsonReply:
    """Outcome of `complete_json`: a valid object, or the last raw text and why it failed."""

    value: dict[str, Any] | None
    text: str | None
    error: str | None
    calls: list[CallRecord] = field(default_factory=list)
    # Set when a run cap stopped the reply from being asked for (see `llm_caps`).
    cap_reached: str | None = None

    @property
    def ok(self) -> bool:
        return self.value is not None


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


def request_hash(request: Mapping[str, JsonValue]) -> str:
    return sha256_json(dict(request))


def cache_key(model: str, request: Mapping[str, JsonValue]) -> str:
    """Response-cache key: the model name plus the sha256 of the canonical request."""
    return f"{model}:{request_hash(request)}"


# ---------------------------------------------------------------------- replies
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> JsonObject | None:
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


class SchemaValidator(Protocol):
    """What is used here of a jsonschema validator (the package has no type hints)."""

    schema: Mapping[str, JsonValue]

    @classmethod
    def check_schema(cls, schema: Mapping[str, JsonValue]) -> None: ...

    def is_valid(self, instance: JsonValue) -> bool: ...

    def iter_errors(self, instance: JsonValue) -> Iterator[Exception]: ...


def validator_for_schema(schema: Mapping[str, JsonValue]) -> SchemaValidator | str:
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
    validator: SchemaValidator = jsonschema.validators.validator_for(schema)(dict(schema))
    return validator


def validate_reply(
    text: str, validator: SchemaValidator, finish_reason: str | None
) -> tuple[JsonObject | None, str]:
    """(object, "") when `text` holds a schema-valid JSON object, else (None, reason)."""
    value = extract_json_object(text)
    cut = " (the reply was cut off at the token limit)"
    if value is None:
        return None, NO_JSON_REPLY + (cut if finish_reason == "length" else "")
    if finish_reason == "length":
        # A cut-off reply may still hold a complete inner object (one forecast of a panel):
        # valid only if that is a whole valid answer, else the cut is the reason.
        validator_ok = _is_valid(validator, value)
        if validator_ok is not True:
            return None, NO_JSON_REPLY + " as a whole" + cut
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


def _is_valid(validator: SchemaValidator, value: JsonValue) -> bool | None:
    try:
        return bool(validator.is_valid(value))
    except Exception:
        return None  # a broken schema: reported by the full check below


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
