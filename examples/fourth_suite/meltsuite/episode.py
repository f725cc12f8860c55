"""Compile, play and score meltsuite episodes. `play` never touches the store and `score` is
a pure function of the spec and the recorded predictions: the run records what `play`
returns, and `store verify` recomputes the scores with `score` from the stored events."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypedDict

from labreplay.errors import AgentError
from labreplay.sdk import make_rng
from labreplay.sdk.agents import AgentNonJSON, json_problem, plain_repr, raised_message
from labreplay.sdk.engine import AGENT_RAISED, REPLIES_INVALID, EnvironmentSpec, RunHealth
from meltsuite.contract import ELEMENTS, Element, MeltObservation, MeltPredictor, Recorded

SUITE = "melt"
PROTOCOL = "melt-forecast"
PROTOCOL_VERSION = "1"


class Prediction(TypedDict):
    """One recorded prediction event: the element, what the agent returned (its repr when
    it is not a number) and, when unusable, why."""

    id: str
    raw: float | str | None
    prediction: float | None
    invalid: str | None


def compile_specs(seed: int, n_queries: int) -> list[EnvironmentSpec]:
    """One self-contained spec: a seeded split of the table into context and held-out
    queries, with the queries' recorded values (never shown to the agent) for scoring."""
    rows: list[Recorded] = [
        {"id": s, "Z": z, "group": g, "period": p, "melting_point_k": mp}
        for s, z, g, p, mp in ELEMENTS
    ]
    order = make_rng(seed, "melt", "split").permutation(len(rows))
    held = [rows[int(i)] for i in order[:n_queries]]
    context = sorted((rows[int(i)] for i in order[n_queries:]), key=lambda r: r["Z"])
    queries: list[Element] = [
        {"id": r["id"], "Z": r["Z"], "group": r["group"], "period": r["period"]}
        for r in sorted(held, key=lambda r: r["Z"])
    ]
    body = {
        "context": context,
        "queries": queries,
        "answers": {r["id"]: r["melting_point_k"] for r in held},
        "score": "mean absolute error (K); an invalid prediction counts as the context mean",
        "split_seed": seed,
    }
    return [EnvironmentSpec(SUITE, PROTOCOL, PROTOCOL_VERSION, f"melt-s{seed}", body)]


def _observation(spec: EnvironmentSpec, query: Element) -> MeltObservation:
    context: list[Recorded] = [dict(r) for r in spec.body["context"]]  # type: ignore[misc]
    return {"query": dict(query), "context": context}  # type: ignore[typeddict-item]


def _checked(value: object) -> tuple[float | str | None, float | None, str | None]:
    """(raw as recorded, usable prediction, why not usable)."""
    problem = json_problem("predict", value)
    if problem is not None:  # never crossed a process boundary isolated: nothing to show
        return None, None, problem
    if isinstance(value, bool) or not isinstance(value, int | float):
        return plain_repr(value)[:200], None, f"predict() returned {type(value).__name__}"
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        return number if math.isfinite(number) else str(number), None, "not a positive kelvin"
    return number, number, None


def play(spec: EnvironmentSpec, agent: MeltPredictor, seed: int) -> list[Prediction]:
    """Ask `agent` for every held-out element, in order. An exception or an unusable value
    is recorded with the wording an isolated agent's child uses, so a run is stored the same
    in-process and isolated. An agent that stopped answering (AgentError) ends the play."""
    agent.reset(seed)
    out: list[Prediction] = []
    for query in spec.body["queries"]:
        try:
            raw, prediction, invalid = _checked(agent.predict(_observation(spec, query)))
        except AgentError:
            raise
        except AgentNonJSON as exc:
            raw, prediction, invalid = None, None, exc.message
        except Exception as exc:
            raw, prediction, invalid = None, None, raised_message("predict", exc)
        out.append({"id": query["id"], "raw": raw, "prediction": prediction, "invalid": invalid})
    return out


def health(predictions: Sequence[Mapping[str, object]]) -> RunHealth:
    """What the one failed-run rule reads: one policy call per prediction."""
    found = RunHealth()
    for p in predictions:
        invalid = p.get("invalid")
        cause = None
        if invalid is not None:
            cause = AGENT_RAISED if "raised" in str(invalid) else REPLIES_INVALID
        found.policy(cause, invalid)
    return found


def score(
    spec: EnvironmentSpec, predictions: Sequence[Mapping[str, object]]
) -> dict[str, float | None]:
    """Mean absolute error over the held-out elements (an invalid prediction counts as the
    context mean), and the share of invalid predictions."""
    answers: Mapping[str, float] = spec.body["answers"]
    fallback = sum(r["melting_point_k"] for r in spec.body["context"]) / len(spec.body["context"])
    errors, invalid = [], 0
    for p in predictions:
        value = p.get("prediction")
        if not isinstance(value, int | float):
            invalid += 1
            value = fallback
        errors.append(abs(float(value) - float(answers[str(p["id"])])))
    if not errors:
        return {"mae_k": None, "invalid_share": None}
    return {"mae_k": sum(errors) / len(errors), "invalid_share": invalid / len(errors)}
