"""Reference policies for the campaign suite: random, no-evidence, Bayesian, oracle (a labelled
reference, not an upper bound).

Every agent reads only the observation it is given (the agent-visible state), except the
oracle, which is built from the evaluator record on purpose and is labelled and excluded from
leaderboards. All randomness comes from a Generator seeded in `reset`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from labreplay.sdk import make_rng
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.actions import (
    ActionReply,
    ForecastReply,
    forecast_fields,
    schema_claims,
    schema_variants_of,
)
from labreplay.suites.campaign.bayes_rules import (
    LEARN_WEIGHT,
    PIPELINE_KINDS,
    expected_panel_information,
    is_selected,
    offered_kinds,
    pipeline_availability,
)
from labreplay.suites.campaign.card_text import TableDeclaration, table_of
from labreplay.suites.campaign.events import CategoryForecast
from labreplay.suites.campaign.json_values import json_list, json_number, json_object
from labreplay.suites.campaign.learner import ContextModel, reference_model
from labreplay.suites.campaign.model import (
    classes_of,
    from_forecast,
    label_of,
    posterior,
    to_forecast,
)
from labreplay.suites.campaign.protocol import EVIDENCE_KINDS
from labreplay.suites.campaign.views import ExperimentRecord, VisibleState, panel_of, visible_state

ORACLE_NAME = "oracle"


def allowed_types(observation: Mapping[str, JsonValue]) -> list[str]:
    return list(schema_variants_of(observation))


def _context_model(state: VisibleState) -> ContextModel:
    return reference_model(state["categories"], state["context"], table_of(state))


def _base_rate_forecast(state: VisibleState) -> CategoryForecast:
    return base_rate_forecast(state["context"], state["categories"], table_of(state))


def base_rate_forecast(
    context: list[dict[str, object]] | Mapping[str, object],
    categories: Sequence[str],
    table: TableDeclaration | None = None,
) -> CategoryForecast:
    """The context's outcome rates (plus 0.5 each): from its rows, or its summary's counts.
    A card's table without a validity column (`table`) cannot record a failure: none is
    forecast."""
    counts = {k: 0.5 for k in classes_of(categories)}
    if table is not None and not table["validity"]:
        counts["physical_failure"] = 0.0
    if isinstance(context, list):
        for row in context:
            label = label_of(json_object(row["outcome"], "outcome"))
            if label:
                counts[label] += 1
    else:
        for k in counts:
            counts[k] += json_number(json_object(context["outcome_counts"]).get(k, 0))
    total = sum(counts.values())
    return to_forecast({k: v / total for k, v in counts.items()})


class _Base:
    name = "base"

    def __init__(self) -> None:
        self.rng: np.random.Generator = make_rng(0, self.name)

    def params(self) -> JsonObject:
        return {}

    def reset(self, seed: int) -> None:
        self.rng = make_rng(seed, "agent", self.name)


def _enum(observation: Mapping[str, JsonValue], name: str, field: str) -> list[str]:
    """The values an action type's field may take (its schema's `enum`)."""
    variant = schema_variants_of(observation)[name]
    return [str(v) for v in json_list(json_object(variant[field])["enum"])]


def _content(item: Mapping[str, object]) -> Mapping[str, object] | None:
    """An evidence item's `content`, when it holds one."""
    content = item.get("content")
    return content if isinstance(content, Mapping) else None


class RandomAgent(_Base):
    """The random-policy reference: samples the permitted-action schema uniformly (random
    selection among offered candidates, random evidence among offered kinds, reviews and
    closures at random; never stops early), and forecasts the context base rates everywhere."""

    name = "random"

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        state = visible_state(observation)
        allowed = [a for a in allowed_types(observation) if a != "stop"]
        open_id = state["open_experiment"]
        if not allowed:
            return {"type": "stop"}
        choice = str(self.rng.choice(allowed))
        forecast = _base_rate_forecast(state)
        if choice == "select_experiment":
            ids = _enum(observation, choice, "experiment_id")
            return {"type": choice, "experiment_id": str(self.rng.choice(ids))}
        if choice == "submit_forecast":
            return {"type": choice, "experiment_id": open_id, **forecast_fields(forecast)}
        if choice == "inspect_evidence":
            kinds = _enum(observation, choice, "kind")
            return {"type": choice, "experiment_id": open_id, "kind": str(self.rng.choice(kinds))}
        if choice == "request_review":
            return {
                "type": choice,
                "experiment_id": open_id,
                "expect_change": float(self.rng.random()),
                "expected_tier": int(self.rng.integers(1, 4)),
            }
        return {
            "type": "close_experiment",
            "experiment_id": open_id,
            "claims": {
                c: float(self.rng.random()) for c in schema_claims(observation["action_schema"])
            },
        }

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        f = _base_rate_forecast(visible_state(snapshot))
        return {
            "forecasts": [
                {"experiment_id": q["experiment_id"], **forecast_fields(f)}
                for q in panel_of(snapshot)
            ]
        }


class BayesAgent(_Base):
    """Context-trained affinity model, updated from purchased evidence; selects the candidate
    with the largest expected information for the held-out panel (proxy: predictive entropy of
    the candidate times the entropy of the queries that share a precursor with it)."""

    name = "bayes"

    def __init__(self, evidence_per_experiment: int = 3, use_evidence: bool = True) -> None:
        super().__init__()
        self.evidence_per_experiment = evidence_per_experiment
        self.use_evidence = use_evidence

    def params(self) -> JsonObject:
        return {
            "evidence_per_experiment": self.evidence_per_experiment,
            "use_evidence": self.use_evidence,
        }

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.model: ContextModel | None = None
        self.learned: set[str] = set()

    def _model(self, state: VisibleState) -> ContextModel:
        if self.model is None:
            self.model = _context_model(state)
        # Learn from every closed experiment once, weighted by the agent's final posterior.
        by_id = {c["experiment_id"]: c for c in state["candidates"]}
        for eid in state["closed"]:
            if eid in self.learned:
                continue
            self.learned.add(eid)
            record = state["experiments"][eid]
            if not record["forecasts"] or record["forecasts"][-1]["after_reveals"] == 0:
                continue  # nothing observed: adding our own prior would only echo it
            desc = by_id[eid]["descriptors"]
            self.model.learn(desc, from_forecast(record["forecasts"][-1]), LEARN_WEIGHT)
        return self.model

    def _local(self, state: VisibleState, eid: str) -> dict[str, float]:
        desc = next(c["descriptors"] for c in state["candidates"] if c["experiment_id"] == eid)
        prior = self._model(state).predict(desc)
        record = state["experiments"][eid]
        if not self.use_evidence:
            return prior
        return posterior(prior, desc, record["revealed"], record["review"])

    def _select(self, state: VisibleState) -> str:
        """The candidate with the largest expected information for the held-out panel: the
        mutual information between its outcome and the queries' outcomes under the agent's own
        model (sum over queries of E_k KL(prediction after learning k || prediction now)),
        with the same learning weight the agent uses for a closed experiment."""
        model = self._model(state)
        queries = [q["descriptors"] for q in state["held_out_queries"]]
        now = [model.predict(d) for d in queries]
        best, best_value = "", -1.0
        for c in state["candidates"]:
            if c["status"] != "available":
                continue
            value = expected_panel_information(model, c["descriptors"], queries, now, LEARN_WEIGHT)
            if value > best_value + 1e-12:
                best, best_value = c["experiment_id"], value
        return best

    def act(self, observation: Mapping[str, JsonValue]) -> ActionReply:
        state = visible_state(observation)
        allowed = allowed_types(observation)
        eid = state["open_experiment"]
        if "select_experiment" in allowed:
            return {"type": "select_experiment", "experiment_id": self._select(state)}
        if eid is None:
            return {"type": "stop"}
        record = state["experiments"][eid]
        stale = not record["forecasts"] or record["forecasts"][-1]["after_reveals"] < len(
            record["revealed"]
        ) + (1 if record["review"] else 0)
        kind = self._next_evidence(state, eid, offered_kinds(observation))
        if stale:
            preferred = "submit_forecast"
        elif kind is not None:
            preferred = "inspect_evidence"
        elif self._wants_review(state, eid):
            preferred = "request_review"
        else:
            preferred = "close_experiment"
        # A control branch may allow only one action type here: then that one is ours to fill.
        order = [preferred, "submit_forecast", "request_review", "close_experiment"]
        choice = next((t for t in order if t in allowed), "stop")
        if choice == "inspect_evidence" and kind is not None:
            return {"type": "inspect_evidence", "experiment_id": eid, "kind": kind}
        if choice == "submit_forecast":
            return {
                "type": "submit_forecast",
                "experiment_id": eid,
                **forecast_fields(to_forecast(self._local(state, eid))),
            }
        if choice == "request_review":
            local = self._local(state, eid)
            return {
                "type": "request_review",
                "experiment_id": eid,
                "expect_change": round(1.0 - max(local.values()), 6),
                "expected_tier": 1,
            }
        if choice == "close_experiment":
            return {
                "type": "close_experiment",
                "experiment_id": eid,
                "claims": self._claims(record, state.get("claims")),
            }
        return {"type": "stop"}

    def _next_evidence(self, state: VisibleState, eid: str, offered: Sequence[str]) -> str | None:
        """The next kind worth buying for the open experiment, among the offered ones.

        Declared reading of the rules and of what the agent has seen:
        - a refinement first; a second one while it is still offered and no expert-selected
          refinement was seen (the claims' support rule needs the selected one);
        - a kind a record card declares beyond the built-in ones (a measured assay), once;
        - the execution record, thermal history, XRD scan and automated refinement come from
          one pipeline run, treated as one group: once one of them came back "none recorded"
          for this experiment the others are not bought, and the group is skipped when, across
          this campaign, the run was missing in most experiments probed so far (availability
          estimate (found + 1) / (tries + 2) below 1/3)."""
        if not self.use_evidence:
            return None
        record = state["experiments"][eid]
        left = state["budgets_left"]
        experiments_left = left["experiments"] + 1
        share = min(self.evidence_per_experiment, left["evidence"] // max(experiments_left, 1) + 1)
        if len(record["revealed"]) >= share or left["evidence"] <= 0:
            return None
        refinements = [r for r in record["revealed"] if r.get("kind") == "refinement"]
        if "refinement" in offered and (
            not refinements or not any(is_selected(r) for r in refinements)
        ):
            return "refinement"
        seen = {r.get("kind") for r in record["revealed"]}
        # A kind a record card declares (e.g. a measured assay): bought once when offered.
        declared = [k for k in offered if k not in EVIDENCE_KINDS and k not in seen]
        if declared:
            return declared[0]
        if any(r.get("kind") in PIPELINE_KINDS and "missing" in r for r in record["revealed"]):
            return None
        found, tries = pipeline_availability(state)
        if (found + 1) / (tries + 2) < 1 / 3:
            return None
        for kind in ("execution_record", "automated_refinement"):
            if kind not in seen and kind in offered:
                return kind
        return None

    def _wants_review(self, state: VisibleState, eid: str) -> bool:
        if not self.use_evidence or state["budgets_left"]["reviews"] <= 0:
            return False
        record = state["experiments"][eid]
        if record["review"] is not None:
            return False
        # An expert review is of the expert-selected refinement: without having seen one,
        # a review is most likely "none recorded".
        has_selected = any(is_selected(r) for r in record["revealed"])
        return has_selected and max(self._local(state, eid).values()) < 0.75

    @staticmethod
    def _claims(
        record: ExperimentRecord, declared: list[dict[str, object]] | None = None
    ) -> dict[str, float]:
        if isinstance(declared, list):  # a record card's claims: supported by what was seen
            seen = {str(r.get("kind")) for r in record["revealed"]}
            if record.get("review"):
                seen.add("expert_review")
            return {
                str(c["name"]): 0.9
                if all(str(k) in seen for k in json_list(c["supported_by"]))
                else 0.1
                for c in declared
            }
        selected = any(
            r.get("kind") == "refinement" and bool((_content(r) or {}).get("selected"))
            for r in record["revealed"]
        )
        review = record["review"]
        content = json_object(review.get("content", {})) if isinstance(review, Mapping) else {}
        tier = content.get("final_quality_tier")
        accepted = content.get("accepted") is True
        supported = selected and accepted and tier in (1, 2)
        high = 0.9 if supported else 0.1
        quant = 0.9 if (selected and accepted and tier == 1) else 0.1
        return {
            "reaction_category": high,
            "target_presence": high,
            "phase_identity": high,
            "phase_quantification": quant,
        }

    def forecast(self, snapshot: Mapping[str, JsonValue]) -> ForecastReply:
        model = self._model(visible_state(snapshot))
        return {
            "forecasts": [
                {
                    "experiment_id": q["experiment_id"],
                    **forecast_fields(to_forecast(model.predict(q["descriptors"]))),
                }
                for q in panel_of(snapshot)
            ]
        }


class NoEvidenceAgent(BayesAgent):
    """The same model and selection rule, but never buys evidence or reviews."""

    name = "no-evidence"

    def __init__(self) -> None:
        super().__init__(evidence_per_experiment=0, use_evidence=False)


class OracleAgent(BayesAgent):
    """REFERENCE, NOT A COMPETITOR: the context-trained model told, before the campaign, the
    true recorded outcome of every candidate of its assignment (each counted as LEARN_WEIGHT
    context experiments), then run as `bayes`. It reads the evaluator record on purpose and is
    a reference row, never ranked. Its score says what the reference learner reaches knowing
    every outcome it could buy (the held-out queries stay unknown to it); it replaces an oracle
    whose score was set by a confidence parameter (ln 0.98) and said nothing about the board.
    """

    name = ORACLE_NAME

    def __init__(self, evaluator: Mapping[str, Mapping[str, object]]) -> None:
        super().__init__()
        self.evaluator = evaluator

    def params(self) -> JsonObject:
        return {
            "reference": True,  # labelled, reads outcomes; not an upper bound (issue 37)
            "told": "every candidate's recorded outcome",
            "weight": LEARN_WEIGHT,
        }

    def _model(self, state: VisibleState) -> ContextModel:
        if self.model is None:
            model = _context_model(state)
            for c in state["candidates"]:
                eid = c["experiment_id"]
                label = (
                    label_of(json_object(self.evaluator[eid]["outcome"]))
                    if eid in self.evaluator
                    else None
                )
                if label is None:
                    continue  # an unknown outcome teaches nothing
                model.learn(c["descriptors"], {label: 1.0}, LEARN_WEIGHT)
                self.learned.add(eid)  # never learned twice from its own closures
            self.model = model
        return super()._model(state)


REFERENCE_AGENTS = {"random": RandomAgent, "bayes": BayesAgent, "no-evidence": NoEvidenceAgent}
