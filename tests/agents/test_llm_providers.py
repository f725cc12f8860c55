"""Provider paths (issue 35): what an endpoint really applied is what provenance records, and
Anthropic's own Messages API (`--provider anthropic`, inspect_ai's anthropic provider) against a
local stand-in on 127.0.0.1.

Anthropic's OpenAI-compatible endpoint answers 200 to a request with `response_format` and
`seed` but ignores both, so neither is sent to it and neither is recorded as applied.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from labreplay.agents.llm_client import LLMClient
from labreplay.agents.llm_config import RetryPolicy, Sampling, ignoring_host, resolve_provider
from labreplay.errors import AgentError
from labreplay.store.sqlite import Store

pytest.importorskip("openai")

MESSAGES = [{"role": "user", "content": "answer"}]
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def test_the_anthropic_compatibility_endpoint_gets_no_format_or_seed_and_records_none() -> None:
    assert ignoring_host("https://api.anthropic.com/v1/") == "api.anthropic.com"
    assert ignoring_host("https://api.openai.com/v1") is None
    assert ignoring_host("http://127.0.0.1:8080/v1") is None
    # --provider openai: the compatibility endpoint (auto would choose the Messages API)
    client = LLMClient(
        "claude-sonnet-4-5", base_url="https://api.anthropic.com/v1/", provider="openai"
    )
    client.reseed(7)  # a run seed: an ordinary endpoint would get a derived sampling seed
    request = client._request(MESSAGES, SCHEMA, "reply")
    assert "response_format" not in request and "seed" not in request
    params = client.params()
    assert params["structured"] == "none: api.anthropic.com ignores response_format"
    assert params["sampling_seed"] == "not sent: api.anthropic.com ignores seed"
    assert client.structured_format == "none"


def test_an_ordinary_endpoint_still_gets_its_format_and_seed() -> None:
    client = LLMClient("m", base_url="http://127.0.0.1:9/v1")
    client.reseed(7)
    request = client._request(MESSAGES, SCHEMA, "reply")
    assert request["response_format"]["type"] == "json_schema" and "seed" in request
    assert client.params()["structured"] == "auto"


# ---------------------------------------------------------------------- Anthropic's own API
class MessagesServer:
    """A local stand-in for Anthropic's Messages API on 127.0.0.1 (and, at its root, for any
    JSON API: Google's Gemini in test_llm_inspect): keeps every request (path, headers, body)
    and answers each with the next scripted (status, body, headers), the last one repeated.
    A request asking for a stream gets the reply as the Messages API streams it."""

    def __init__(self, replies: list[tuple[int, dict[str, Any], dict[str, str]]]) -> None:
        self.replies = replies
        self.seen: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                n = len(server.seen)
                server.seen.append((self.path, dict(self.headers.items()), json.loads(raw)))
                status, body, headers = server.replies[min(n, len(server.replies) - 1)]
                data = json.dumps(body).encode()
                kind = "application/json"
                if status == 200 and server.seen[-1][2].get("stream"):
                    data, kind = sse_events(body), "text/event-stream"
                self.send_response(status)
                for name, value in {"Content-Type": kind, **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> MessagesServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def sse_events(reply: dict[str, Any]) -> bytes:
    """A Messages reply as the API streams it (server-sent events), for a streamed request
    (the SDK streams long ones, e.g. with extended thinking)."""
    if reply.get("type") != "message":
        return f"event: error\ndata: {json.dumps(reply)}\n\n".encode()
    usage = reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(reply["content"]):
        events += [
            {"type": "content_block_start", "index": index,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "text_delta", "text": block["text"]}},
            {"type": "content_block_stop", "index": index},
        ]  # fmt: skip
    events += [
        {"type": "message_delta", "delta": {"stop_reason": reply["stop_reason"],
         "stop_sequence": None}, "usage": {"output_tokens": usage["output_tokens"]}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def message(text: str, stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    counts = {"input_tokens": 30, "output_tokens": 9, **usage}
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "usage": counts,
    }


KEY = "sk-ant-test-0123456789abcdef0123456789"
TALK = [{"role": "system", "content": "You pick."}, {"role": "user", "content": "Pick one."}]
PICK = {"type": "object", "properties": {"pick": {"enum": ["a", "b"]}}, "required": ["pick"]}


def test_the_messages_api_request_reply_usage_and_cost(tmp_path: Path) -> None:
    """`--provider anthropic` is inspect_ai's anthropic provider: the Messages API, the key in
    its header only, the system prompt marked for Anthropic's prompt cache, usage with cache
    reads and writes priced, and provenance that says what was not sent."""
    reply = message('{"pick": "b"}', cache_read_input_tokens=1000, cache_creation_input_tokens=200)
    with MessagesServer([(200, reply, {})]) as server, Store(tmp_path / "s.sqlite") as db:
        client = LLMClient(
            "claude-sonnet-4-5", base_url=server.base_url, provider="anthropic", api_key=KEY,
            cache=db,
        )  # fmt: skip
        client.reseed(3)
        got = client.complete_json(TALK, PICK)
    assert got.value == {"pick": "b"}
    ((path, headers, body),) = server.seen
    assert path == "/v1/messages"
    lower = {name.lower(): value for name, value in headers.items()}
    # the key in the anthropic SDK's auth header (which one is the SDK's choice), nowhere else
    assert lower.get("x-api-key") == KEY or lower.get("authorization") == f"Bearer {KEY}"
    assert KEY not in json.dumps(body)
    (system,) = body["system"]
    assert system["text"] == "You pick." and system["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["role"] == "user" and isinstance(body["max_tokens"], int)
    assert not {"seed", "temperature", "top_p", "max_completion_tokens"} & set(body)
    (call,) = got.calls
    assert call["prompt_tokens"] == 1230 and call["cached_tokens"] == 1000
    assert call["finish_reason"] == "stop" and call["resolved_model"].endswith("20250929")
    assert call["cache_write_tokens"] == 200
    # built-in claude-sonnet-4-5: 3 input / 0.3 cache read / 3.75 cache write / 15 output
    usd = (30 * 3.0 + 1000 * 0.3 + 200 * 3.75 + 9 * 15.0) / 1e6
    assert call["cost_usd"] == pytest.approx(usd)
    params = client.params()
    assert params["layer"] == "inspect_ai" and params["provider"] == "anthropic"
    assert params["model"] == "claude-sonnet-4-5" and KEY not in json.dumps(params)
    assert str(params["sampling_seed"]).startswith("not sent")
    assert KEY.encode() not in (tmp_path / "s.sqlite").read_bytes()  # the cached reply too


def test_a_reasoning_call_gets_a_thinking_budget_and_no_temperature() -> None:
    with MessagesServer([(200, message('{"pick": "a"}'), {})]) as server:
        client = LLMClient(
            "claude-opus-4-1", base_url=server.base_url, provider="anthropic",
            sampling=Sampling(reasoning_effort="low"), reasoning_tokens=2000,
            temperature_explicit=False,
        )  # fmt: skip
        assert client.complete_json(TALK, PICK).ok
    body = server.seen[0][2]
    thinking = body["thinking"]
    assert thinking["type"] == "enabled" and thinking["budget_tokens"] == 2000
    assert body["max_tokens"] > 2000 and "temperature" not in body


def test_anthropic_failures_retry_honour_retry_after_and_end_in_a_recorded_error() -> None:
    busy = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    denied = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    ok = message('{"pick": "a"}')
    with MessagesServer([(429, busy, {"retry-after": "1"}), (200, ok, {})]) as server:
        client = LLMClient("claude-haiku-4-5", base_url=server.base_url, provider="anthropic")
        started = time.monotonic()
        got = client.complete_json(TALK, PICK)
        waited = time.monotonic() - started
    assert got.ok and got.calls[0]["retries"] == 1 and waited >= 1.0
    with MessagesServer([(401, denied, {})]) as server:
        client = LLMClient("claude-haiku-4-5", base_url=server.base_url, provider="anthropic")
        first = client.complete_json(TALK, PICK)
        second = client.complete_json(TALK, PICK)
        sent = len(server.seen)
    assert "HTTP 401" in str(first.error) and "bad key" in str(first.error)
    assert sent == 1 and "not sent" in str(second.error)  # the circuit breaker, as for OpenAI


def test_the_provider_follows_the_base_url_unless_named() -> None:
    assert resolve_provider("auto", "https://api.anthropic.com/v1") == "anthropic"
    assert resolve_provider("auto", "http://127.0.0.1:8080/v1") == "openai"
    assert resolve_provider("openai", "https://api.anthropic.com/v1") == "openai"
    assert resolve_provider("anthropic", None) == "anthropic"
    with pytest.raises(AgentError, match="--provider must be one of"):
        resolve_provider("google", None)


def test_an_unusable_messages_body_is_retried_then_recorded_as_malformed() -> None:
    with MessagesServer([(200, {"type": "error"}, {})]) as server:
        client = LLMClient(
            "claude-haiku-4-5", base_url=server.base_url, provider="anthropic",
            retry=RetryPolicy(max_retries=1, base_delay_s=0.0),
        )  # fmt: skip
        got = client.complete_json(TALK, PICK)
    assert len(server.seen) == 2 and "malformed response" in str(got.error)
