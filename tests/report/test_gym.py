"""The Gymnasium wrapper of the campaign runtime: passes gymnasium's env checker, and a policy
driven through it produces exactly the runner's trajectory."""

from __future__ import annotations

import json
import sys

import pytest

from labreplay.errors import LabreplayError


def _short(report_specs):
    return next(s for s in report_specs if s.body["assignment"]["id"] == "short-1")


def test_env_checker_passes(report_specs):
    pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    from labreplay.suites.campaign.gym import CampaignGymEnv

    check_env(CampaignGymEnv(_short(report_specs)), skip_render_check=True)
    check_env(CampaignGymEnv(_short(report_specs), reward="panel_gain"), skip_render_check=True)


def test_bayes_through_gym_matches_the_runner(report_specs):
    pytest.importorskip("gymnasium")
    from labreplay.suites.campaign.agents import BayesAgent
    from labreplay.suites.campaign.gym import CampaignGymEnv
    from labreplay.suites.campaign.runner import run_branch

    spec = _short(report_specs)
    env = CampaignGymEnv(spec, reward="panel_gain")
    agent = BayesAgent()
    agent.reset(0)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs) and info["phase"] == "checkpoint"
    total, steps, terminated, truncated = 0.0, 0, False, False
    while not (terminated or truncated):
        view = json.loads(obs)
        action = agent.forecast(view) if view.get("kind") == "panel_checkpoint" else agent.act(view)
        obs, reward, terminated, truncated, info = env.step(json.dumps(action))
        assert env.observation_space.contains(obs)
        total += reward
        steps += 1
    reference = run_branch(spec, BayesAgent(), 0, "adaptive")
    assert terminated and not truncated
    # the runner's chain also holds the run's header (seq 1), which the gym, storing no run,
    # does not record: every other event is the same
    assert [(e["kind"], e["payload"]) for e in env.trajectory_events] == [
        (e["kind"], e["payload"]) for e in reference.events if e["kind"] != "header"
    ]
    curve = reference.metrics["curve"]
    assert total == pytest.approx(curve[-1] - curve[0], abs=1e-12)
    with pytest.raises(LabreplayError, match="after the campaign ended"):
        env.step("{}")


def test_invalid_actions_are_recorded_and_truncate(report_specs):
    pytest.importorskip("gymnasium")
    from labreplay.suites.campaign.gym import CampaignGymEnv

    env = CampaignGymEnv(_short(report_specs), max_invalid_streak=3)
    env.reset(seed=1)
    env.step('{"forecasts": []}')  # t = 0 checkpoint: every query falls back, declared
    outcomes = [env.step(text) for text in ("not json", '{"type": "fly"}', "[1]")]
    assert [o[4]["accepted"] for o in outcomes] == [False, False, False]
    rejected = [e["payload"] for e in env.trajectory_events if e["kind"] == "action"]
    assert rejected[0]["action"]["error"].startswith("not JSON")
    assert "unknown action type 'fly'" in rejected[1]["reason"]
    assert outcomes[-1][3] is True and outcomes[-1][2] is False  # truncated, not terminated
    kinds = [e["kind"] for e in env.trajectory_events]
    assert kinds[-2:] == ["harness", "end"] and kinds.count("action") == 3


def test_missing_gymnasium_names_the_install(monkeypatch):
    from labreplay.suites.campaign import gym

    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(LabreplayError, match="pip install gymnasium"):
        gym._gymnasium()
