"""Response budgets: how many completion tokens a reply under a JSON schema may need.

A reply cut off at `max_tokens` is not JSON, so a budget too small for the schema voids every
answer (a fixed 512-token default truncated every 32-query panel forecast). Each call's budget
is derived from its schema: ceil(MARGIN * reply_tokens(schema)) + FLOOR, where `reply_tokens`
prices the largest reply a careful model writes in a declared worst-case tokeniser (the rules:
docs/agents/llm.md, "Response budget"). It is also the least a user's `--max-tokens` may be
(`check_user_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from labreplay.errors import AgentError

MARGIN = 1.5  # declared head room over the priced reply (spacing, digits, a second line)
FLOOR = 32  # tokens added to every budget (a short preamble some servers emit)
NUMBER_TOKENS = 9  # sign, "0", ".", six digits
INTEGER_TOKENS = 3
CHARS_PER_TOKEN = 2.0  # identifiers and keys: conservative for digit-heavy ids ("PG_0145")
_SYNTAX = 2  # braces / brackets of a container
_PER_MEMBER = 3  # quotes, colon or comma, newline + indentation of a pretty-printed member


def _text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) + 2  # + the two quotes


def reply_tokens(schema: Mapping[str, Any]) -> int:
    """Tokens of the largest reply valid under `schema` (a `oneOf` its dearest variant)."""
    return _cost(schema, depth=0)


def _cost(schema: Any, depth: int) -> int:
    if not isinstance(schema, Mapping) or depth > 32:
        return NUMBER_TOKENS
    if "const" in schema:
        return _value_tokens(schema["const"])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return max(_value_tokens(v) for v in schema["enum"])
    variants = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(variants, list) and variants:
        return max(_cost(v, depth + 1) for v in variants)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        members = sum(_text_tokens(str(k)) + _cost(p, depth + 1) for k, p in props.items())
        return _SYNTAX + members + _PER_MEMBER * len(props)
    if kind == "array":
        items = schema.get("items") or {}
        n = array_length(schema)
        return _SYNTAX + n * (_cost(items, depth + 1) + _PER_MEMBER)
    if kind == "integer":
        return INTEGER_TOKENS
    if kind == "string":
        return _text_tokens("x" * int(schema.get("maxLength", 16)))
    if kind == "boolean":
        return 1
    return NUMBER_TOKENS


def _value_tokens(value: Any) -> int:
    if isinstance(value, str):
        return _text_tokens(value)
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return INTEGER_TOKENS
    return NUMBER_TOKENS


def array_length(schema: Mapping[str, Any]) -> int:
    """How many items a reply array holds at most: `maxItems`, else the largest `enum` among
    its items' properties (a panel lists each experiment id once), else `minItems` or 1."""
    if isinstance(schema.get("maxItems"), int):
        return int(schema["maxItems"])
    items = schema.get("items") or {}
    props = items.get("properties") if isinstance(items, Mapping) else None
    enums = [
        len(p["enum"])
        for p in (props or {}).values()
        if isinstance(p, Mapping) and isinstance(p.get("enum"), list)
    ]
    if enums:
        return max(enums)
    return int(schema.get("minItems", 1))


def response_budget(schema: Mapping[str, Any]) -> int:
    """The `max_tokens` sent with a call whose reply must satisfy `schema`."""
    return math.ceil(MARGIN * reply_tokens(schema)) + FLOOR


def check_user_budget(max_tokens: int | None, schema: Mapping[str, Any], what: str) -> None:
    """Refuse a user-given `max_tokens` too small for a reply under `schema` (before any call)."""
    if max_tokens is None:
        return
    needed = reply_tokens(schema)
    if max_tokens < needed:
        raise AgentError(
            f"--max-tokens {max_tokens} is too small for {what}: a valid reply needs at least "
            f"{needed} tokens (the derived default is {response_budget(schema)}; omit "
            "--max-tokens to use it)"
        )


# The fixed words of a repair turn ("That reply cannot be used: ... Answer again ..."), in
# tokens; the problem it names is bounded by the refused reply (`spend_ceiling`).
REPAIR_TURN_TOKENS = 100


def spend_ceiling(prompt_tokens: int, budget: int, max_repairs: int) -> tuple[int, int, int]:
    """(calls, prompt tokens, completion tokens) of one logical request by an agent that spends
    everything: every reply fills its whole `budget` (reasoning tokens included) and is
    refused, up to `max_repairs` repair turns. Repair turn k re-sends the conversation with k
    refused replies (each <= budget tokens) and k notes naming the problem (each <= budget +
    REPAIR_TURN_TOKENS: a validation message quotes at most the reply)."""
    calls = 1 + max_repairs
    per_turn = 2 * budget + REPAIR_TURN_TOKENS
    prompt = sum(prompt_tokens + k * per_turn for k in range(calls))
    return calls, prompt, calls * budget
