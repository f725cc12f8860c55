"""Fault classification of chat-model calls: which failures are worth a retry, which mean
the server lacks structured output, which are final; and their one-line descriptions.

Every provider's failure reaches the client as one `CallFault` (`fault_of` reads inspect_ai's,
its providers' SDKs' and httpx's exceptions), so every provider is classified alike.
"""

from __future__ import annotations

from typing import Literal

from labreplay._provenance import scrub_text

_ERROR_TEXT_LIMIT = 400

FaultKind = Literal["timeout", "connection", "status", "malformed"]
FailureKind = Literal["transient", "structured_unsupported", "fatal"]
_TRANSIENT_STATUS = {408, 409, 429}
_STRUCTURED_HINTS = ("response_format", "json_schema", "grammar", "schema")


class CallFault(Exception):
    """A call that failed in the model, server or network (never a bug of ours): no answer in
    time, no connection, an HTTP error status (with the server's Retry-After, if any), or a
    body that is not a completion (a proxy's error page, truncated JSON)."""

    def __init__(
        self,
        kind: FaultKind,
        text: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(text)
        self.kind, self.text, self.status, self.retry_after = kind, text, status, retry_after


def fault_of(exc: BaseException) -> CallFault | None:
    """The `CallFault` of a provider's failure, None for anything else (a bug). SDKs differ
    in their httpx flavour (httpx, httpx2), so classes are matched by name."""
    inner = _unwrap(exc)
    if isinstance(inner, CallFault):
        return inner
    if _named(inner, "OpenAIResponseError") or _named(inner, "APIResponseValidationError"):
        # A 200 whose body is not a chat completion (a proxy's error page).
        text = f"malformed response: {' '.join(str(inner).split())[:200]}"
        return CallFault("malformed", text)
    if _named(inner, "TimeoutException") or _named(inner, "APITimeoutError"):
        return CallFault("timeout", "")
    if isinstance(inner, TimeoutError):
        return CallFault("timeout", "")
    if _named(inner, "TransportError") or _named(inner, "APIConnectionError"):
        return CallFault("connection", str(inner.__cause__ or inner) or type(inner).__name__)
    status = getattr(inner, "status_code", None)
    if isinstance(status, int):  # any SDK's HTTP error (openai's, anthropic's, google's...)
        headers = getattr(getattr(inner, "response", None), "headers", None) or {}
        return CallFault("status", str(inner), status, _seconds(headers.get("retry-after")))
    if isinstance(inner, OSError):
        return CallFault("connection", str(inner) or type(inner).__name__)
    return None


def _seconds(raw: str | None) -> float | None:
    """A Retry-After header in seconds (numeric form only)."""
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return value if value is not None and value >= 0 else None


def _unwrap(exc: BaseException) -> BaseException:
    """The provider's own exception: the last attempt's of tenacity's RetryError (inspect
    retries through it), the cause of inspect's ModelGenerateError (which wraps an error the
    provider handed back, with the whole request in its text)."""
    attempt = getattr(exc, "last_attempt", None)
    found = attempt.exception() if attempt is not None else None
    if isinstance(found, BaseException):
        exc = found
    if _named(exc, "ModelGenerateError") and isinstance(exc.__cause__, Exception):
        return exc.__cause__
    return exc


def _named(exc: BaseException, name: str) -> bool:
    return any(cls.__name__ == name for cls in type(exc).__mro__)


def failure_kind(exc: CallFault) -> FailureKind:
    """Whether a failed call is worth retrying, means the server lacks structured output, or is
    final (bad key, unknown model, prompt too long...)."""
    if exc.status is None:  # no answer in time, no connection, a body that is no completion
        return "transient"
    text = exc.text.lower()
    if exc.status in {400, 404, 415, 422, 501} and any(h in text for h in _STRUCTURED_HINTS):
        return "structured_unsupported"
    if exc.status == 500 and "response_format" in text:
        # llama-cpp-python answers an unknown response_format type with a 500 that quotes
        # its request validation error: a refusal, not a fault worth retrying.
        return "structured_unsupported"
    if exc.status in _TRANSIENT_STATUS or exc.status >= 500:
        return "transient"
    return "fatal"


def refuses_max_tokens(exc: CallFault) -> bool:
    """True for a server's refusal of `max_tokens` that points at `max_completion_tokens`
    (OpenAI's reasoning models answer 400 "Unsupported parameter: 'max_tokens' is not
    supported with this model. Use 'max_completion_tokens' instead.")."""
    if exc.status not in (400, 422):
        return False
    return "max_completion_tokens" in exc.text and "max_tokens" in exc.text.replace(
        "max_completion_tokens", ""
    )


def is_unreachable(exc: CallFault) -> bool:
    """True when the endpoint could not be reached at all (refused connection, unknown host,
    bad URL) or refuses us (401/403): faults that repeat on every call. A timeout, 429 or 5xx
    means slow or busy, not dead."""
    return exc.kind == "connection" or exc.status in (401, 403)


def describe_failure(exc: CallFault) -> str:
    if exc.kind == "timeout":
        return f"request timed out ({exc.text})" if exc.text else "request timed out"
    if exc.kind == "connection":
        return f"connection failed: {clip(exc.text)}"
    if exc.kind == "status":
        return f"HTTP {exc.status}: {clip(exc.text)}"
    return clip(exc.text)


def clip(text: str) -> str:
    # Scrubbed before it is cut: a cut can leave part of an encoded key no pattern matches.
    text = scrub_text(" ".join(text.split()))
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."
