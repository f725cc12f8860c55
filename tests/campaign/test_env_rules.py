"""Runtime rules of SDL-1, checked action by action on a real assignment."""

from __future__ import annotations

import json

import pytest

from labreplay._hashing import canonical_json
from labreplay.suites.campaign.actions import CLAIMS
from labreplay.suites.campaign.env import CampaignEnv

UNIFORM = {
    "p_valid": 0.8,
    "categories": {
        "completely_reacted": 0.25,
        "transformed": 0.25,
        "partially_reacted": 0.25,
        "unreacted": 0.25,
    },
}


@pytest.fixture
def env(pg_specs):
    e = CampaignEnv(pg_specs[0])
    e.reset(0)
    return e


def _forecast(eid):
    return {"type": "submit_forecast", "experiment_id": eid, **UNIFORM}


def _snapshot(env):
    return canonical_json({"state": env.visible_state(), "phase": env.phase})


def test_select_reveals_nothing_and_prior_forecast_is_required(env):
    eid = env.candidate_ids[0]
    before = json.dumps(env.visible_state()["experiments"])
    assert env.step({"type": "select_experiment", "experiment_id": eid}).accepted
    assert before == "{}"
    assert env.visible_state()["experiments"][eid]["revealed"] == []
    res = env.step({"type": "inspect_evidence", "experiment_id": eid, "kind": "refinement"})
    assert not res.accepted and "not allowed in phase 'prior_forecast'" in res.reason
    assert env.step(_forecast(eid)).accepted
    res = env.step({"type": "inspect_evidence", "experiment_id": eid, "kind": "refinement"})
    assert res.accepted and res.reveal is not None
    assert env.budgets["evidence"] == 35
    # A reveal demands an updated forecast before anything else.
    res = env.step({"type": "inspect_evidence", "experiment_id": eid, "kind": "xrd_scan"})
    assert not res.accepted and "update_required" in res.reason
    assert env.step(_forecast(eid)).accepted


def test_rejected_actions_change_nothing(env):
    eid = env.candidate_ids[0]
    bad = [
        "not an object",
        {"type": "fly"},
        {"type": "select_experiment"},
        {"type": "select_experiment", "experiment_id": "PG_9999"},
        {"type": "select_experiment", "experiment_id": eid, "extra": 1},
        {"type": "submit_forecast", "experiment_id": eid, **UNIFORM},
        {"type": "close_experiment", "experiment_id": eid, "claims": {c: 0.5 for c in CLAIMS}},
    ]
    for action in bad:
        before = _snapshot(env)
        res = env.step(action)
        assert not res.accepted and res.reason
        assert _snapshot(env) == before
    assert env.n_invalid == len(bad)
    rejected = [e for e in env.trajectory.events if e["kind"] == "action"]
    assert all(not e["payload"]["accepted"] for e in rejected)


def test_budgets_are_enforced_and_never_negative(pg_specs):
    env = CampaignEnv(pg_specs[-1])  # a short assignment: 1 review, few experiments
    env.reset(0)
    reviews = env.budgets["reviews"]
    for eid in env.candidate_ids:
        if env.done:
            break
        assert env.step({"type": "select_experiment", "experiment_id": eid}).accepted
        assert env.step(_forecast(eid)).accepted
        for kind in ("refinement", "execution_record", "xrd_scan", "thermal_history"):
            res = env.step({"type": "inspect_evidence", "experiment_id": eid, "kind": kind})
            if res.accepted:
                assert env.step(_forecast(eid)).accepted
        res = env.step(
            {
                "type": "request_review",
                "experiment_id": eid,
                "expect_change": 0.2,
                "expected_tier": 1,
            }
        )
        if res.accepted:
            reviews -= 1
            assert env.step(_forecast(eid)).accepted
        else:
            assert "review" in res.reason
        assert env.step(
            {"type": "close_experiment", "experiment_id": eid, "claims": {c: 0.5 for c in CLAIMS}}
        ).accepted
        assert all(v >= 0 for v in env.budgets.values())
        env.submit_checkpoint({"forecasts": []}, len(env.closed_order), None, "x")
    assert reviews >= 0 and env.budgets["reviews"] == reviews
    assert env.budgets["experiments"] == 0 and env.done
    res = env.step({"type": "select_experiment", "experiment_id": env.candidate_ids[-1]})
    assert not res.accepted


def test_checkpoint_must_follow_a_closure(env):
    eid = env.candidate_ids[0]
    env.step({"type": "select_experiment", "experiment_id": eid})
    env.step(_forecast(eid))
    env.step({"type": "close_experiment", "experiment_id": eid, "claims": {c: 0.1 for c in CLAIMS}})
    with pytest.raises(RuntimeError, match="checkpoint pending"):
        env.step({"type": "stop"})
    payload = env.submit_checkpoint(
        {"forecasts": [{"experiment_id": env.query_ids[0], **UNIFORM}]}, 1, None, "h"
    )
    assert payload["fallbacks"] == len(env.query_ids) - 1
    assert env.step({"type": "stop"}).accepted and env.done


def test_early_stop_carries_last_checkpoint_forward(pg_specs):
    from labreplay.suites.campaign.agents import BayesAgent
    from labreplay.suites.campaign.runner import run_branch

    class StopsAfterOne(BayesAgent):
        def act(self, observation):
            if observation["state"]["closed"]:
                return {"type": "stop"}
            return super().act(observation)

    result = run_branch(pg_specs[0], StopsAfterOne(), 0, "adaptive")
    curve = result.metrics["curve"]
    assert len(curve) == 13 and result.metrics["checkpoints"] == 2
    assert curve[1:] == [curve[1]] * 12
    assert result.metrics["stopped_early"] and result.metrics["unused_experiments"] == 11
