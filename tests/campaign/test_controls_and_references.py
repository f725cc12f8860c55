"""Matched controls follow the adaptive branch exactly (METRICS.md); the references behave."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from labreplay.suites.campaign.agents import (
    REFERENCE_AGENTS,
    BayesAgent,
    OracleAgent,
    RandomAgent,
)
from labreplay.suites.campaign.branches import random_branches
from labreplay.suites.campaign.controls import (
    CallMatchedNoEvidence,
    ScheduleMatchedRandom,
    Slot,
    extract_schedule,
    mismatch,
    random_stream,
)
from labreplay.suites.campaign.runner import run_assignment, run_assignment_branches, run_branch


def _accepted(events, kind=None):
    out = [
        e["payload"]["action"] for e in events if e["kind"] == "action" and e["payload"]["accepted"]
    ]
    return [a for a in out if kind is None or a["type"] == kind]


def _per_experiment(events, kind):
    """Accepted actions of `kind` per selected experiment, in selection order."""
    counts: list[int] = []
    for a in _accepted(events):
        if a["type"] == "select_experiment":
            counts.append(0)
        elif a["type"] == kind:
            counts[-1] += 1
    return counts


@pytest.mark.parametrize("agent", sorted(REFERENCE_AGENTS))
def test_every_control_closes_as_many_experiments_as_its_adaptive_branch(pg_specs, agent):
    # each spec by one agent, each agent on every third spec (two long, two short): every
    # spec and every agent is checked, at a third of the play time of every pair
    k = sorted(REFERENCE_AGENTS).index(agent)
    specs = pg_specs[k :: len(REFERENCE_AGENTS)]
    assert {s.body["assignment"]["kind"] for s in specs} == {"long", "short"}
    for spec in specs:
        results = run_assignment_branches(spec, REFERENCE_AGENTS[agent], None, 0)
        adaptive, rnd, ne = (results[b] for b in ("adaptive", "random", "no-evidence"))
        closed = adaptive.metrics["experiments_closed"]
        assert rnd.metrics["experiments_closed"] == closed, spec.spec_id
        assert ne.metrics["experiments_closed"] == closed, spec.spec_id
        t0 = [next(e for e in b.events if e["kind"] == "checkpoint") for b in results.values()]
        # The pre-campaign forecast is shared exactly (bit for bit), not renormalised again.
        assert all(c["payload"]["forecasts"] == t0[0]["payload"]["forecasts"] for c in t0)
        for branch in results.values():
            assert branch.metrics["checkpoints"] == closed + 1
            assert branch.metrics["invalid_actions"] == 0
        # no-evidence: the adaptive selections in order, the same number of policy-action
        # calls (SDL-1) per experiment and in all -- each purchase or review became one
        # forecast revision with nothing revealed -- the same checkpoints, and nothing bought.
        chosen = [a["experiment_id"] for a in _accepted(adaptive.events, "select_experiment")]
        assert [a["experiment_id"] for a in _accepted(ne.events, "select_experiment")] == chosen
        adaptive_calls = [
            sum(c)
            for c in zip(
                *(
                    _per_experiment(adaptive.events, k)
                    for k in ("submit_forecast", "inspect_evidence", "request_review")
                ),
                strict=True,
            )
        ]
        assert _per_experiment(ne.events, "submit_forecast") == adaptive_calls
        for key in ("policy_calls", "forecast_calls"):
            assert ne.metrics[key] == adaptive.metrics[key], (spec.spec_id, key)
        assert ne.metrics["local_forecasts"] == (
            adaptive.metrics["local_forecasts"] + adaptive.metrics["evidence_actions"]
        )
        assert not _accepted(ne.events, "inspect_evidence")
        assert not _accepted(ne.events, "request_review")
        # random: the same evidence/review schedule unless a departure was declared.
        a_slots, _ = extract_schedule(adaptive.events)
        r_slots, _ = extract_schedule(rnd.events)
        departures = [e for e in rnd.events if e["kind"] == "control"]
        assert rnd.metrics["control_departures"] == len(departures)
        if not departures:
            strip = [[op for op in s.ops if op[0] != "forecast"] for s in a_slots]
            assert [[op for op in s.ops if op[0] != "forecast"] for s in r_slots] == strip
        assert [s.closed for s in r_slots] == [s.closed for s in a_slots]


def test_random_policy_makes_no_invalid_actions(pg_specs):
    for spec in pg_specs:
        for seed in (0, 1):
            m = run_branch(spec, RandomAgent(), seed, "adaptive").metrics
            assert m["invalid_actions"] == 0, spec.spec_id
            assert m["actions"] > 0


def test_unsupportable_schedule_is_a_declared_departure(pg_specs):
    spec = pg_specs[0]
    ids = [c["experiment_id"] for c in spec.body["candidates"]]
    # No candidate holds ten refinements: every selection departs, and the extra inspections
    # are skipped and recorded, never silently replaced.
    ops = [("forecast", None), *[("inspect", "refinement")] * 10]
    slots = [Slot(ids[0], [*ops], closed=True), Slot(ids[1], [("forecast", None)], closed=True)]
    wrapper = ScheduleMatchedRandom(BayesAgent(), slots, False, spec.body["evaluator"], 0)
    result = run_branch(spec, wrapper, 0, "random")
    departures = [e["payload"]["departure"] for e in result.events if e["kind"] == "control"]
    assert any("no_candidate_supports" in d for d in departures)
    assert any(d.get("skipped") == "inspect refinement" for d in departures)
    assert result.metrics["control_departures"] == len(departures)
    assert result.metrics["experiments_closed"] == 2
    assert result.metrics["invalid_actions"] == 0


def test_no_evidence_replays_an_abandoned_experiment(pg_specs):
    spec = pg_specs[3]
    ids = [c["experiment_id"] for c in spec.body["candidates"]]
    slots = [
        Slot(ids[4], [("forecast", None), ("inspect", "refinement"), ("forecast", None)], True),
        Slot(ids[2], [("forecast", None)], closed=False),  # the adaptive branch stopped here
    ]
    result = run_branch(spec, CallMatchedNoEvidence(BayesAgent(), slots), 0, "no-evidence")
    assert [a["experiment_id"] for a in _accepted(result.events, "select_experiment")] == [
        ids[4],
        ids[2],
    ]
    # the inspection became a third, evidence-free forecast call
    assert _per_experiment(result.events, "submit_forecast") == [3, 1]
    assert result.metrics["experiments_closed"] == 1
    assert result.metrics["stopped_early"]


def test_bayes_reference_beats_random_on_held_out_curve(pg_specs):
    long = [s for s in pg_specs if s.body["assignment"]["kind"] == "long"]
    bayes = [run_assignment(s, BayesAgent, None, 0, controls=()) for s in long]  # adaptive only
    rand = [run_branch(s, RandomAgent(), 0, "adaptive").metrics for s in long]
    bayes_auc = np.mean([r["adaptive_auc"] for r in bayes])
    random_auc = np.mean([m["adaptive_auc"] for m in rand])
    assert bayes_auc > random_auc + 0.05
    # Evidence moves its held-out forecasts (they are not frozen at the prior).
    assert any(abs(r["held_out_gain"]) > 1e-6 for r in bayes)


def test_oracle_is_the_context_model_told_every_candidate_outcome(pg_specs):
    from labreplay.suites.campaign.bayes_rules import LEARN_WEIGHT
    from labreplay.suites.campaign.ceiling import context_score, gain_with_outcomes

    spec = pg_specs[0]
    oracle = run_branch(spec, OracleAgent(spec.body["evaluator"]), 0, "adaptive").metrics
    every = [c["experiment_id"] for c in spec.body["candidates"]]
    told = context_score(spec.body) + gain_with_outcomes(spec.body, every, LEARN_WEIGHT)
    # Its pre-campaign forecast is exactly that model's: informative, not a parameter.
    assert oracle["curve"][0] == pytest.approx(told, abs=1e-12)
    assert oracle["curve"][0] != pytest.approx(math.log(0.98), abs=1e-3)


def test_review_and_local_measures_follow_the_trajectory(pg_specs):
    result = run_branch(pg_specs[0], BayesAgent(), 0, "adaptive")
    reviews = _accepted(result.events, "request_review")
    m = result.metrics
    assert m["reviews"] == len(reviews) <= pg_specs[0].body["budgets"]["reviews"]
    if reviews:
        assert 0.0 <= m["review_tier_accuracy"] <= 1.0
        assert m["review_change_log_loss"] > 0
    assert m["local_gain_count"] + m["local_gain_missing"] <= m["experiments_closed"]
    assert m["local_improved"] + m["local_worsened"] <= m["local_gain_count"]


class Garbled(BayesAgent):
    """Chooses its own actions like `bayes` but writes every forecast and claim malformed."""

    name = "garbled"

    def act(self, observation):
        action = super().act(observation)
        if action.get("type") in ("submit_forecast", "close_experiment", "request_review"):
            return {**action, "p_valid": 7} if "p_valid" in action else {**action, "claims": {}}
        return action


def test_controls_keep_their_closures_when_the_agent_fails(pg_specs):
    spec = pg_specs[0]
    adaptive = run_branch(spec, BayesAgent(), 0, "adaptive")
    slots, stopped = extract_schedule(adaptive.events)
    closed = adaptive.metrics["experiments_closed"]
    for wrapper in (
        ScheduleMatchedRandom(Garbled(), slots, stopped, spec.body["evaluator"], 0),
        CallMatchedNoEvidence(Garbled(), slots),
    ):
        result = run_branch(spec, wrapper, 0, "control")
        assert result.metrics["experiments_closed"] == closed
        departures = [e["payload"]["departure"] for e in result.events if e["kind"] == "control"]
        assert departures and all("substituted" in d for d in departures)
        assert result.metrics["invalid_actions"] > 0  # the agent's failures stay recorded


def test_unknown_control_is_refused_by_name(pg_specs):
    from labreplay.errors import SpecError

    with pytest.raises(SpecError, match="placebo"):
        run_assignment_branches(pg_specs[0], BayesAgent, None, 0, ("random", "placebo"))


def test_random_replicates_draw_from_their_own_stream_per_assignment(pg_specs):
    """Issue 37: one stream per replicate for every assignment put the first pick on the same
    sorted candidate position in 20 of 30 assignments. Each (assignment, replicate) now has
    its own stream, derived from the run seed, the spec id and the replicate index."""
    specs = [s for s in pg_specs if s.body["assignment"]["kind"] == "long"][:2]
    branches = random_branches(3)
    for spec in specs:
        results = run_assignment_branches(spec, BayesAgent, None, 0, branches)
        slots, _ = extract_schedule(results["adaptive"].events)
        ids = sorted(c["experiment_id"] for c in spec.body["candidates"])
        off = {i: mismatch(spec.body["evaluator"][i], slots[0]) for i in ids}
        fitting = [i for i in ids if off[i] == min(off.values())]
        for k, branch in enumerate(branches, 1):
            first = _accepted(results[branch].events, "select_experiment")[0]["experiment_id"]
            assert first == str(random_stream(0, spec.spec_id, k).choice(fitting))
    keys = [
        (a, k) for a in ("p/seed0/long-1", "p/seed1/long-1", "p/seed0/long-2") for k in (1, 2, 3)
    ]
    draws = {key: tuple(random_stream(0, *key).integers(0, 2**31, 4)) for key in keys}
    assert len(set(draws.values())) == len(keys)
    # the recorded run seed still moves every stream
    assert tuple(random_stream(1, *keys[0]).integers(0, 2**31, 4)) != draws[keys[0]]


class Clumsy(BayesAgent):
    """An agent that makes one invalid action per experiment (an out-of-range first forecast),
    in its adaptive branch and in its controls alike."""

    name = "clumsy"

    def reset(self, seed):
        super().reset(seed)
        self.erred: set[str] = set()

    def act(self, observation):
        action = super().act(observation)
        eid = observation["state"].get("open_experiment")
        if action.get("type") == "submit_forecast" and eid and eid not in self.erred:
            self.erred.add(eid)
            return {**action, "p_valid": 7}
        return action


def test_no_evidence_matches_policy_calls_when_the_agent_makes_invalid_actions(pg_specs):
    """Issue 37: each rejected action of the adaptive branch is a policy call the no-evidence
    control mirrors with one revision call, so the calls match for any behaviour."""
    spec = pg_specs[0]
    results = run_assignment_branches(spec, Clumsy, None, 0, ("no-evidence",))
    adaptive, ne = results["adaptive"].metrics, results["no-evidence"].metrics
    assert adaptive["invalid_actions"] == adaptive["experiments_closed"] > 0
    assert ne["policy_calls"] == adaptive["policy_calls"]
    assert ne["forecast_calls"] == adaptive["forecast_calls"]
    assert ne["experiments_closed"] == adaptive["experiments_closed"]
    slots, _ = extract_schedule(results["adaptive"].events)
    assert sum(s.rejected for s in slots) == adaptive["invalid_actions"]


def _docs_template() -> type:
    """The docs' phase-based agent template (`FirstCandidate`, docs/agents/bring-your-own.md)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs/agents/bring-your-own.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "FirstCandidate" in b)
    scope: dict[str, object] = {}
    exec(block, scope)
    template = scope["FirstCandidate"]
    assert isinstance(template, type)
    return template


class Inspector(_docs_template()):  # type: ignore[misc]
    """The docs' template, buying one evidence item per experiment before it closes."""

    name = "inspector"

    def reset(self, seed):
        self.inspected: set[str] = set()

    def act(self, observation):
        offered = {
            v["properties"]["type"]["const"]: v["properties"]
            for v in observation["action_schema"]["oneOf"]
        }
        open_id = observation["state"]["open_experiment"]
        if "inspect_evidence" in offered and open_id not in self.inspected:
            self.inspected.add(open_id)
            kind = offered["inspect_evidence"]["kind"]["enum"][0]
            return {"type": "inspect_evidence", "experiment_id": open_id, "kind": kind}
        return super().act(observation)


class ClumsyCloser(_docs_template()):  # type: ignore[misc]
    """The docs' template with one invalid closure (no claims) per experiment before the
    valid one."""

    name = "clumsy-closer"

    def reset(self, seed):
        self.erred: set[str] = set()

    def act(self, observation):
        action = super().act(observation)
        eid = action.get("experiment_id")
        if action["type"] == "close_experiment" and eid not in self.erred:
            self.erred.add(eid)
            return {**action, "claims": {}}
        return action


def test_a_docs_template_agent_makes_no_invalid_action_in_the_no_evidence_control(pg_specs):
    """Issue 49: the no-evidence control asked its revision calls in phase `investigate`, and
    an agent written from the docs' phase-based template answered each with an invalid stop."""
    spec = next(s for s in pg_specs if s.body["assignment"]["kind"] == "short")
    results = run_assignment_branches(spec, Inspector, None, 0, ("no-evidence",))
    adaptive, ne = results["adaptive"].metrics, results["no-evidence"].metrics
    assert adaptive["evidence_actions"] == adaptive["experiments_closed"] > 0
    assert adaptive["invalid_actions"] == ne["invalid_actions"] == 0
    assert ne["policy_calls"] == adaptive["policy_calls"]
    assert ne["local_forecasts"] == adaptive["local_forecasts"] + adaptive["evidence_actions"]


def test_policy_calls_match_when_the_control_itself_makes_invalid_actions(pg_specs):
    """Issue 49: a rejected closure in the no-evidence branch was one call more than the
    adaptive branch made (59 vs 62); the branch's own rejected actions now spend the calls it
    owes, and the row enters the board."""
    from labreplay.suites.campaign.board_rows import entry_problems

    spec = next(s for s in pg_specs if s.body["assignment"]["kind"] == "short")
    results = run_assignment_branches(spec, ClumsyCloser, None, 0, ("no-evidence",))
    adaptive, ne = results["adaptive"].metrics, results["no-evidence"].metrics
    assert adaptive["invalid_actions"] == ne["invalid_actions"] == adaptive["experiments_closed"]
    assert ne["policy_calls"] == adaptive["policy_calls"]
    assert ne["experiments_closed"] == adaptive["experiments_closed"]
    branches: Any = {
        b: {"status": "complete", "scores": {"policy_calls": r.metrics["policy_calls"]}}
        for b, r in results.items()
    }
    branches["random"] = branches["adaptive"]
    assert entry_problems(branches) == []


def test_every_branchs_invalid_actions_are_on_the_terminal_board(pg_specs, tmp_path):
    """Issue 49: only `leaderboard --json` had the controls' invalid actions."""
    import re

    from rich.console import Console

    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.board_text import print_board
    from labreplay.suites.campaign.leaderboard import leaderboard

    spec = next(s for s in pg_specs if s.body["assignment"]["kind"] == "short")
    with Store(tmp_path / "runs.sqlite") as store:
        run_assignment(spec, ClumsyCloser, store, 0, ("random", "random-2", "no-evidence"))
        board = leaderboard(store)
    (row,) = board["tables"]["short"]["rows"]  # ranked: the calls matched
    closed = row["branches"]["adaptive"]["experiments_closed"]
    invalid = {b: v["invalid_actions"] for b, v in row["branches"].items()}
    assert invalid == {"adaptive": closed, "no-evidence": closed, "random": 2 * closed}
    console = Console(record=True, width=300)
    print_board(console, board, ("short",))
    text = " ".join(console.export_text().split())
    for name, count in invalid.items():
        assert re.search(rf"{name} runs \d+: closed [^;,]*invalid actions {count}\b", text), name


class Surveyor(Inspector):
    """The docs' template (first offered candidate), buying every offered evidence kind once
    per experiment."""

    name = "surveyor"

    def act(self, observation):
        offered = {
            v["properties"]["type"]["const"]: v["properties"]
            for v in observation["action_schema"]["oneOf"]
        }
        open_id = observation["state"]["open_experiment"]
        kinds = offered.get("inspect_evidence", {}).get("kind", {}).get("enum", [])
        fresh = [k for k in kinds if (open_id, k) not in self.inspected]
        if observation["phase"] == "investigate" and fresh:
            self.inspected.add((open_id, fresh[0]))
            return {"type": "inspect_evidence", "experiment_id": open_id, "kind": fresh[0]}
        self.inspected.add(open_id)  # the template's own step follows
        return super().act(observation)


def test_the_random_control_sees_as_many_recorded_items_as_its_adaptive_branch(pg_specs):
    """Issue 49: the random control was matched on recorded items one way only (a real item
    where the adaptive branch got "none recorded"): 0.52 vs 1.63 recorded items per run for a
    first-offered agent. Matched both ways, they agree within 5%, and exactly per experiment
    wherever no departure was declared."""
    recorded = {"adaptive": 0, "random": 0}
    runs = {"adaptive": 0, "random": 0}
    for spec in [s for s in pg_specs if s.body["assignment"]["kind"] == "long"][:3]:
        results = run_assignment_branches(spec, Surveyor, None, 0, random_branches(3))
        a_slots, _ = extract_schedule(results["adaptive"].events)
        for name, result in results.items():
            slots, _ = extract_schedule(result.events)
            group = "adaptive" if name == "adaptive" else "random"
            recorded[group] += sum(sum(s.recorded.values()) for s in slots)
            runs[group] += 1
            departed = {
                e["payload"]["departure"]["slot"] for e in result.events if e["kind"] == "control"
            }
            for k, (mine, theirs) in enumerate(zip(slots, a_slots, strict=True)):
                assert k in departed or mine.recorded == theirs.recorded, (spec.spec_id, k)
    per_run = {g: recorded[g] / runs[g] for g in recorded}
    assert per_run["adaptive"] > 0
    assert abs(per_run["random"] / per_run["adaptive"] - 1) <= 0.05, per_run
