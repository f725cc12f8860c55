"""Matched control branches (SDL-1, METRICS.md "Matched controls").

Both controls start from the adaptive branch's frozen assignment and exact pre-campaign forecast
(the runner passes it), and both close exactly as many experiments as the adaptive branch.

- Schedule-matched random: per adaptive experiment, the same sequence of evidence kinds and
  reviews; the experiment itself is a seeded random candidate (one independent stream per
  assignment and replicate, `random_stream`) that can still support that
  sequence (same number of accepted inspections per kind, and a recorded item exactly where the
  adaptive branch got one, "none recorded" where it got none). When no candidate can, the
  wrapper takes a seeded random one of the closest candidates (`mismatch`) and records a
  *departure* (counted in the trajectory, never silent); an inspection the
  chosen candidate cannot take is skipped and recorded the same way.
- Call-matched no-evidence: the adaptive branch's own selections and closures, in order, with the
  same number of policy-action calls (SDL-1): each forecast of the adaptive branch is a forecast
  here, and each evidence purchase, review or rejected (invalid) action becomes one forecast
  revision call with nothing revealed, asked in the forecast phase (`update_required`); a call
  is counted whatever the agent answers, and this branch's own rejected actions count against
  the calls it owes; an experiment the adaptive branch abandoned with a stop is abandoned here.

The agent under test (a fresh instance of the same system) still writes every forecast, review
expectation and closure claim itself. The wrappers are the environment side: a disallowed action
from the inner agent is passed on as an invalid action, so it is recorded and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

import numpy as np

from labreplay.sdk import MISSING_TAG, make_rng
from labreplay.sdk.agents import (
    Agent,
    CallRecord,
    ResponseCache,
    bind_response_cache,
    drain_calls,
    isolation_of,
    model_of,
    sandbox_of,
)
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.actions import ActionReply, ForecastReply, schema_claims
from labreplay.suites.campaign.events import CategoryForecast, campaign_events
from labreplay.suites.campaign.json_values import json_list, json_object
from labreplay.suites.campaign.protocol import REVIEW_KIND
from labreplay.suites.campaign.views import EvaluatorRecord, VisibleState, visible_state

Op = tuple[str, str | None]  # ("inspect", kind) | ("review", None) | ("forecast", None)


class Departure(TypedDict):
    """Where a matched control could not follow its adaptive schedule (declared, recorded as a
    `control` event): at slot `slot`, exactly one of the cases below."""

    slot: int
    substituted: NotRequired[str]  # a neutral action of this type, after rejections
    after_rejections: NotRequired[int]
    skipped: NotRequired[str]  # an inspection the chosen experiment cannot take
    experiment: NotRequired[str]
    no_candidate_supports: NotRequired[list[list[str | None]]]  # the slot's operations


@dataclass
class Slot:
    """One adaptive experiment: its id, its accepted operations in order, whether it was closed,
    and per evidence kind how many accepted reveals returned a recorded item."""

    experiment_id: str
    ops: list[Op] = field(default_factory=list)
    closed: bool = False
    recorded: dict[str, int] = field(default_factory=dict)
    # Rejected (invalid) actions of the adaptive branch attributed to this experiment: those
    # from its selection to the next one (the first slot also takes any before it). Each is a
    # policy call the call-matched no-evidence control mirrors with one revision call.
    rejected: int = 0
    # Of those, the ones after the experiment's last accepted forecast, purchase or review (a
    # rejected closure, say): the no-evidence control matches them with its own rejected
    # closures before it adds revision calls for them (in the next experiment).
    trailing: int = 0


def extract_schedule(events: Sequence[Mapping[str, object]]) -> tuple[list[Slot], bool]:
    """The adaptive branch's experiments in selection order, and whether it stopped."""
    slots: list[Slot] = []
    stopped = False
    leading = 0  # rejected actions before the first selection
    for event in campaign_events(events):
        if event["kind"] != "action":
            continue
        if not event["payload"]["accepted"]:
            if slots:
                slots[-1].rejected += 1
                slots[-1].trailing += 1
            else:
                leading += 1
            continue
        payload = event["payload"]
        action = payload["action"]
        kind = action["type"]
        if kind in ("submit_forecast", "inspect_evidence", "request_review"):
            slots[-1].trailing = 0
        if kind == "select_experiment":
            slots.append(Slot(str(action["experiment_id"])))  # accepted: a candidate's id
        elif kind == "submit_forecast":
            slots[-1].ops.append(("forecast", None))
        elif kind in ("inspect_evidence", "request_review"):
            ev_kind = str(action["kind"]) if kind == "inspect_evidence" else REVIEW_KIND
            op: Op = ("inspect", ev_kind) if kind == "inspect_evidence" else ("review", None)
            slots[-1].ops.append(op)
            item = str(payload.get("revealed_item") or "")
            if item and not item.endswith(":missing"):
                slots[-1].recorded[ev_kind] = slots[-1].recorded.get(ev_kind, 0) + 1
        elif kind == "close_experiment":
            slots[-1].closed = True
        elif kind == "stop":
            stopped = True
    if slots:
        slots[0].rejected += leading
    return slots, stopped


def _capacity(items: object) -> tuple[int, int]:
    """(accepted inspections possible, recorded items) of one evidence kind of a record."""
    if isinstance(items, Mapping) and MISSING_TAG in items:
        return 1, 0
    n = len(items) if isinstance(items, list) else 0
    return (n, n) if n else (1, 0)


def mismatch(private: EvaluatorRecord, slot: Slot) -> int:
    """How far this experiment is from taking the slot's evidence schedule with recorded items
    exactly where the adaptive branch got them, both ways (issue 49: matched one way only, the
    control got a real item where the adaptive branch got "none recorded", 2.07 vs 1.32
    recorded items per run): per evidence kind the inspections it cannot take plus the
    difference in recorded items, and for a review whether it is recorded as the adaptive
    branch's was. 0: it supports the slot."""
    needed: dict[str, int] = {}
    for op, kind in slot.ops:
        if op == "inspect" and kind is not None:
            needed[kind] = needed.get(kind, 0) + 1
    evidence = json_object(private["evidence"], "evidence")
    out = 0
    for kind, count in needed.items():
        accepted, recorded = _capacity(evidence[kind])
        out += max(0, count - accepted) + abs(min(count, recorded) - slot.recorded.get(kind, 0))
    if ("review", None) in slot.ops:
        recorded_review = _capacity(evidence[REVIEW_KIND])[1] >= 1
        out += abs(int(recorded_review) - slot.recorded.get(REVIEW_KIND, 0))
    return out


def _type_of(variant: object) -> object:
    """The action type an action schema's variant is for (its `type` const)."""
    return json_object(json_object(json_object(variant)["properties"])["type"])["const"]


def _restrict(observation: Mapping[str, JsonValue], allowed: Sequence[str]) -> dict[str, object]:
    variants = [
        v
        for v in json_list(json_object(observation["action_schema"])["oneOf"])
        if _type_of(v) in allowed
    ]
    return {**observation, "action_schema": {"oneOf": variants}}


SUBSTITUTE_AFTER = 3  # below the harness's stop after 8 invalid actions in a row


def _neutral(observation: Mapping[str, JsonValue], kind: str) -> ActionReply:
    """A neutral action of `kind` for the open experiment: its last accepted forecast (else
    uniform), claims and review expectations at 0.5."""
    from labreplay.suites.campaign.env import uniform

    state = visible_state(observation)
    eid = state["open_experiment"]
    if kind == "submit_forecast":
        assert eid is not None  # a forecast is asked for only with an experiment open
        forecasts = state["experiments"][eid]["forecasts"]
        last: CategoryForecast = forecasts[-1] if forecasts else uniform(state["categories"])
        return {
            "type": kind,
            "experiment_id": eid,
            "p_valid": last["p_valid"],
            "categories": dict(last["categories"]),
        }
    if kind == "request_review":
        return {"type": kind, "experiment_id": eid, "expect_change": 0.5, "expected_tier": 2}
    claims = schema_claims(observation["action_schema"])
    return {"type": kind, "experiment_id": eid, "claims": dict.fromkeys(claims, 0.5)}


def _invalid(action: object, why: str) -> ActionReply:
    return {"type": "invalid", "raw": str(action)[:2000], "error": why}


class ControlWrapper:
    """Shared plumbing: name/params of the inner agent, call log, declared departures."""

    def __init__(self, inner: Agent, slots: list[Slot]) -> None:
        self.inner = inner
        self.name = inner.name
        self.slots = slots
        self.departures: list[Departure] = []
        self.rejected = 0

    def params(self) -> JsonObject:
        return self.inner.params()

    @property
    def isolation(self) -> str:
        """Where the wrapped agent's code runs (a control reports the agent it wraps)."""
        return isolation_of(self.inner)

    @property
    def sandbox(self) -> str:
        """The sandbox the wrapped agent's code runs in ("bwrap" or "none")."""
        return sandbox_of(self.inner)

    @property
    def model(self) -> str | None:
        """The wrapped agent's model (None: none): a control's run row and header name it as
        the adaptive run's do, whichever process ran the control."""
        return model_of(self.inner)[0]

    @property
    def endpoint(self) -> str | None:
        return model_of(self.inner)[1]

    def drain_calls(self) -> list[CallRecord]:
        return list(drain_calls(self.inner))

    def bind_store(self, store: ResponseCache | None) -> None:
        """The response cache reaches the wrapped model agent too: a control branch redone
        after `store remove` (or resumed) re-asks no call that was answered."""
        bind_response_cache(self.inner, store)

    def drain_departures(self) -> list[Departure]:
        out, self.departures = self.departures, []
        return out

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        return self.inner.forecast(snapshot)

    def _ask(self, observation: Mapping[str, JsonValue], allowed: list[str]) -> ActionReply:
        """The inner agent fills the one action the schedule needs here. After
        `SUBSTITUTE_AFTER` rejections in a row the wrapper submits a neutral action itself and
        records the departure, so the control still follows its schedule (the harness would
        otherwise end the branch early and the closures would no longer match)."""
        last = observation.get("last_result")
        rejected = isinstance(last, Mapping) and last.get("accepted") is False
        self.rejected = self.rejected + 1 if rejected else 0
        if self.rejected >= SUBSTITUTE_AFTER:
            self.rejected = 0
            action = _neutral(observation, allowed[0])
            self.departures.append(
                {
                    "slot": self.slot_index,
                    "substituted": allowed[0],
                    "after_rejections": SUBSTITUTE_AFTER,
                }
            )
            return action
        action = self.inner.act(_restrict(observation, allowed))
        if not isinstance(action, Mapping) or action.get("type") not in allowed:
            return _invalid(action, f"control branch allows only {allowed} here")
        return dict(action)

    def _start(self, seed: int) -> None:
        self.inner.reset(seed)
        self.slot_index = -1
        self.op_index = 0
        self.rejected = 0
        self.departures = []

    def _next_op(self) -> Op | None:
        """The current slot's next non-forecast operation (forecasts follow the env's phases)."""
        ops = self.slots[self.slot_index].ops
        while self.op_index < len(ops) and ops[self.op_index][0] == "forecast":
            self.op_index += 1
        return ops[self.op_index] if self.op_index < len(ops) else None


def random_stream(seed: int, assignment: str, replicate: int) -> np.random.Generator:
    """The random control's stream for one (assignment, replicate): derived from the recorded
    run seed with the assignment (its spec id, which names the partition seed) and the
    replicate index as keys, so no two assignments or replicates share a stream (issue 37:
    one stream per replicate for every assignment put the first pick on the same sorted
    candidate position in 20 of 30 assignments)."""
    return make_rng(seed, "schedule-matched-random", assignment, f"replicate-{replicate}")


class ScheduleMatchedRandom(ControlWrapper):
    def __init__(
        self,
        inner: Agent,
        slots: list[Slot],
        stopped: bool,
        evaluator: Mapping[str, EvaluatorRecord],
        seed: int,
        replicate: int = 1,
        assignment: str = "",
    ) -> None:
        super().__init__(inner, slots)
        self.stopped = stopped
        self.evaluator = evaluator
        self.seed = seed
        self.replicate = replicate
        self.assignment = assignment

    def reset(self, seed: int) -> None:
        self._start(seed)
        self.rng = random_stream(self.seed, self.assignment, self.replicate)
        self.taken: dict[str, int] = {}

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        phase = observation["phase"]
        state = visible_state(observation)
        if phase == "select":
            return self._select(state)
        if phase in ("prior_forecast", "update_required"):
            return self._ask(observation, ["submit_forecast"])
        slot = self.slots[self.slot_index]
        eid = state["open_experiment"]
        while (op := self._next_op()) is not None:
            name, kind = op
            if name == "inspect" and kind is not None:
                assert eid is not None  # the slot's experiment is open outside `select`
                accepted, _ = _capacity(json_object(self.evaluator[eid]["evidence"])[kind])
                if self.taken.get(kind, 0) >= accepted:
                    self.departures.append(
                        {"slot": self.slot_index, "skipped": f"inspect {kind}", "experiment": eid}
                    )
                    self.op_index += 1
                    continue
                self.op_index += 1
                self.taken[kind] = self.taken.get(kind, 0) + 1
                return {"type": "inspect_evidence", "experiment_id": eid, "kind": kind}
            action = self._ask(observation, ["request_review"])
            if action.get("type") != "invalid":
                self.op_index += 1
            return action
        if not slot.closed:
            return {"type": "stop"}  # the adaptive branch stopped with this experiment open
        return self._ask(observation, ["close_experiment"])

    def _select(self, state: VisibleState) -> ActionReply:
        if self.slot_index + 1 >= len(self.slots):
            return {"type": "stop"}
        self.slot_index += 1
        self.op_index = 0
        self.taken = {}
        slot = self.slots[self.slot_index]
        available = sorted(
            c["experiment_id"] for c in state["candidates"] if c["status"] == "available"
        )
        # Where no candidate supports the slot, the closest ones do (fewest missing
        # inspections and recorded items off), and the departure is recorded.
        off = {i: mismatch(self.evaluator[i], slot) for i in available}
        fitting = [i for i in available if off[i] == min(off.values(), default=0)]
        if fitting and off[fitting[0]] > 0:
            self.departures.append(
                {"slot": self.slot_index, "no_candidate_supports": [list(op) for op in slot.ops]}
            )
        return {"type": "select_experiment", "experiment_id": str(self.rng.choice(fitting))}


class CallMatchedNoEvidence(ControlWrapper):
    def reset(self, seed: int) -> None:
        self._start(seed)
        self.owed = 0  # revision calls still owed to the adaptive branch (< 0: calls ahead)
        self.unpaid = 0  # the adaptive branch's trailing rejections in the open experiment
        self.closing = False  # this branch asked for the closure on its last call

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        phase = observation["phase"]
        reasked, self.closing = self.closing and phase != "select", False
        if phase == "select":
            if self.slot_index + 1 >= len(self.slots):
                return {"type": "stop"}
            self.slot_index += 1
            slot = self.slots[self.slot_index]
            # One policy call per adaptive call (SDL-1): each forecast stays a forecast, and each
            # evidence purchase, review or rejected (invalid) action becomes a revision call
            # with nothing revealed. This branch's own rejected actions spend those calls too
            # (issue 49: a rejected closure here was one call more): a rejected closure of the
            # adaptive branch is matched by one here first, and is a revision call in the next
            # experiment where this branch closed at once.
            trailing = slot.trailing if slot.closed else 0
            self.owed += self.unpaid + len(slot.ops) + slot.rejected - trailing
            self.unpaid = trailing
            return {"type": "select_experiment", "experiment_id": slot.experiment_id}
        if reasked:  # this branch's closure was rejected: one call more
            if self.unpaid > 0:
                self.unpaid -= 1
            else:
                self.owed -= 1
        if phase in ("prior_forecast", "update_required"):
            self.owed -= 1
            return self._ask(observation, ["submit_forecast"])
        if self.owed > 0:
            # A revision call, shown in the forecast phase where only a forecast is allowed
            # (issue 49: shown as `investigate`, a phase-based agent answered it invalidly).
            self.owed -= 1
            return self._ask({**observation, "phase": "update_required"}, ["submit_forecast"])
        if not self.slots[self.slot_index].closed:
            return {"type": "stop"}
        self.closing = True
        return self._ask(observation, ["close_experiment"])
