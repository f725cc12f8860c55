"""A small OpenAI-compatible HTTP server on 127.0.0.1 that misbehaves on purpose.

It exists so the client's fault handling (rate limits, server errors, garbage bodies, slow
answers) and the harness's own overhead can be exercised without a model: tests and
benchmarks script what each request receives. It is stdlib only, serves in daemon threads, and
records every request it saw (path, headers, JSON body) so a test can check exactly what left
the client. It is not a model and never stands in for one in an end-to-end test. `key_required`
makes it refuse a request without the right bearer key (401); `echo_key` makes it hand
the request's API key back (in the reply's `model`, its content or an error body), so the
scrubbing of every stored and printed text can be tested against a real socket.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self, TypedDict, Unpack

from labreplay._closing import Closing

if TYPE_CHECKING:
    import socket


@dataclass(frozen=True)
class StubReply:
    """What one request receives: HTTP status, body bytes, extra headers, delay before answering
    and, with `trickle_s`, a pause before each byte of the body (headers sent at once)."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0


def completion_body(
    content: str,
    *,
    model: str = "stub",
    finish_reason: str = "stop",
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
) -> bytes:
    """A well-formed chat.completion JSON body whose message content is `content`."""
    return json.dumps(
        {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    ).encode("utf-8")


class CompletionFields(TypedDict, total=False):
    """The fields of `completion_body` besides its content."""

    model: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


def ok(content: str, delay_s: float = 0.0, **kwargs: Unpack[CompletionFields]) -> StubReply:
    return StubReply(200, completion_body(content, **kwargs), {}, delay_s)


def rate_limited(retry_after_s: float | None = None) -> StubReply:
    headers = {} if retry_after_s is None else {"Retry-After": f"{retry_after_s:g}"}
    body = b'{"error": {"message": "rate limited by stub", "type": "rate_limit"}}'
    return StubReply(429, body, headers)


def server_error(status: int = 500) -> StubReply:
    return StubReply(status, b'{"error": {"message": "stub server error"}}')


def garbage_body() -> StubReply:
    """HTTP 200 whose body is not JSON at all."""
    return StubReply(200, b"<html>\x00\x01 this is not a completion", {"Content-Type": "text/html"})


def slow(content: str, delay_s: float) -> StubReply:
    return ok(content, delay_s=delay_s)


def trickled(content: str, every_s: float) -> StubReply:
    """A well-formed answer whose body arrives one byte every `every_s` seconds: each read is
    quick, the whole answer is not (what a per-read timeout never catches)."""
    return StubReply(200, completion_body(content), {}, 0.0, every_s)


def hung() -> StubReply:
    """A request that is never answered (until the server closes)."""
    return StubReply(200, completion_body("{}"), {}, 24 * 3600.0)


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


Responder = Callable[[SeenRequest, int], StubReply]


def scripted(replies: Sequence[StubReply], then: StubReply | None = None) -> Responder:
    """Answer the n-th chat request with replies[n]; after the script, `then` (or the last)."""
    script = list(replies)

    def respond(_request: SeenRequest, n: int) -> StubReply:
        if n < len(script):
            return script[n]
        return then if then is not None else script[-1]

    return respond


def constant(reply: StubReply) -> Responder:
    return lambda _request, _n: reply


# OpenAI's answers to a reasoning model (o1, o3, GPT-5) asked with an ordinary model's fields.
MAX_TOKENS_REFUSAL = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)
TEMPERATURE_REFUSAL = (
    "Unsupported value: 'temperature' does not support {value} with this model. "
    "Only the default (1) value is supported."
)


def _bad_request(message: str, param: str) -> StubReply:
    error = {"message": message, "type": "invalid_request_error", "param": param}
    error["code"] = "unsupported_parameter" if param == "max_tokens" else "unsupported_value"
    return StubReply(400, json.dumps({"error": error}).encode("utf-8"))


def reasoning_endpoint(inner: Responder) -> Responder:
    """A reasoning model's endpoint: a request with `max_tokens`, or a temperature other than
    1, is refused with a 400 as OpenAI words it; every other request goes to `inner`."""

    def respond(request: SeenRequest, n: int) -> StubReply:
        body = request.body or {}
        if "max_tokens" in body:
            return _bad_request(MAX_TOKENS_REFUSAL, "max_tokens")
        temperature = body.get("temperature")
        if temperature is not None and temperature != 1:
            return _bad_request(TEMPERATURE_REFUSAL.format(value=temperature), "temperature")
        return inner(request, n)

    return respond


def error_reply(status: int, message: str) -> StubReply:
    """An OpenAI-style error body whose message is `message`."""
    return StubReply(status, json.dumps({"error": {"message": message}}).encode("utf-8"))


def request_key(request: SeenRequest) -> str:
    """The API key a request carried (its `Authorization: Bearer` header), or ""."""
    auth = next((v for k, v in request.headers.items() if k.lower() == "authorization"), "")
    scheme, _, key = auth.partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


def key_required(key: str, inner: Responder) -> Responder:
    """A server that needs `key`: a chat request whose bearer is not `key` (none, another, a
    placeholder) is refused with a 401 as OpenAI words it; the others go to `inner`. Which
    key each request carried stays in `StubServer.requests` (`request_key`)."""

    def respond(request: SeenRequest, n: int) -> StubReply:
        if request_key(request) != key:
            return error_reply(401, "Incorrect API key provided.")
        return inner(request, n)

    return respond


def echo_key(reply: Callable[[str, int], StubReply]) -> Responder:
    """A server that hands the key back, as a hostile or buggy one (or a proxy echoing the
    request headers) can: the n-th chat request gets `reply(key, n)`, `key` being the one it
    carried, to be placed in the reply's `model`, its content or an error body."""
    return lambda request, n: reply(request_key(request), n)


class StubServer(Closing):
    """`with StubServer(responder) as stub:` then point a client at `stub.base_url`."""

    def __init__(self, responder: Responder, *, model: str = "stub", port: int = 0) -> None:
        self.responder = responder
        self.model = model
        self.requests: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._chat_count = 0
        self._httpd = _Server(("127.0.0.1", port), _Handler)  # port 0: any free port
        self._httpd.stub = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def chat_requests(self) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stopping.set()  # wakes handlers that are sleeping to simulate a slow server
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # called from handler threads
    def _reply_for(self, request: SeenRequest) -> StubReply:
        with self._lock:
            self.requests.append(request)
            if not request.path.endswith("/chat/completions"):
                return StubReply(200, self._models_body())
            n = self._chat_count
            self._chat_count += 1
        return self.responder(request, n)

    def _models_body(self) -> bytes:
        return json.dumps(
            {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "stub"}]}
        ).encode("utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a handler still "being slow" must not hold up shutdown
    stub: StubServer

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: tuple[str, int]
    ) -> None:
        # The client hanging up on a slow answer is the point of some tests, not an error.
        return


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # Buffer the whole answer and send it in one write: headers and body in separate small
    # writes meet Nagle + delayed ACK and add ~40 ms per request, which would swamp the
    # harness overhead the benchmark measures.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        return

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        seen = SeenRequest(self.command, self.path, dict(self.headers.items()), body)
        stub = self.server.stub
        reply = stub._reply_for(seen)
        if reply.delay_s > 0 and stub._stopping.wait(reply.delay_s):
            return
        try:
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json", **reply.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if reply.trickle_s > 0:
                self.wfile.flush()
                for i in range(len(reply.body)):
                    if stub._stopping.wait(reply.trickle_s):
                        return
                    self.wfile.write(reply.body[i : i + 1])
                    self.wfile.flush()
                return
            self.wfile.write(reply.body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()
