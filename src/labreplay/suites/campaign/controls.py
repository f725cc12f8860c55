"""Matched control branches (SDL-1).

- Schedule-matched random: same experiment count and the same sequence of evidence and review
  actions as the adaptive branch, but each experiment choice is a seeded random candidate that
  can still support that experiment's evidence schedule. The agent (a fresh instance of the same
  system) still writes every forecast, pre-review forecast and closure claim itself.
- Call-matched no-evidence: the same number of policy calls as the adaptive branch, with the
  evidence and review actions removed from every schema; the agent chooses experiments itself.

Both branches start from the adaptive branch's exact pre-campaign forecast (the runner passes
it). The wrappers are part of the environment side: a disallowed action from the inner agent is
passed on as an invalid action, so it is recorded and counted like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labreplay._rng import make_rng
from labreplay.agents.base import Agent, drain_calls
from labreplay.records._types import MISSING_TAG

Slot = list[tuple[str, str | None]]  # ("inspect", kind) | ("review", None) | ("close", None)


def extract_schedule(events: Sequence[Mapping[str, Any]]) -> tuple[list[Slot], bool]:
    """Per selected experiment, its accepted evidence/review/close actions in order; and whether
    the adaptive branch stopped before spending its experiment budget."""
    slots: list[Slot] = []
    stopped = False
    for event in events:
        if event["kind"] != "action" or not event["payload"]["accepted"]:
            continue
        action = event["payload"]["action"]
        kind = action["type"]
        if kind == "select_experiment":
            slots.append([])
        elif kind == "inspect_evidence":
            slots[-1].append(("inspect", action["kind"]))
        elif kind == "request_review":
            slots[-1].append(("review", None))
        elif kind == "close_experiment":
            slots[-1].append(("close", None))
        elif kind == "stop":
            stopped = True
    return slots, stopped


def _supports(private: Mapping[str, Any], slot: Slot) -> bool:
    """Can this experiment take the slot's evidence actions? A kind the record lacks can still
    be inspected once (the reveal says it is missing); a review is always possible once."""
    needed: dict[str, int] = {}
    for op, kind in slot:
        if op == "inspect" and kind is not None:
            needed[kind] = needed.get(kind, 0) + 1
    for kind, count in needed.items():
        items = private["evidence"][kind]
        available = 1 if (isinstance(items, Mapping) and MISSING_TAG in items) else len(items)
        if count > available:
            return False
    return True


def _restrict(observation: Mapping[str, Any], allowed: Sequence[str]) -> dict[str, Any]:
    variants = [
        v
        for v in observation["action_schema"]["oneOf"]
        if v["properties"]["type"]["const"] in allowed
    ]
    return {**observation, "action_schema": {"oneOf": variants}}


def _invalid(action: Any, why: str) -> dict[str, Any]:
    return {"type": "invalid", "raw": str(action)[:2000], "error": why}


class ScheduleMatchedRandom:
    def __init__(
        self,
        inner: Agent,
        slots: list[Slot],
        stopped: bool,
        evaluator: Mapping[str, Any],
        seed: int,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.slots = slots
        self.stopped = stopped
        self.evaluator = evaluator
        self.seed = seed

    def params(self) -> dict[str, Any]:
        return self.inner.params()

    def reset(self, seed: int) -> None:
        self.inner.reset(seed)
        self.rng = make_rng(self.seed, "schedule-matched-random")
        self.slot_index = -1
        self.op_index = 0

    def drain_calls(self) -> list[Any]:
        return list(drain_calls(self.inner))

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        phase = observation["phase"]
        state = observation["state"]
        if phase == "select":
            if self.slot_index + 1 >= len(self.slots):
                return {"type": "stop"}
            slot = self.slots[self.slot_index + 1]
            available = sorted(
                c["experiment_id"] for c in state["candidates"] if c["status"] == "available"
            )
            fitting = [i for i in available if _supports(self.evaluator[i], slot)] or available
            self.slot_index += 1
            self.op_index = 0
            return {"type": "select_experiment", "experiment_id": str(self.rng.choice(fitting))}
        if phase in ("prior_forecast", "update_required"):
            return self._ask(observation, ["submit_forecast"])
        slot = self.slots[self.slot_index]
        if self.op_index >= len(slot):
            return {"type": "stop"}  # the adaptive branch stopped with this experiment open
        op, kind = slot[self.op_index]
        eid = state["open_experiment"]
        if op == "inspect":
            self.op_index += 1
            return {"type": "inspect_evidence", "experiment_id": eid, "kind": kind}
        action = self._ask(
            observation, ["request_review" if op == "review" else "close_experiment"]
        )
        if action.get("type") != "invalid":
            self.op_index += 1
        return action

    def _ask(self, observation: Mapping[str, Any], allowed: list[str]) -> dict[str, Any]:
        action = self.inner.act(_restrict(observation, allowed))
        if not isinstance(action, Mapping) or action.get("type") not in allowed:
            return _invalid(action, f"control branch allows only {allowed} here")
        return dict(action)

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        return self.inner.forecast(snapshot)


class CallMatchedNoEvidence:
    def __init__(self, inner: Agent, policy_calls: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy_calls = policy_calls

    def params(self) -> dict[str, Any]:
        return self.inner.params()

    def reset(self, seed: int) -> None:
        self.inner.reset(seed)
        self.calls = 0

    def drain_calls(self) -> list[Any]:
        return list(drain_calls(self.inner))

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        if self.calls >= self.policy_calls:
            return {"type": "stop"}
        self.calls += 1
        allowed = [
            v["properties"]["type"]["const"]
            for v in observation["action_schema"]["oneOf"]
            if v["properties"]["type"]["const"] not in ("inspect_evidence", "request_review")
        ]
        action = self.inner.act(_restrict(observation, allowed))
        if not isinstance(action, Mapping) or action.get("type") not in allowed:
            return _invalid(action, "the no-evidence branch buys no evidence or reviews")
        return dict(action)

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        return self.inner.forecast(snapshot)
