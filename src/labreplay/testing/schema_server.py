"""A local OpenAI-compatible "model" that answers every JSON schema it is sent correctly.

It stands in for a frontier model in the plumbing tests a real model is too slow or too weak
for: every reply is built from the request's own schema (``response_format``) so it is valid by
construction, and it behaves like a real server where the harness must cope with one:

- ``max_tokens`` (or ``max_completion_tokens``) is honoured: a reply longer than the request
  allows is cut at that many tokens and ends ``finish_reason="length"`` (the truncation the
  default budgets must avoid); with ``reasoning_tokens`` set, that many hidden reasoning tokens
  are spent out of the same budget first, as a reasoning model's are;
- ``usage`` is reported with a declared tokeniser (`count_tokens`), and
  ``prompt_tokens_details.cached_tokens`` is the common prefix with the previous request, the
  way provider prefix caches report it;
- the ``model`` it answers with is the requested name plus a dated suffix (a provider's resolved
  model id).

Which action of a ``oneOf`` it picks is a declared preference (`prefer`), so a test can script a
policy that finishes a campaign or one that loops on a legal action forever.

It is not a model: it never stands in for one in a test of an agent's quality.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from labreplay.agents.llm_tokens import word_pieces
from labreplay.testing.fault_server import Responder, SeenRequest, StubReply

RESOLVED_SUFFIX = "-2026-01-01"
_PIECE = re.compile(r"[A-Za-z_]+|\d|\s+|[^\w\s]")

# Finish a campaign: close what is open, select the next, forecast when required.
FINISHING = ("close_experiment", "select_experiment", "submit_forecast", "stop")
# Buy evidence (the first kind offered) and reviews whenever offered, then finish: a model that
# inspects evidence until its budgets are spent (what the dry run's range must hold).
INSPECTING = ("inspect_evidence", "request_review", *FINISHING)
# Loop forever on a legal action that spends no budget (the runaway policy of the caps test).
LOOPING = ("submit_forecast", "select_experiment", "stop")


def count_tokens(text: str) -> int:
    """The server's tokeniser: one token per word, digit, run of spaces or punctuation mark
    (`llm_tokens.word_pieces`, the dry runs' declared fallback rule).

    Digits count one each, as in the small models' tokenisers, which makes numbers the costly
    part of a forecast, as they are for real models."""
    return word_pieces(text)


def instance(schema: Mapping[str, Any], prefer: Sequence[str] = FINISHING) -> Any:
    """A value valid under `schema` (the subset the environments publish)."""
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return next(iter(schema["enum"]))
    variants = schema.get("oneOf") or schema.get("anyOf")
    if variants:
        return instance(_preferred(variants, prefer), prefer)
    kind = schema.get("type")
    if kind == "object":
        return _object(schema, prefer)
    if kind == "array":
        return _array(schema, prefer)
    if kind in ("number", "integer"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 1)
        middle = (low + high) / 2
        return int(low) if kind == "integer" else round(middle, 4)
    if kind == "boolean":
        return True
    return "x"


def _preferred(variants: Sequence[Mapping[str, Any]], prefer: Sequence[str]) -> Mapping[str, Any]:
    def name(v: Mapping[str, Any]) -> str:
        return str(v.get("properties", {}).get("type", {}).get("const", ""))

    for wanted in prefer:
        for variant in variants:
            if name(variant) == wanted:
                return variant
    return variants[0]


def _object(schema: Mapping[str, Any], prefer: Sequence[str]) -> dict[str, Any]:
    props: Mapping[str, Any] = schema.get("properties", {})
    probabilities = [
        k
        for k, p in props.items()
        if p.get("type") == "number" and p.get("minimum") == 0 and p.get("maximum") == 1
    ]
    if props and len(probabilities) == len(props) and len(props) > 1:
        # An object of probabilities only is a distribution here: it must sum to one.
        share = round(1.0 / len(props), 6)
        return dict.fromkeys(props, share)
    return {k: instance(p, prefer) for k, p in props.items()}


def _array(schema: Mapping[str, Any], prefer: Sequence[str]) -> list[Any]:
    items: Mapping[str, Any] = schema.get("items", {})
    props: Mapping[str, Any] = items.get("properties", {})
    keyed = next((k for k, p in props.items() if isinstance(p.get("enum"), list)), None)
    if keyed is None:
        return [instance(items, prefer) for _ in range(int(schema.get("minItems", 1)))]
    out = []
    for value in props[keyed]["enum"]:  # one item per listed id: a forecast per experiment
        item = instance(items, prefer)
        item[keyed] = value
        out.append(item)
    return out


def _schema_of(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        found = fmt.get("json_schema", {}).get("schema")
    else:
        found = fmt.get("schema")
    return found if isinstance(found, Mapping) else None


def _prompt_text(body: Mapping[str, Any]) -> str:
    return "".join(f"<{m.get('role')}>{m.get('content')}" for m in body.get("messages", []))


class SchemaAnswerer:
    """The responder: ``StubServer(SchemaAnswerer())``. Thread-safe."""

    def __init__(
        self, prefer: Sequence[str] = FINISHING, delay_s: float = 0.0, reasoning_tokens: int = 0
    ) -> None:
        self.prefer = tuple(prefer)
        self.delay_s = delay_s
        # Hidden reasoning tokens spent before every reply, out of the same budget (a reasoning
        # model's `max_completion_tokens` counts them too).
        self.reasoning_tokens = reasoning_tokens
        self.truncated = 0
        self._last_prompt = ""
        self._lock = threading.Lock()

    def __call__(self, request: SeenRequest, _n: int) -> StubReply:
        body = request.body or {}
        schema = _schema_of(body)
        text = json.dumps(instance(schema, self.prefer)) if schema is not None else "{}"
        prompt = _prompt_text(body)
        with self._lock:
            shared = _common_prefix(self._last_prompt, prompt)
            self._last_prompt = prompt
        pieces = _PIECE.findall(text)
        finish = "stop"
        limit = body.get("max_tokens", body.get("max_completion_tokens"))
        if isinstance(limit, int):
            limit = max(0, limit - self.reasoning_tokens)
        if isinstance(limit, int) and len(pieces) > limit:
            text, finish = "".join(pieces[:limit]), "length"
            with self._lock:
                self.truncated += 1
        prompt_tokens = count_tokens(prompt)
        completion_tokens = count_tokens(text) + self.reasoning_tokens
        reply: dict[str, Any] = {
            "id": "chatcmpl-schema",
            "object": "chat.completion",
            "created": 0,
            "model": f"{body.get('model', 'schema')}{RESOLVED_SUFFIX}",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": count_tokens(prompt[:shared])},
            },
        }
        if self.reasoning_tokens:
            details = {"reasoning_tokens": self.reasoning_tokens}
            reply["usage"]["completion_tokens_details"] = details
        return StubReply(200, json.dumps(reply).encode("utf-8"), {}, self.delay_s)


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, by bisection on slices (prompts are tens of kB)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def schema_responder(prefer: Sequence[str] = FINISHING) -> Responder:
    return SchemaAnswerer(prefer)


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m labreplay.testing.schema_server [--port N] [--mode MODE]`: serve until
    interrupted and print the base URL. Modes: finishing (default), inspecting (buys evidence
    and reviews while any is offered, then finishes), looping, garbage (HTTP 200
    whose body is not JSON), reasoning (a reasoning model's endpoint: refuses `max_tokens` and
    any temperature but 1, spends 300 hidden tokens of each budget), hung (never answers)."""
    import argparse
    import time

    from labreplay.testing.fault_server import (
        StubServer,
        constant,
        garbage_body,
        hung,
        reasoning_endpoint,
    )

    parser = argparse.ArgumentParser(prog="python -m labreplay.testing.schema_server")
    parser.add_argument("--port", type=int, default=0)
    modes = ("finishing", "inspecting", "looping", "garbage", "reasoning", "hung")
    parser.add_argument("--mode", choices=modes, default="finishing")
    args = parser.parse_args(argv)
    responder: Responder
    if args.mode == "garbage":
        responder = constant(garbage_body())
    elif args.mode == "reasoning":
        responder = reasoning_endpoint(SchemaAnswerer(reasoning_tokens=300))
    elif args.mode == "hung":
        responder = constant(hung())
    else:
        policies = {"finishing": FINISHING, "inspecting": INSPECTING, "looping": LOOPING}
        responder = SchemaAnswerer(policies[args.mode])
    with StubServer(responder, port=args.port) as server:
        print(server.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return


if __name__ == "__main__":
    main()
