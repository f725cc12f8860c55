"""Property tests: random and malformed actions never corrupt state, never make a budget
negative, never leak a private field. Canary strings are planted in every private field; every
observation and checkpoint snapshot is scanned after every step."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labreplay._hashing import canonical_json
from labreplay.suites.campaign.actions import CLAIMS
from labreplay.suites.campaign.canaries import leaked, plant_canaries
from labreplay.suites.campaign.env import CampaignEnv
from labreplay.suites.campaign.protocol import EVIDENCE_KINDS


@pytest.fixture(scope="module")
def canary_specs(pg_specs):
    # one long and one short assignment
    return [plant_canaries(pg_specs[0]), plant_canaries(pg_specs[6])]


def _ids(env: CampaignEnv) -> st.SearchStrategy[str]:
    return st.sampled_from([*env.candidate_ids, *env.query_ids, "PG_0000", "", "x" * 50])


_prob = st.one_of(
    st.floats(min_value=0, max_value=1),
    st.floats(allow_nan=True),
    st.integers(-2, 2),
    st.just("0.5"),
    st.none(),
    st.booleans(),
)


def _categories() -> st.SearchStrategy[object]:
    keys = ["completely_reacted", "transformed", "partially_reacted", "unreacted"]
    good = st.builds(
        lambda a, b, c: {keys[0]: a, keys[1]: b, keys[2]: c, keys[3]: max(0.0, 1 - a - b - c)},
        *(st.floats(0, 0.33) for _ in range(3)),
    )
    return st.one_of(
        good,
        st.dictionaries(st.sampled_from([*keys, "other"]), _prob),
        st.lists(st.floats()),
        st.none(),
    )


def actions(env: CampaignEnv) -> st.SearchStrategy[object]:
    ids = _ids(env)
    return st.one_of(
        st.builds(lambda i: {"type": "select_experiment", "experiment_id": i}, ids),
        st.builds(
            lambda i, p, c: {
                "type": "submit_forecast",
                "experiment_id": i,
                "p_valid": p,
                "categories": c,
            },
            ids,
            _prob,
            _categories(),
        ),
        st.builds(
            lambda i, k: {"type": "inspect_evidence", "experiment_id": i, "kind": k},
            ids,
            st.sampled_from([*EVIDENCE_KINDS, "expert_review", "outcome"]),
        ),
        st.builds(
            lambda i, p, t: {
                "type": "request_review",
                "experiment_id": i,
                "expect_change": p,
                "expected_tier": t,
            },
            ids,
            _prob,
            st.sampled_from([1, 2, 3, 0, 4, "1", True]),
        ),
        st.builds(
            lambda i, p: {
                "type": "close_experiment",
                "experiment_id": i,
                "claims": {c: p for c in CLAIMS},
            },
            ids,
            _prob,
        ),
        st.just({"type": "stop"}),
        st.dictionaries(st.text(max_size=8), st.one_of(st.text(max_size=8), st.integers())),
        st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers())),
    )


def _scan(text: str, allowed: set[str]) -> None:
    found = leaked(text, allowed)
    assert not found, f"private data leaked: {sorted(found)[:3]}"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), which=st.integers(0, 1))
def test_random_actions_keep_invariants_and_firewall(canary_specs, data, which):
    spec, item_canary = canary_specs[which]
    env = CampaignEnv(spec)
    env.reset(0)
    allowed: set[str] = set()
    strategy = actions(env)
    for _ in range(60):
        if env.done:
            break
        before = canonical_json({"s": env.visible_state(), "p": env.phase})
        budgets_before = dict(env.budgets)
        result = env.step(data.draw(strategy))
        if result.accepted and result.reveal is not None:
            tag = item_canary.get(result.reveal["item_id"])
            if tag:
                allowed.add(tag)
        if not result.accepted:
            assert canonical_json({"s": env.visible_state(), "p": env.phase}) == before
            assert env.budgets == budgets_before
        assert all(v >= 0 for v in env.budgets.values())
        _scan(canonical_json(env.observation()), allowed)
        if result.checkpoint_due:
            snapshot = env.checkpoint_snapshot()
            _scan(canonical_json(snapshot), allowed)
            env.submit_checkpoint(
                data.draw(st.one_of(st.none(), st.just({"forecasts": []}))),
                len(env.closed_order),
                None,
                snapshot["state_hash"],
            )
    for event in env.trajectory.events:  # the trajectory never stores an unrevealed private field
        _scan(canonical_json(event["payload"]), allowed)
    assert not any(math.isnan(v) for v in env.budgets.values())


def test_every_reference_agent_sees_only_what_it_paid_for(canary_specs):
    from labreplay.suites.campaign.agents import BayesAgent, NoEvidenceAgent, RandomAgent
    from labreplay.suites.campaign.runner import run_branch

    spec, item_canary = canary_specs[0]
    for agent in (BayesAgent(), RandomAgent(), NoEvidenceAgent()):
        seen: list[str] = []
        original_act, original_forecast = agent.act, agent.forecast

        def act(obs, _orig=original_act, _seen=seen):
            _seen.append(canonical_json(obs))
            return _orig(obs)

        def forecast(snap, _orig=original_forecast, _seen=seen):
            _seen.append(canonical_json(snap))
            return _orig(snap)

        agent.act, agent.forecast = act, forecast  # type: ignore[method-assign]
        result = run_branch(spec, agent, 3, "adaptive")
        paid = {
            item_canary[e["payload"]["revealed_item"]]
            for e in result.events
            if e["kind"] == "action" and e["payload"].get("revealed_item") in item_canary
        }
        for text in seen:
            _scan(text, paid)
        assert not any("CANARY-OUTCOME" in t for t in seen)
