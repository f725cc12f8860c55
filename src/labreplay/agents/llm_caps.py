"""Caps on what one run may spend on a model: calls, tokens, wall time.

A cap is declared before a run and recorded with it (the run summary's `caps`). The client
checks it before every request; once one is reached no further request is sent, the reply is
a `JsonReply` with `cap_reached` set, and the agent raises `CapReached` after logging its calls,
so the suite's runner ends the run `failed` with the cap named and every spent call accounted.
The run is keyed without its caps: rerunning it with a higher cap resumes it (completed calls
are answered from the response cache, and cached calls count against the caps again, so a
resumed run stops at the same call as an uninterrupted one).

Token caps count the provider's `usage` where it reports it, else a declared estimate
(`estimate_tokens`: characters / 4).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labreplay.errors import AgentError, LabreplayError

CHARS_PER_TOKEN_ESTIMATE = 4.0


def estimate_tokens(chars: int | None) -> int:
    return math.ceil((chars or 0) / CHARS_PER_TOKEN_ESTIMATE)


def call_tokens(call: Mapping[str, Any]) -> tuple[int, int, bool]:
    """(prompt tokens, completion tokens, estimated?) of one call record."""
    prompt, completion = call.get("prompt_tokens"), call.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return prompt, completion, False
    if call.get("error"):  # never answered: nothing was generated, the prompt may have been read
        return 0, 0, False
    return estimate_tokens(call.get("prompt_chars")), estimate_tokens(call.get("reply_chars")), True


class CapReached(LabreplayError):
    """A run cap was reached; `cap` names it (e.g. "--max-calls 50")."""

    exit_code = 1

    def __init__(self, cap: str, detail: str) -> None:
        super().__init__(f"cap reached: {cap} ({detail})")
        self.cap = cap
        self.detail = detail


@dataclass(frozen=True)
class RunCaps:
    """What one run (a campaign branch, a conditions question run) may spend."""

    max_calls: int | None = None
    max_tokens_total: int | None = None
    max_time_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_calls", "max_tokens_total"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise AgentError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
        if self.max_time_s is not None and not self.max_time_s > 0:
            raise AgentError(f"--max-time must be > 0 seconds, got {self.max_time_s}")

    def as_params(self) -> dict[str, Any]:
        return {
            "max_calls": self.max_calls,
            "max_tokens_total": self.max_tokens_total,
            "max_time_s": self.max_time_s,
        }


class CapMeter:
    """Counts one run's spending against its caps (reset at the start of each run)."""

    def __init__(self, caps: RunCaps | None = None) -> None:
        self.caps = caps or RunCaps()
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.tokens = 0
        self.started = time.monotonic()

    def charge(self, call: Mapping[str, Any]) -> None:
        """Count a finished call's tokens (its call was counted when admitted)."""
        prompt, completion, _ = call_tokens(call)
        self.tokens += prompt + completion

    def admit(self) -> CapReached | None:
        """Count one more call, or say which cap forbids it. Calls are counted when they are
        admitted, so concurrent requests never overshoot `max_calls`; tokens are known only
        when a reply arrives, so up to the requests in flight may overshoot the token cap."""
        over = self.exceeded()
        if over is None:
            self.calls += 1
        return over

    def deadline(self) -> float | None:
        """The monotonic time at which `--max-time` ends the run (None: no time cap). Every
        request and retry wait of the run ends by then, so the cap stops work in flight too."""
        if self.caps.max_time_s is None:
            return None
        return self.started + self.caps.max_time_s

    def time_cap(self) -> CapReached:
        """The time cap as reached now (a call stopped at the cap's deadline)."""
        elapsed = time.monotonic() - self.started
        return CapReached(f"--max-time {self.caps.max_time_s:g}", f"{elapsed:.1f} s elapsed")

    def time_exceeded(self) -> CapReached | None:
        """The time cap, once the run's wall time has reached it."""
        caps = self.caps
        elapsed = time.monotonic() - self.started
        if caps.max_time_s is not None and elapsed >= caps.max_time_s:
            return CapReached(f"--max-time {caps.max_time_s:g}", f"{elapsed:.1f} s elapsed")
        return None

    def exceeded(self) -> CapReached | None:
        """The cap the next request would break, or None."""
        caps = self.caps
        if caps.max_calls is not None and self.calls >= caps.max_calls:
            return CapReached(f"--max-calls {caps.max_calls}", f"{self.calls} calls made")
        if caps.max_tokens_total is not None and self.tokens >= caps.max_tokens_total:
            return CapReached(
                f"--max-tokens-total {caps.max_tokens_total}", f"{self.tokens} tokens spent"
            )
        return self.time_exceeded()
