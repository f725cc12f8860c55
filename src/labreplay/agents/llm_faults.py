"""Fault classification of chat-model calls: which failures are worth a retry, which mean
the server lacks structured output, which are final; and their one-line descriptions.
"""

from __future__ import annotations

from typing import Literal

from labreplay._provenance import scrub_text

_ERROR_TEXT_LIMIT = 400


class MalformedResponse(Exception):
    """HTTP 200 whose body was not a chat completion (a proxy's error page, truncated JSON)."""


class WallClockTimeout(TimeoutError):
    """A concurrent request still unanswered, by the wall clock, after its timeout (the SDK's
    timeout bounds each read, so a body trickled byte by byte outlasts it)."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"no complete answer within {timeout_s:.3g} s")


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


def refuses_max_tokens(exc: BaseException) -> bool:
    """True for a server's refusal of `max_tokens` that points at `max_completion_tokens`
    (OpenAI's reasoning models answer 400 "Unsupported parameter: 'max_tokens' is not
    supported with this model. Use 'max_completion_tokens' instead.")."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return False
    text = str(exc)
    return "max_completion_tokens" in text and "max_tokens" in text.replace(
        "max_completion_tokens", ""
    )


def is_timeout(exc: BaseException) -> bool:
    """True when the request got no answer within its timeout."""
    import openai

    return isinstance(exc, openai.APITimeoutError | TimeoutError)


def is_unreachable(exc: BaseException) -> bool:
    """True when the endpoint could not be reached at all (refused connection, unknown host,
    bad URL) or refuses us (401/403): faults that repeat on every call. A timeout, 429 or 5xx
    means slow or busy, not dead."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return False
    if isinstance(exc, openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in (401, 403)
    return isinstance(exc, OSError) and not isinstance(exc, TimeoutError)


def describe_failure(exc: BaseException) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, WallClockTimeout):
        return f"request timed out ({exc})"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {clip(str(exc.__cause__ or exc))}"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {clip(str(exc))}"
    return f"{type(exc).__name__}: {clip(str(exc))}"


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


def clip(text: str) -> str:
    # Scrubbed before it is cut: a cut can leave part of an encoded key no pattern matches.
    text = scrub_text(" ".join(text.split()))
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."
