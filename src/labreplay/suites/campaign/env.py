"""The campaign runtime: `reset(seed)` / `step(action)` over one frozen assignment.

Rules (SDL-1): selecting an experiment reveals nothing; a prior forecast for the open experiment
is required before any of its evidence; every reveal requires an updated forecast before the
next action; experiments, evidence and expert reviews draw from separate budgets; a spent budget
rejects the action. A rejected action is recorded with its reason and changes nothing.

The firewall: evaluator-private data (outcomes, unrevealed evidence) lives in `self._private`
and reaches the agent-visible state only through `_reveal`, called from a legal, paid action.
Every event is appended to a hash-chained trajectory bound to the spec hash.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from labreplay.errors import SpecError
from labreplay.sdk import HEADER_KIND, MISSING_TAG, canonical_json, sha256_json
from labreplay.sdk.agents import Observation, Snapshot
from labreplay.sdk.engine import EnvironmentSpec, Trajectory
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.scoring import CATEGORIES
from labreplay.suites.campaign.actions import (
    PHASE_ACTIONS,
    CampaignAction,
    action_schema,
    check_distribution,
    claim_names,
    forecast_properties,
    validate_fields,
)
from labreplay.suites.campaign.card_text import TableDeclaration, instruction, rules_of, table_of
from labreplay.suites.campaign.events import CategoryForecast, CheckpointPayload
from labreplay.suites.campaign.protocol import EVIDENCE_KINDS, REVIEW_KIND
from labreplay.suites.campaign.views import spec_body

if TYPE_CHECKING:
    from labreplay.suites.campaign.controls import Departure

RULES = (
    "One experiment is open at a time. select_experiment opens a candidate and reveals nothing. "
    "Submit a prior forecast for the open experiment before any of its evidence. Each evidence "
    "inspection or expert review reveals one recorded item (or the fact that none is recorded) "
    "and must be followed by an updated forecast. close_experiment ends work on it, with your "
    "probability that the evidence you inspected supports each claim. Experiments, evidence and "
    "reviews have separate budgets; stop ends the campaign."
)


@dataclass(frozen=True)
class StepResult:
    accepted: bool
    reason: str
    done: bool
    checkpoint_due: bool
    reveal: Mapping[str, object] | None = None


def is_missing_json(value: object) -> bool:
    return isinstance(value, Mapping) and set(value) == {MISSING_TAG}


class CampaignEnv:
    def __init__(self, spec: EnvironmentSpec) -> None:
        if spec.suite != "campaign":
            raise SpecError(f"spec {spec.spec_id}: suite {spec.suite!r} is not 'campaign'")
        self.spec = spec
        self.spec_hash = spec.spec_hash
        body = spec.body
        self.budgets_total: dict[str, int] = dict(body["budgets"])
        self.prices: dict[str, int] = dict(body["prices"])
        # The spec's categories and evidence kinds (the built-in ones in their declared order;
        # a record card's table declares its own).
        self.categories: tuple[str, ...] = tuple(body.get("categories", CATEGORIES))
        self.claims: tuple[str, ...] = claim_names(spec_body(body))
        self.table = table_of(body["record"])
        self.kinds: tuple[str, ...] = (
            *(k for k in EVIDENCE_KINDS if k in self.prices),
            *(k for k in self.prices if k not in EVIDENCE_KINDS),
        )
        self.candidate_ids = [c["experiment_id"] for c in body["candidates"]]
        self.query_ids = [q["experiment_id"] for q in body["queries"]]
        self._private: Mapping[str, Any] = body["evaluator"]
        self._candidates_view = [dict(c) for c in body["candidates"]]
        self._queries_view = [dict(q) for q in body["queries"]]
        self._context_view = (
            body["context_rows"] if body["context_rows"] else body["context_summary"]
        )
        self.trajectory = Trajectory(self.spec_hash)
        self._reset_state()

    # ------------------------------------------------------------------ state
    def _reset_state(self) -> None:
        self.budgets = dict(self.budgets_total)
        self.status = {i: "available" for i in self.candidate_ids}
        self.open_id: str | None = None
        self.phase = "select"
        self.experiments: dict[str, dict[str, Any]] = {}
        self.revealed_counts: dict[tuple[str, str], int] = {}
        self.closed_order: list[str] = []
        self.stopped = False
        self.checkpoint_due = False
        self.n_checkpoints = 0
        self.n_actions = 0
        self.n_invalid = 0
        self.last_result: dict[str, Any] | None = None

    def record_header(self, payload: Mapping[str, object]) -> None:
        """The run's `header` event (what the run is: agent, seed, isolation, ...), which the
        runner writes right after `reset`; the trajectory stays written by the env alone."""
        self.trajectory.append(HEADER_KIND, dict(payload))

    def reset(self, seed: int) -> None:
        self.trajectory = Trajectory(self.spec_hash)
        self._reset_state()
        self.seed = seed
        self.trajectory.append(
            "reset", {"seed": seed, "spec_id": self.spec.spec_id, "budgets": self.budgets_total}
        )

    @property
    def done(self) -> bool:
        if self.stopped:
            return True
        if self.open_id is not None:
            return False
        return self.budgets["experiments"] <= 0 or "available" not in self.status.values()

    # ------------------------------------------------------------------ agent views
    def visible_state(self) -> dict[str, object]:
        """Everything the agent may see now. Built from visible data only. A record card's
        declared claims (name and the evidence kinds that support each) are shown; the
        built-in records' four SDL-1 claims are described by the rules text. A card's table
        also shows what the card says of it (`table`: `card_text.TableDeclaration`)."""
        state = self._visible_state()
        declared = self.spec.body.get("claims")
        if isinstance(declared, list):
            state["claims"] = [dict(c) for c in declared]
        if self.table is not None:
            state["table"] = copy.deepcopy(self.table)
        return state

    def _visible_state(self) -> dict[str, object]:
        return {
            "assignment": self.spec.body["assignment"]["id"],
            # a card's table holds out groups (`COLUMN=value`), not precursors
            "eval_groups" if self.table else "eval_precursors": self.spec.body["eval_precursors"],
            "budgets_left": dict(self.budgets),
            "budgets_total": dict(self.budgets_total),
            "evidence_prices": dict(self.prices),
            "categories": list(self.categories),
            "candidates": [
                {**c, "status": self.status[c["experiment_id"]]} for c in self._candidates_view
            ],
            "held_out_queries": self._queries_view,
            "context": self._context_view,
            "open_experiment": self.open_id,
            "experiments": copy.deepcopy(self.experiments),
            "closed": list(self.closed_order),
        }

    def observation(self) -> Observation:
        """What the agent sees before its next action (`labreplay.Observation`)."""
        available = [i for i in self.candidate_ids if self.status[i] == "available"]
        state = self.visible_state()
        return {
            "phase": self.phase,
            "rules": rules_of(state, RULES),
            "action_schema": action_schema(
                self.phase,
                available if self.budgets["experiments"] > 0 else [],
                self.open_id,
                self.inspectable_kinds(),
                self.review_possible(),
                self.categories,
                self.claims,
                self.table,
            ),
            "state": state,
            "last_result": self.last_result,
            "step": self.n_actions,
        }

    def inspectable_kinds(self) -> list[str]:
        """Evidence kinds of the open experiment an inspection can take now: affordable and not
        exhausted. Declared consequence: once a kind was inspected, whether it is still offered
        tells the agent whether another recorded item of that kind exists (the rejection would
        tell it the same)."""
        eid = self.open_id
        if eid is None:
            return []
        out = []
        for kind in self.kinds:
            if self.budgets["evidence"] < int(self.prices.get(kind, 1)):
                continue
            items = self._private[eid]["evidence"][kind]
            taken = self.revealed_counts.get((eid, kind), 0)
            limit = 1 if is_missing_json(items) else len(items)
            if taken < limit:
                out.append(kind)
        return out

    def review_possible(self) -> bool:
        eid = self.open_id
        return (
            eid is not None
            and self.budgets["reviews"] > 0
            and self.experiments[eid]["review"] is None
        )

    def checkpoint_snapshot(self) -> Snapshot:
        """An evaluator panel checkpoint (`labreplay.Snapshot`)."""
        state = self.visible_state()
        return {
            "kind": "panel_checkpoint",
            "instructions": instruction(self.table),
            "response_schema": panel_schema(self.query_ids, self.categories, self.table),
            "state": state,
            "state_hash": sha256_json(state),
            "panel": self._queries_view,
        }

    # ------------------------------------------------------------------ stepping
    def step(self, action: JsonValue) -> StepResult:
        if self.checkpoint_due:
            raise RuntimeError("harness error: evaluator checkpoint pending before next action")
        if self.done:
            return self._reject(action, "the campaign is over")
        self.n_actions += 1
        if not isinstance(action, Mapping):
            return self._reject(
                action, f"action must be a JSON object, got {type(action).__name__}"
            )
        if action.get("type") == "invalid" and isinstance(error := action.get("error"), str):
            # the agent's own failure (act raised, a non-JSON or unparseable reply): its
            # one-line message is the reason the action was rejected
            return self._reject(action, error or "invalid action")
        err = validate_fields(action, self.kinds, self.categories, self.claims)
        if err is not None:
            return self._reject(action, err)
        # validate_fields checked every field the action's type has (names and value types)
        checked = cast(CampaignAction, action)
        kind = checked["type"]
        if kind not in PHASE_ACTIONS[self.phase]:
            return self._reject(
                action,
                f"{kind} is not allowed in phase {self.phase!r}; "
                f"allowed: {list(PHASE_ACTIONS[self.phase])}",
            )
        handler = getattr(self, f"_do_{kind}")
        result: StepResult = handler(checked)
        return result

    def _reject(self, action: object, reason: str) -> StepResult:
        self.n_invalid += 1
        self.last_result = {"accepted": False, "reason": reason}
        raw = action if isinstance(action, Mapping) else {"raw": repr(action)[:2000]}
        try:
            canonical_json(raw)
        except (ValueError, TypeError):
            raw = {"raw": repr(action)[:2000]}
        self.trajectory.append(
            "action",
            {"action": dict(raw), "accepted": False, "reason": reason, "phase": self.phase},
        )
        return StepResult(False, reason, self.done, False)

    def _accept(
        self,
        action: CampaignAction,
        phase_before: str,
        reveal: Mapping[str, object] | None = None,
        cost: dict[str, int] | None = None,
        by: str | None = None,
    ) -> StepResult:
        self.last_result = {"accepted": True, "reason": "ok"}
        if reveal is not None:
            self.last_result["revealed"] = reveal
        payload: dict[str, Any] = {"action": dict(action), "accepted": True, "phase": phase_before}
        if reveal is not None:
            payload["revealed_item"] = reveal.get("item_id")
        if cost:
            payload["cost"] = cost
        if by is not None:  # a selection not the agent's (a live lab's own: `live.lab`)
            payload["selected_by"] = by
        self.trajectory.append("action", payload)
        return StepResult(True, "ok", self.done, self.checkpoint_due, reveal)

    def _check_open(self, action: CampaignAction) -> str | None:
        if action["experiment_id"] != self.open_id:
            return f"experiment {action['experiment_id']!r} is not the open experiment ({self.open_id})"
        return None

    def before_act(self) -> None:
        """Called before the agent is asked for each action (a live lab selecting: `live.lab`)."""

    def _do_select_experiment(self, action: CampaignAction, by: str | None = None) -> StepResult:
        eid = action["experiment_id"]
        if eid not in self.status:
            return self._reject(action, f"{eid!r} is not a candidate of this campaign")
        if self.status[eid] != "available":
            return self._reject(action, f"{eid!r} was already selected")
        if self.budgets["experiments"] <= 0:
            return self._reject(action, "experiment budget is spent")
        phase = self.phase
        self.budgets["experiments"] -= 1
        self.status[eid] = "open"
        self.open_id = eid
        self.experiments[eid] = {
            "forecasts": [],
            "revealed": [],
            "review": None,
            "claims": None,
            "pre_review": None,
        }
        self.phase = "prior_forecast"
        return self._accept(action, phase, cost={"experiments": 1}, by=by)

    def _do_submit_forecast(self, action: CampaignAction) -> StepResult:
        if (err := self._check_open(action)) is not None:
            return self._reject(action, err)
        dist, _ = check_distribution(action["categories"], self.categories)
        assert dist is not None
        phase = self.phase
        record = self.experiments[action["experiment_id"]]
        record["forecasts"].append(
            {
                "p_valid": float(action["p_valid"]),
                "categories": dist,
                "after_reveals": len(record["revealed"]) + (1 if record["review"] else 0),
            }
        )
        self.phase = "investigate"
        return self._accept(action, phase)

    def _do_inspect_evidence(self, action: CampaignAction) -> StepResult:
        if (err := self._check_open(action)) is not None:
            return self._reject(action, err)
        kind = action["kind"]
        price = int(self.prices.get(kind, 1))
        if self.budgets["evidence"] < price:
            return self._reject(
                action, f"evidence budget left {self.budgets['evidence']} < price {price} of {kind}"
            )
        eid = action["experiment_id"]
        items = self._private[eid]["evidence"][kind]
        taken = self.revealed_counts.get((eid, kind), 0)
        if is_missing_json(items):
            if taken:
                return self._reject(action, f"{kind} of {eid} already inspected: none recorded")
            reveal: dict[str, object] = {
                "item_id": f"{kind}:{eid}:missing",
                "kind": kind,
                "missing": items[MISSING_TAG],
            }
        elif taken >= len(items):
            return self._reject(
                action, f"all {len(items)} recorded {kind} item(s) of {eid} were already inspected"
            )
        else:
            reveal = copy.deepcopy(items[taken])
        return self._reveal(action, eid, kind, reveal, {"evidence": price})

    def _do_request_review(self, action: CampaignAction) -> StepResult:
        if (err := self._check_open(action)) is not None:
            return self._reject(action, err)
        eid = action["experiment_id"]
        if self.budgets["reviews"] <= 0:
            return self._reject(action, "expert-review budget is spent")
        if self.experiments[eid]["review"] is not None:
            return self._reject(action, f"{eid} was already reviewed")
        items = self._private[eid]["evidence"][REVIEW_KIND]
        if is_missing_json(items) or not items:
            reason = items[MISSING_TAG] if is_missing_json(items) else "no review recorded"
            reveal: dict[str, object] = {
                "item_id": f"{REVIEW_KIND}:{eid}:missing",
                "kind": REVIEW_KIND,
                "missing": reason,
            }
        else:
            reveal = copy.deepcopy(items[0])
        self.experiments[eid]["pre_review"] = {
            "expect_change": float(action["expect_change"]),
            "expected_tier": int(action["expected_tier"]),
        }
        return self._reveal(action, eid, REVIEW_KIND, reveal, {"reviews": 1})

    def _reveal(
        self,
        action: CampaignAction,
        eid: str,
        kind: str,
        reveal: dict[str, object],
        cost: dict[str, int],
    ) -> StepResult:
        """The only path from evaluator-private evidence into the agent-visible state."""
        for budget, amount in cost.items():
            self.budgets[budget] -= amount
        self.revealed_counts[(eid, kind)] = self.revealed_counts.get((eid, kind), 0) + 1
        if kind == REVIEW_KIND:
            self.experiments[eid]["review"] = reveal
        else:
            self.experiments[eid]["revealed"].append(reveal)
        phase = self.phase
        self.phase = "update_required"
        return self._accept(action, phase, reveal=reveal, cost=cost)

    def _do_close_experiment(self, action: CampaignAction) -> StepResult:
        if (err := self._check_open(action)) is not None:
            return self._reject(action, err)
        eid = action["experiment_id"]
        phase = self.phase
        self.experiments[eid]["claims"] = {k: float(v) for k, v in action["claims"].items()}
        self.status[eid] = "closed"
        self.closed_order.append(eid)
        self.open_id = None
        self.phase = "select"
        self.checkpoint_due = True
        return self._accept(action, phase)

    def _do_stop(self, action: CampaignAction) -> StepResult:
        phase = self.phase
        if self.open_id is not None:
            self.status[self.open_id] = "abandoned"
            self.open_id = None
        self.stopped = True
        self.phase = "done"
        return self._accept(action, phase)

    # ------------------------------------------------------------------ checkpoints
    def submit_checkpoint(
        self,
        response: object,
        t: int,
        carried_from: Mapping[str, CategoryForecast] | None,
        state_hash: str,
        recorded: Mapping[str, CategoryForecast] | None = None,
    ) -> CheckpointPayload:
        """Record a panel forecast; entries that are missing or malformed fall back (declared):
        the same query's forecast at the previous checkpoint, else uniform. `recorded`: another
        branch's already-checked checkpoint forecasts, taken verbatim (a control shares its
        adaptive branch's pre-campaign forecast exactly, not renormalised a second time)."""
        errors: list[str]
        if recorded is not None:
            forecasts, fallbacks, errors = dict(recorded), 0, []
        else:
            forecasts, fallbacks, errors = normalise_panel(
                response, self.query_ids, carried_from, self.categories
            )
        payload: CheckpointPayload = {
            "t": t,
            "state_hash": state_hash,
            "forecasts": forecasts,
            "fallbacks": fallbacks,
            "errors": errors[:5],
        }
        self.trajectory.append("checkpoint", payload)
        self.checkpoint_due = False
        self.n_checkpoints += 1
        if self.done and not self.stopped:
            self.phase = "done"
        return payload

    # ------------------------------------------------------------------ the harness's part
    def stop_by_harness(self, **why: str) -> None:
        """End the campaign from outside the agent (too many invalid actions, a cap, an agent
        that stopped answering): a `harness` event recording `why`, then no more actions."""
        self.trajectory.append("harness", dict(why))
        self.stopped = True
        self.phase = "done"

    def record_departure(self, departure: Departure) -> None:
        """A matched control that could not follow its adaptive schedule here (declared)."""
        self.trajectory.append("control", {"departure": dict(departure)})

    def end(self, reason: str | None = None) -> None:
        """The closing `end` event (reason: "stopped" or "budget" unless given)."""
        reason = reason or ("stopped" if self.stopped else "budget")
        self.trajectory.append(
            "end",
            {
                "reason": reason,
                "closed": list(self.closed_order),
                "budgets_left": dict(self.budgets),
                "invalid_actions": self.n_invalid,
            },
        )


def panel_schema(
    query_ids: list[str] | None = None,
    categories: Sequence[str] = CATEGORIES,
    table: TableDeclaration | None = None,
) -> JsonObject:
    """The JSON Schema of a panel forecast; with `query_ids`, only those experiments; `table`:
    a card table's declaration, whose words the field descriptions use."""
    experiment: JsonObject = {"type": "string"}
    if query_ids is not None:
        experiment["enum"] = list[JsonValue](query_ids)
    item: JsonObject = {
        "type": "object",
        "properties": {"experiment_id": experiment, **forecast_properties(categories, table)},
        "required": ["experiment_id", "p_valid", "categories"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"forecasts": {"type": "array", "items": item}},
        "required": ["forecasts"],
        "additionalProperties": False,
    }


def uniform(categories: Sequence[str] = CATEGORIES) -> CategoryForecast:
    """The fallback forecast: p_valid 0.5, uniform over the spec's categories."""
    return {"p_valid": 0.5, "categories": {k: 1.0 / len(categories) for k in categories}}


UNIFORM = uniform()


def normalise_panel(
    response: object,
    query_ids: list[str],
    previous: Mapping[str, CategoryForecast] | None,
    categories: Sequence[str] = CATEGORIES,
) -> tuple[dict[str, CategoryForecast], int, list[str]]:
    given: dict[str, CategoryForecast] = {}
    errors: list[str] = []
    entries = response.get("forecasts") if isinstance(response, Mapping) else None
    if not isinstance(entries, list):
        errors.append("response has no 'forecasts' list")
        entries = []
    wanted = set(query_ids)
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("experiment_id") not in wanted:
            errors.append(f"ignored entry {str(entry)[:80]}")
            continue
        p = entry.get("p_valid")
        dist, err = check_distribution(entry.get("categories"), categories)
        if (
            err
            or dist is None
            or isinstance(p, bool)
            or not isinstance(p, int | float)
            or not 0 <= p <= 1
        ):
            errors.append(f"{entry.get('experiment_id')}: {err or 'bad p_valid'}")
            continue
        given[str(entry["experiment_id"])] = {"p_valid": float(p), "categories": dist}
    out: dict[str, CategoryForecast] = {}
    fallbacks = 0
    for qid in query_ids:
        if qid in given:
            out[qid] = given[qid]
        else:
            fallbacks += 1
            out[qid] = (
                copy.copy(previous[qid]) if previous and qid in previous else uniform(categories)
            )
    return out, fallbacks, errors
