"""Caps on what one run may spend on a model: calls, tokens, wall time, money (the rules:
docs/agents/llm.md, "One option set, budgets, caps and costs").

The client asks `CapMeter.admit` before every request, holding the call's worst case
(`worst_case_usd`) so concurrent calls never overshoot a money cap, and `charge`s it when it
ends; a request this process already paid for is free when the cache answers it again, any
other cache hit costs what it cost, so a resumed run's spend equals an uninterrupted one's.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from labreplay.agents.contracts import CallRecord
from labreplay.agents.llm_prices import ModelPrice, PriceTable, SpendLedger
from labreplay.errors import AgentError, LabreplayError
from labreplay.runtime.failure import COST_CAP

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonObject

CHARS_PER_TOKEN_ESTIMATE = 4.0
# COST_CAP (the failure rule's named cause) opens every money cap's message.
# The requests (hashes) this process has paid for, by any run: a cache hit of one is free.
_PAID: set[str] = set()
_PAID_LOCK = threading.Lock()


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
    max_cost_usd: float | None = None
    # How tokens become money (None: the built-in table) and the whole command's spend
    # (`--max-total-cost`); neither is a cap of the run itself, so neither is compared.
    prices: PriceTable | None = field(default=None, compare=False)
    ledger: SpendLedger | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_calls", "max_tokens_total"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise AgentError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
        if self.max_time_s is not None and not self.max_time_s > 0:
            raise AgentError(f"--max-time must be > 0 seconds, got {self.max_time_s}")
        cost = self.max_cost_usd
        if cost is not None and not (math.isfinite(cost) and cost > 0):
            raise AgentError(f"--max-cost must be a number > 0 (USD), got {cost}")

    def as_params(self) -> JsonObject:
        params: JsonObject = {
            "max_calls": self.max_calls,
            "max_tokens_total": self.max_tokens_total,
            "max_time_s": self.max_time_s,
        }
        # Only when set: the caps recorded before money caps existed keep their form.
        if self.max_cost_usd is not None:
            params["max_cost_usd"] = self.max_cost_usd
        if self.ledger is not None:
            params["max_total_cost_usd"] = self.ledger.limit_usd
        return params

    def price_for(self, model: str) -> ModelPrice | None:
        return (self.prices or PriceTable()).price_for(model)


class CapMeter:
    """Counts one run's spending against its caps (reset at the start of each run)."""

    def __init__(self, caps: RunCaps | None = None) -> None:
        self.caps = caps or RunCaps()
        self.price: ModelPrice | None = None
        self.reset()

    def reset(self) -> None:
        self.calls = 0
        self.tokens = 0
        self.cost_usd = 0.0  # what this run's calls cost, each request once
        self.held_usd = 0.0  # the worst case of the calls admitted and not yet charged
        self.started = time.monotonic()

    def bind_model(self, model: str) -> None:
        """Price this meter's calls as `model`'s; a money cap on an unpriced model is refused."""
        self.price = self.caps.price_for(model)
        if self.price is None and (self.caps.max_cost_usd or self.caps.ledger):
            option = "--max-cost" if self.caps.max_cost_usd else "--max-total-cost"
            source = self.caps.prices.source if self.caps.prices else "the built-in prices"
            raise AgentError(
                f"{option} needs the price of model {model!r}, which is not in {source}: give "
                f'--prices FILE with {{"{model}": {{"input": IN, "output": OUT}}}} (USD per '
                "million tokens)"
            )

    def worst_case_usd(self, request: Mapping[str, Any]) -> float:
        """The most `request` can cost: one prompt token per byte of its body, and its whole
        reply budget (`max_tokens`, which holds the reasoning budget too) at the output rate."""
        if self.price is None:
            return 0.0
        prompt = len(json.dumps(request).encode("utf-8"))
        budget = request.get("max_tokens", request.get("max_completion_tokens"))
        return self.price.cost(prompt, 0, int(budget or 0))

    def charge(self, call: CallRecord, held_usd: float = 0.0) -> None:
        """Count a finished call's tokens and money (its call was counted when admitted, with
        `held_usd` held), and write what it cost on the record (`cost_usd`; 0 for a request
        this process already paid for, None for a model without a price)."""
        self.held_usd = max(0.0, self.held_usd - held_usd)
        prompt, completion, _ = call_tokens(call)
        self.tokens += prompt + completion
        if self.price is None:
            call["cost_usd"] = None
            return
        cached, written = int(call.get("cached_tokens") or 0), call.get("cache_write_tokens", 0)
        spent = self.price.cost(prompt, cached, completion, written)
        with _PAID_LOCK:
            request = str(call.get("request_hash") or "")
            if call.get("cached") and request in _PAID:
                spent = 0.0  # this process paid for it: the cache answered it free
            _PAID.add(request)
        self.cost_usd += spent
        call["cost_usd"] = spent
        if self.caps.ledger is not None:
            self.caps.ledger.settle(held_usd, spent)

    def admit(self, worst_usd: float = 0.0, count: bool = True) -> CapReached | None:
        """Count one more call whose worst case is `worst_usd`, or say which cap forbids it
        (`count` False: hold `worst_usd` more for a call admitted already). Calls are counted
        and their worst case held when they are admitted, so concurrent requests overshoot
        neither `max_calls` nor a money cap; tokens are known only when a reply arrives, so up
        to the requests in flight may overshoot the token cap."""
        over = self.exceeded() if count else None
        caps = self.caps
        left = None if caps.max_cost_usd is None else caps.max_cost_usd - self.cost_usd
        if over is None and left is not None and self.held_usd + worst_usd > left:
            over = CapReached(
                f"--max-cost {caps.max_cost_usd:g}",
                f"{COST_CAP}: ${self.cost_usd:.4f} spent by this run; the next call could cost "
                f"${worst_usd:.4f} (its prompt, reply and reasoning budget at the model's "
                f"price), more than the ${max(0.0, left - self.held_usd):.4f} left",
            )
        ledger = caps.ledger
        if over is None and ledger is not None and not ledger.hold(worst_usd):
            over = CapReached(
                f"--max-total-cost {ledger.limit_usd:g}",
                f"{COST_CAP}: ${ledger.spent_usd:.4f} spent by this command; the next call "
                f"could cost ${worst_usd:.4f}, more than is left",
            )
        if over is None:
            self.calls += int(count)
            self.held_usd += worst_usd
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
        deadline = self.deadline()
        return self.time_cap() if deadline is not None and time.monotonic() >= deadline else None

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
