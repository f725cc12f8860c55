"""What model calls cost in money: a `ModelPrice` per model (USD per million input, cached
input, output and cache-write tokens), the built-in list prices of `BUILTIN_PRICES_AS_OF`, the
user's `--prices FILE` over them, and the whole command's spend (`SpendLedger`).

A model name is looked up as given, then without a `provider/` prefix, then without a dated
snapshot suffix (`gpt-4o-2024-08-06` -> `gpt-4o`): never by a looser prefix, so `gpt-4o-mini`
is never priced as `gpt-4o`.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay._files import read_file
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonValue

MAX_PRICES_BYTES = 16 * 2**20  # a price table is a few KB; far more is not one

PER_TOKENS = 1_000_000  # prices are per million tokens
BUILTIN_PRICES_AS_OF = "2025-11"
_FIELDS = ("input", "cached_input", "output", "cache_write")
_MAX_PRICE = 10_000.0  # USD per million tokens: anything above is a typo (cents as dollars...)


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens. `cached_input` defaults to `input` (no discount declared)."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None
    source: str = "built-in"

    @property
    def cached_rate(self) -> float:
        return self.input if self.cached_input is None else self.cached_input

    def cost(self, prompt: int, cached: int, completion: int, written: int = 0) -> float:
        """USD of `prompt` prompt tokens (of which `cached` read from the provider's prompt
        cache and `written` written to it, at `cache_write`, else the input rate) and
        `completion` completion tokens."""
        cached = max(0, min(cached, prompt))
        written = max(0, min(written, prompt - cached))
        fresh = prompt - cached - written
        write_rate = self.input if self.cache_write is None else self.cache_write
        usd = fresh * self.input + cached * self.cached_rate + written * write_rate
        return round((usd + completion * self.output) / PER_TOKENS, 8)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input": self.input, "output": self.output}
        out["cached_input"] = self.cached_rate
        if self.cache_write is not None:
            out["cache_write"] = self.cache_write
        out["source"] = self.source
        return out


def _p(inp: float, cached: float, out: float, write: float | None = None) -> ModelPrice:
    return ModelPrice(inp, out, cached, write, f"built-in {BUILTIN_PRICES_AS_OF}")


# List prices, USD per million tokens (input, cached input, output[, cache write]).
BUILTIN_PRICES: dict[str, ModelPrice] = {
    "gpt-4o": _p(2.5, 1.25, 10.0),
    "gpt-4o-mini": _p(0.15, 0.075, 0.6),
    "gpt-4.1": _p(2.0, 0.5, 8.0),
    "gpt-4.1-mini": _p(0.4, 0.1, 1.6),
    "gpt-4.1-nano": _p(0.1, 0.025, 0.4),
    "o3": _p(2.0, 0.5, 8.0),
    "o4-mini": _p(1.1, 0.275, 4.4),
    # inspect_ai 0.3.285's model database ships no prices (`ModelInfo.cost` is None for every
    # model), so these two come from the providers' pages, read 2025-11: o3-mini from
    # platform.openai.com/docs/pricing; gemini-2.5-pro from ai.google.dev/gemini-api/docs/pricing
    # at its rates for prompts up to 200k tokens (above: input 2.5, cached 0.25, output 15).
    "o3-mini": _p(1.1, 0.55, 4.4),
    "gemini-2.5-pro": _p(1.25, 0.125, 10.0),
    "gpt-5": _p(1.25, 0.125, 10.0),
    "gpt-5-mini": _p(0.25, 0.025, 2.0),
    "gpt-5-nano": _p(0.05, 0.005, 0.4),
    "claude-opus-4-1": _p(15.0, 1.5, 75.0, 18.75),
    "claude-sonnet-4-5": _p(3.0, 0.3, 15.0, 3.75),
    "claude-sonnet-4": _p(3.0, 0.3, 15.0, 3.75),
    "claude-haiku-4-5": _p(1.0, 0.1, 5.0, 1.25),
}

_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def lookup(table: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """The price of `model` in `table` (see the module text for the name rules), or None."""
    names = [model.strip()]
    names.append(names[0].rsplit("/", 1)[-1])
    names.extend(_SNAPSHOT.sub("", n) for n in list(names))
    for name in names:
        if name in table:
            return table[name]
    return None


@dataclass(frozen=True)
class PriceTable:
    """The built-in prices with the user's file over them (`source` names the file)."""

    entries: Mapping[str, ModelPrice] = field(default_factory=lambda: dict(BUILTIN_PRICES))
    source: str = f"built-in {BUILTIN_PRICES_AS_OF}"

    def price_for(self, model: str) -> ModelPrice | None:
        return lookup(self.entries, model)


def load_prices(path: str | Path) -> PriceTable:
    """The built-in table overridden by the models of a JSON or TOML price file.

    The file is one table per model name: `{"my-model": {"input": 3, "output": 15,
    "cached_input": 0.3}}` (TOML: `["my-model"]` then `input = 3`...). `input` and `output`
    are required; every price a finite number in [0, 10000] USD per million tokens."""
    file = Path(path)
    try:  # a regular file of bounded size: /dev/zero or a FIFO is refused, never read
        text = read_file(file, "price file (--prices)", MAX_PRICES_BYTES).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentError(f"--prices {str(path)!r}: cannot be read ({exc})") from exc
    data: Any
    try:
        if file.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except ValueError as exc:
        kind = "TOML" if file.suffix.lower() == ".toml" else "JSON"
        raise AgentError(f"--prices {file}: not valid {kind} ({exc})") from exc
    if not isinstance(data, dict) or not data:
        raise AgentError(
            f"--prices {file}: must be a non-empty table of model names, e.g. "
            '{"my-model": {"input": 3, "output": 15, "cached_input": 0.3}}'
        )
    entries = dict(BUILTIN_PRICES)
    for model, row in data.items():
        entries[str(model)] = _model_price(file, str(model), row)
    return PriceTable(entries, f"{file.name} over built-in {BUILTIN_PRICES_AS_OF}")


def _model_price(file: Path, model: str, row: JsonValue) -> ModelPrice:
    where = f"--prices {file}: model {model!r}"
    if not isinstance(row, dict):
        raise AgentError(f"{where} must be a table with input and output prices, got {row!r}")
    unknown = sorted(set(row) - set(_FIELDS))
    if unknown:
        raise AgentError(f"{where}: unknown field {unknown[0]!r} (fields: {', '.join(_FIELDS)})")
    values: dict[str, float | None] = {}
    for name in _FIELDS:
        value = row.get(name)
        if value is None and name in ("input", "output"):
            raise AgentError(f"{where}: field {name!r} is missing (USD per million tokens)")
        if value is None:
            values[name] = None
            continue
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or not 0 <= value <= _MAX_PRICE
        ):
            raise AgentError(
                f"{where}: field {name!r} must be a number in [0, {_MAX_PRICE:g}] USD per "
                f"million tokens, got {value!r}"
            )
        values[name] = float(value)
    return ModelPrice(
        input=float(values["input"] or 0.0),
        output=float(values["output"] or 0.0),
        cached_input=values["cached_input"],
        cache_write=values["cache_write"],
        source=file.name,
    )


class SpendLedger:
    """Money spent by every run of one command (`--max-total-cost`): shared by the agents of
    all its runs in this process, never reset between runs; a call admitted holds its worst case
    until it is settled (see `llm_caps`)."""

    def __init__(self, limit_usd: float) -> None:
        if not (math.isfinite(limit_usd) and limit_usd > 0):
            raise AgentError(f"--max-total-cost must be a number > 0 (USD), got {limit_usd!r}")
        self.limit_usd = limit_usd
        self._spent = 0.0
        self._held = 0.0  # the worst case of the calls admitted and not yet settled
        self._lock = threading.Lock()

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    def hold(self, usd: float) -> bool:
        """Hold a call's worst case if it fits in what is left (False: it does not)."""
        with self._lock:
            if self._spent + self._held + usd > self.limit_usd:
                return False
            self._held += usd
            return True

    def settle(self, held: float, usd: float) -> None:
        """A call that held `held` cost `usd`."""
        with self._lock:
            self._held = max(0.0, self._held - held)
            self._spent += usd
