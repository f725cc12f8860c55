"""Anthropic's own wire format (the Messages API), for `--provider anthropic` or a base URL on
`api.anthropic.com`.

The client builds the Messages request itself (`messages_request`), so the response cache is
keyed on what is really sent: system prompts go in the `system` field as one text block
marked `cache_control: ephemeral` (the stable part of every prompt, which Anthropic's prompt
cache then serves at the cached rate), turns as text content blocks, the response budget as
`max_tokens` (required), no `seed` and no `response_format` (the Messages API has neither: JSON
comes from the prompt and is validated like any reply, and provenance says so). A reasoning
call gets `thinking: {type: enabled, budget_tokens}` with the reasoning budget, and no
temperature (extended thinking takes none).

The reply's `usage` is Anthropic's: `input_tokens` counts only the uncached prompt, so the
prompt tokens are input + `cache_read_input_tokens` + `cache_creation_input_tokens`, of which
the cache reads are the provider-cached ones. HTTP failures are raised as the `openai`
package's exceptions of the same status, so retries, Retry-After, the circuit breaker and the
failure texts treat both providers alike. The key travels in the `x-api-key` header only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from labreplay.agents.llm_faults import MalformedResponse
from labreplay.agents.llm_wire import Completion
from labreplay.errors import AgentError

ANTHROPIC_HOST = "api.anthropic.com"
ANTHROPIC_ENDPOINT = "https://api.anthropic.com/v1"
ANTHROPIC_VERSION = "2023-06-01"
PROVIDERS = ("auto", "openai", "anthropic")
# Anthropic refuses a thinking budget below this.
MIN_THINKING_TOKENS = 1024
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def resolve_provider(provider: str, base_url: str | None) -> str:
    """ "openai" or "anthropic": as asked, or ("auto") by the base URL's host."""
    if provider not in PROVIDERS:
        raise AgentError(f"--provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    if provider != "auto":
        return provider
    try:
        host = (urlsplit(base_url).hostname or "").lower() if base_url else ""
    except ValueError:
        host = ""
    return "anthropic" if host == ANTHROPIC_HOST else "openai"


def messages_request(
    model: str,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    temperature: float | None,
    top_p: float | None,
    thinking_tokens: int | None,
) -> dict[str, Any]:
    """The exact Messages API body of one call."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    if system:
        block = {"type": "text", "text": "\n\n".join(system)}
        body["system"] = [{**block, "cache_control": {"type": "ephemeral"}}]
    body["messages"] = [
        {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
        for m in messages
        if m["role"] != "system"
    ]
    if thinking_tokens:
        budget = max(MIN_THINKING_TOKENS, thinking_tokens)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = max(max_tokens, budget + 1)
    else:
        if temperature is not None:
            body["temperature"] = temperature
        if top_p is not None:
            body["top_p"] = top_p
    return body


def parse_message(body: Any) -> Completion | str:
    """A Completion from a Messages API reply body, or why it is not one."""
    if not isinstance(body, Mapping) or body.get("type") != "message":
        shown = str(body)[:80].replace("\n", " ")
        return f"malformed response: body is not an Anthropic message ({shown!r})"
    blocks = body.get("content")
    if not isinstance(blocks, list):
        return "malformed response: an Anthropic message with no content list"
    text = "".join(
        str(b.get("text") or "")
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text"
    )
    found = body.get("usage")
    usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    fresh = _int(usage.get("input_tokens"))
    read = _int(usage.get("cache_read_input_tokens"))
    written = _int(usage.get("cache_creation_input_tokens"))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    model = body.get("model")
    stop = body.get("stop_reason")
    return Completion(
        text=text,
        finish_reason=_STOP_REASONS.get(str(stop), str(stop) if stop else None),
        prompt_tokens=prompt,
        completion_tokens=_int(usage.get("output_tokens")),
        cached_tokens=read,
        resolved_model=model if isinstance(model, str) and model else None,
        cache_write_tokens=written,
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def headers(api_key: str | None) -> dict[str, str]:
    out = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
    if api_key:
        out["x-api-key"] = api_key
    return out


def status_error(response: Any) -> Exception:
    """The `openai` exception of an HTTP error `response` (an httpx.Response)."""
    import openai

    try:
        body: Any = response.json()
    except ValueError:
        body = None
    detail = body.get("error", {}).get("message") if isinstance(body, dict) else None
    message = f"Error code: {response.status_code} - {detail or response.text[:200]}"
    kinds: dict[int, type[openai.APIStatusError]] = {
        400: openai.BadRequestError,
        401: openai.AuthenticationError,
        403: openai.PermissionDeniedError,
        404: openai.NotFoundError,
        409: openai.ConflictError,
        422: openai.UnprocessableEntityError,
        429: openai.RateLimitError,
    }
    kind = kinds.get(response.status_code)
    if kind is None:
        kind = openai.InternalServerError if response.status_code >= 500 else openai.APIStatusError
    return kind(message, response=response, body=body)


def transport_error(exc: Exception, request: Any) -> Exception:
    """The `openai` exception of an httpx transport failure (timeouts stay timeouts)."""
    import httpx
    import openai

    if isinstance(exc, httpx.TimeoutException):
        return openai.APITimeoutError(request=request)
    return openai.APIConnectionError(message=str(exc) or type(exc).__name__, request=request)


class _Endpoint:
    """What the `openai` clients offer that our client uses (`chat.completions.create`), over
    the Messages API: `create(**body, timeout=...)` posts the body to `{base_url}/messages` and
    returns a `Completion` (or why the reply is not one)."""

    def __init__(self, base_url: str, api_key: str | None, http_client: Any) -> None:
        self.url = base_url.rstrip("/") + "/messages"
        self._headers = headers(api_key)
        self._http = http_client
        self.chat, self.completions = self, self

    def _result(self, response: Any) -> Completion:
        """The reply, or an exception: an HTTP error as the openai package's, an unusable body
        as `MalformedResponse` (retried as a transient fault, as for chat completions)."""
        if response.status_code >= 400:
            raise status_error(response)
        try:
            found = parse_message(response.json())
        except ValueError:
            found = "malformed response: the body is not JSON"
        if isinstance(found, str):
            raise MalformedResponse(found)
        return found


class MessagesClient(_Endpoint):
    """Blocking Messages API endpoint."""

    def __init__(self, base_url: str, api_key: str | None, timeout_s: float) -> None:
        import httpx

        super().__init__(base_url, api_key, httpx.Client(timeout=timeout_s))

    def create(self, *, timeout: float, **body: Any) -> Completion:
        import httpx

        try:
            response = self._http.post(self.url, json=body, headers=self._headers, timeout=timeout)
        except httpx.HTTPError as exc:
            raise transport_error(exc, getattr(exc, "request", None)) from exc
        return self._result(response)


class AsyncMessagesClient(_Endpoint):
    """Asyncio Messages API endpoint (`with_options(http_client=...)` and `close()` as the
    `openai` async client has them: a fresh pool per event loop)."""

    def __init__(
        self, base_url: str, api_key: str | None, timeout_s: float, http_client: Any = None
    ) -> None:
        import httpx

        self._base, self._key, self._timeout = base_url, api_key, timeout_s
        super().__init__(base_url, api_key, http_client or httpx.AsyncClient(timeout=timeout_s))

    def with_options(self, *, http_client: Any) -> AsyncMessagesClient:
        return AsyncMessagesClient(self._base, self._key, self._timeout, http_client)

    async def close(self) -> None:
        await self._http.aclose()

    async def create(self, *, timeout: float, **body: Any) -> Completion:
        import httpx

        try:
            response = await self._http.post(
                self.url, json=body, headers=self._headers, timeout=timeout
            )
        except httpx.HTTPError as exc:
            raise transport_error(exc, getattr(exc, "request", None)) from exc
        return self._result(response)
