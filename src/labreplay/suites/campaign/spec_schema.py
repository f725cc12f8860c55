"""The declared schema of a campaign spec body, checked on load.

A spec whose hash matches its bytes is self-consistent, not sensible: an edited spec re-hashed
by hand (or written by another tool) could ask for `budgets.experiments = 1e12` (a run that
never ends), a string or negative budget, `eps` 0 (log loss of a certain miss: infinite), a
negative price, no candidates, no queries, or a candidate the evaluator has no record of. Each
is refused on load, before any run row is opened, in one line naming the spec and the field.
The maxima bound a run's steps and memory; compiled specs sit far below them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TypeGuard

from labreplay.errors import SpecError
from labreplay.suites.campaign.json_values import json_list, json_object

# Declared maxima (compiled SDL-1 specs: 12 experiments, 36 evidence requests, 3 reviews).
MAX_BUDGETS = {"experiments": 10_000, "evidence": 100_000, "reviews": 10_000}
MIN_BUDGETS = {"experiments": 1, "evidence": 0, "reviews": 0}
MAX_CANDIDATES = 100_000
MAX_PRICE = 1e6


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[int | float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def check_body_schema(body: Mapping[str, object], origin: str) -> None:
    """Refuse (SpecError, exit 2) a body outside the declared schema; see the module doc."""

    def refuse(field: str, value: object, why: str) -> SpecError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return SpecError(f"spec {origin}: body field {field!r}: value {shown} {why}")

    # `api.check_campaign_spec` checked the top-level fields' JSON types before this
    budgets = json_object(body["budgets"], "budgets")
    for name, hi in MAX_BUDGETS.items():
        value = budgets.get(name)
        lo = MIN_BUDGETS[name]
        if not _is_int(value):
            raise refuse(f"budgets.{name}", value, "is not an integer")
        if not lo <= value <= hi:
            raise refuse(f"budgets.{name}", value, f"is outside [{lo}, {hi}] (declared maximum)")
    eps = body["eps"]
    if not _is_number(eps) or not 0 < float(eps) < 0.5:
        raise refuse("eps", eps, "must be a number in (0, 0.5)")
    for name, price in json_object(body["prices"], "prices").items():
        if not _is_number(price) or not 0 <= float(price) <= MAX_PRICE:
            raise refuse(f"prices.{name}", price, f"must be a number in [0, {MAX_PRICE:g}]")
    evaluator = body["evaluator"]
    for field in ("candidates", "queries"):
        items = json_list(body[field], field)
        if not items:
            raise refuse(field, items, "is empty")
        if len(items) > MAX_CANDIDATES:
            raise refuse(field, len(items), f"entries exceed the maximum {MAX_CANDIDATES}")
        for n, item in enumerate(items):
            eid = item.get("experiment_id") if isinstance(item, Mapping) else None
            if not isinstance(eid, str) or not eid:
                raise refuse(f"{field}[{n}].experiment_id", eid, "is not an experiment id")
            record = evaluator.get(eid) if isinstance(evaluator, Mapping) else None
            # A visible spec (its evaluator sealed apart) names no records: checked once the
            # sealed evaluator is joined, which is the body a run scores against.
            if evaluator and not (isinstance(record, Mapping) and "outcome" in record):
                raise refuse(f"{field}[{n}]", eid, "has no evaluator record with an outcome")


__all__ = ["MAX_BUDGETS", "check_body_schema"]
