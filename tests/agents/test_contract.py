"""The agent contract, applied to every campaign agent that runs without a model server.

Every agent: returns JSON objects for every phase that satisfy the phase's published schema (the
random agent is allowed rejections, which must be recorded, never crash); sees no private
field (canary scan of everything it is shown); is deterministic given the seed; copes with a
spent budget, a rejected action and an early stop. The LLM agent is held to the same contract
in tests/agents/test_llm_e2e.py against a real local model server.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from labreplay._hashing import canonical_json
from labreplay.compile.spec import EnvironmentSpec
from labreplay.suites.campaign.agents import BayesAgent, NoEvidenceAgent, OracleAgent, RandomAgent
from labreplay.suites.campaign.canaries import leaked, paid_canaries, plant_canaries
from labreplay.suites.campaign.env import CampaignEnv
from labreplay.suites.campaign.replay_agent import ReplayAgent
from labreplay.suites.campaign.runner import run_branch


@pytest.fixture(scope="module")
def specs(compiled_campaign: Callable[..., Any]) -> list[EnvironmentSpec]:
    assert os.environ.get("LABREPLAY_DATA_DIR"), "LABREPLAY_DATA_DIR must point at the shared data"
    _, compiled, _ = compiled_campaign(record="precursor-genome", seed=0)
    return [compiled[0], compiled[6]]  # one long, one short assignment


AGENTS: dict[str, Callable[[EnvironmentSpec], Any]] = {
    "random": lambda spec: RandomAgent(),
    "bayes": lambda spec: BayesAgent(),
    "no-evidence": lambda spec: NoEvidenceAgent(),
    "oracle": lambda spec: OracleAgent(spec.body["evaluator"]),
}


class Recorder:
    """Wraps an agent: validates every answer against the schema it was given and keeps the
    text of everything the agent saw."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, inner.name
        self.seen: list[str] = []
        self.schema_failures: list[str] = []

    def params(self) -> dict[str, Any]:
        return dict(self.inner.params())

    def reset(self, seed: int) -> None:
        self.inner.reset(seed)

    def act(self, observation: Any) -> dict[str, Any]:
        self.seen.append(canonical_json(observation))
        action = self.inner.act(observation)
        assert isinstance(action, dict)
        try:
            jsonschema.validate(action, observation["action_schema"])
        except jsonschema.ValidationError as exc:
            self.schema_failures.append(exc.message)
        return action

    def forecast(self, snapshot: Any) -> dict[str, Any]:
        self.seen.append(canonical_json(snapshot))
        answer = self.inner.forecast(snapshot)
        jsonschema.validate(answer, snapshot["response_schema"])
        return dict(answer)


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_schema_firewall_and_determinism(specs, name):
    for spec in specs:
        planted, by_item = plant_canaries(spec)
        heads = []
        for _ in range(2):
            agent = Recorder(AGENTS[name](planted))
            result = run_branch(planted, agent, 11, "adaptive")
            heads.append(result.head_hash)
            phases = {e["payload"]["phase"] for e in result.events if e["kind"] == "action"}
            assert {"select", "prior_forecast", "investigate"} <= phases or name == "random"
            if name != "random":
                assert agent.schema_failures == [], agent.schema_failures[:3]
                assert result.metrics["invalid_actions"] == 0
            else:  # rejections are data: recorded, counted, never a crash
                assert result.metrics["invalid_actions"] == result.metrics["actions"] - sum(
                    1 for e in result.events if e["kind"] == "action" and e["payload"]["accepted"]
                )
            paid = paid_canaries(result.events, by_item)
            for text in agent.seen:
                found = leaked(text, paid)
                assert not found, f"{name} was shown {sorted(found)[:2]} without paying for it"
            assert result.metrics["checkpoints"] == result.metrics["experiments_closed"] + 1
        assert heads[0] == heads[1], f"{name} is not deterministic given the seed"


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_spent_budget_rejection_and_early_stop(specs, name):
    spec = specs[1]  # short assignment: 1 review, 11-12 evidence units
    agent = AGENTS[name](spec)
    agent.reset(0)
    env = CampaignEnv(spec)
    env.reset(0)
    env.budgets["evidence"] = 0  # a spent evidence budget from the start
    env.budgets["reviews"] = 0
    rejected = env.step({"type": "select_experiment", "experiment_id": "not-a-candidate"})
    assert not rejected.accepted
    steps = 0
    while not env.done and steps < 200:
        steps += 1
        result = env.step(agent.act(env.observation()))
        if result.checkpoint_due:
            snap = env.checkpoint_snapshot()
            env.submit_checkpoint(
                agent.forecast(snap), len(env.closed_order), None, snap["state_hash"]
            )
        if len(env.closed_order) == 1 and not env.done and env.phase == "select":
            assert env.step({"type": "stop"}).accepted  # early stop mid-campaign
    assert env.done and steps < 200
    assert env.budgets["evidence"] == 0 and env.budgets["reviews"] == 0
    revealed = [
        e
        for e in env.trajectory.events
        if e["kind"] == "action" and e["payload"].get("revealed_item")
    ]
    assert revealed == []


def test_replay_reproduces_a_stored_trajectory(specs, tmp_path: Path):
    from labreplay.store.sqlite import Store

    spec = specs[0]
    with Store(tmp_path / "s.sqlite") as store:
        original = run_branch(spec, RandomAgent(), 4, "adaptive", store)
        events = store.events(original.run_id)
    replay = run_branch(spec, ReplayAgent(events, original.run_id), 4, "adaptive")
    # every event but the header (seq 1: it names the replay agent) is reproduced
    assert replay.events[1]["payload"]["agent"] == "replay"
    assert [(e["kind"], e["payload"]) for e in replay.events if e["kind"] != "header"] == [
        (e["kind"], e["payload"]) for e in original.events if e["kind"] != "header"
    ]
    assert replay.metrics == original.metrics
