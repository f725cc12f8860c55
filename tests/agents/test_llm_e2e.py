"""End to end through a real model: SmolLM2-135M-Instruct served by llama.cpp's OpenAI-compatible
server (scripts/llm_server.sh), on real compiled campaigns and real conditions questions.

The model is tiny: these tests check the plumbing (trajectories complete, every call recorded
with its token counts, invalid actions recorded and scored, nothing private in any prompt,
resume from the response cache), never the quality of its chemistry. Every request goes
through a recording proxy so the canary scan covers exactly what the model was sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec
from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.canaries import leaked, paid_canaries, plant_canaries
from labreplay.suites.campaign.llm_agent import LLMCampaignAgent, make_agent
from labreplay.suites.conditions.llm_agent import LLMQuestionAgent, make_question_agent

pytestmark = [pytest.mark.llm, pytest.mark.slow]
LLM_MODEL = "smollm2"  # the alias scripts/llm_server.sh serves


@pytest.fixture(scope="module")
def small_campaign(
    small_llm_assignment: EnvironmentSpec,
) -> tuple[EnvironmentSpec, dict[str, str]]:
    """A short real Precursor Genome assignment with small budgets, canaries planted."""
    return plant_canaries(small_llm_assignment)


def _campaign_agent(url: str, store: Store, **options: Any) -> LLMCampaignAgent:
    agent = make_agent(f"openai:{LLM_MODEL}", base_url=url, store=store, **options)
    assert isinstance(agent, LLMCampaignAgent)
    return agent


def _chat_bodies(proxy: Any) -> list[dict[str, Any]]:
    return [b for b in proxy.bodies if "messages" in b]


def _format(body: dict[str, Any]) -> str | None:
    fmt = body.get("response_format")
    return fmt.get("type") if isinstance(fmt, dict) else None


def _assert_no_leak(bodies: list[dict[str, Any]], allowed: set[str]) -> None:
    assert bodies, "no request reached the model"
    for body in bodies:
        found = leaked(json.dumps(body), allowed)
        assert not found, f"private data sent to the model: {sorted(found)[:3]}"


def test_unusable_replies_are_recorded_as_invalid_and_resume_from_cache(
    small_campaign: tuple[EnvironmentSpec, dict[str, str]],
    recording_proxy: tuple[str, Any],
    tmp_path: Path,
) -> None:
    """A 3-token limit cuts every reply off: each action is invalid, the checkpoint falls back,
    and the harness stops the campaign. Rerunning from the store repeats no model call.
    (Runs first: the next test's opening prompts share this one's long prefix, which the
    server has then already evaluated.)"""
    from labreplay.suites.campaign.runner import run_branch

    spec, by_item = small_campaign
    url, proxy = recording_proxy
    n_queries = len(spec.body["queries"])
    with Store(tmp_path / "results.sqlite") as store:
        # a long timeout: the first prompt (~2k tokens, evaluated in full) took 188 s on a
        # loaded 2-core machine, and a cut request is a failed call, not the cut-off reply
        agent = _campaign_agent(url, store, max_tokens=3, max_repairs=0, timeout_s=300)
        first = run_branch(spec, agent, 5, "adaptive", store, max_invalid_streak=2)
        sent_first = len(proxy.bodies)
        calls = store.llm_calls(first.run_id)
        scores = store.scores(first.run_id)

        rejected = [e for e in first.events if e["kind"] == "action"]
        assert len(rejected) == 2 and not any(e["payload"]["accepted"] for e in rejected)
        for event in rejected:
            action = event["payload"]["action"]
            assert action["type"] == "invalid" and "cut off" in action["error"]
            assert event["payload"]["reason"] == action["error"]
        assert any(e["kind"] == "harness" for e in first.events)
        checkpoint = next(e for e in first.events if e["kind"] == "checkpoint")
        assert checkpoint["payload"]["fallbacks"] == n_queries
        assert scores["invalid_actions"] == 2
        assert [c["finish_reason"] for c in calls] == ["length"] * 3
        assert all(c["completion_tokens"] == 3 for c in calls)

        # A resumed run: same agent (its parameters are bound into the chain's header), same
        # work, answered from the response cache, same trajectory.
        store.reset_run(first.run_id)
        again = run_branch(
            spec,
            _campaign_agent(url, store, max_tokens=3, max_repairs=0, timeout_s=300),
            5,
            "adaptive",
            store,
            max_invalid_streak=2,
        )
        assert len(proxy.bodies) == sent_first
        assert again.head_hash == first.head_hash
        assert len(store.llm_calls(again.run_id)) == 3
    _assert_no_leak(proxy.bodies, paid_canaries(first.events, by_item))


def test_short_campaign_through_a_real_model(
    small_campaign: tuple[EnvironmentSpec, dict[str, str]],
    recording_proxy: tuple[str, Any],
    tmp_path: Path,
) -> None:
    from labreplay.suites.campaign.runner import run_branch

    spec, by_item = small_campaign
    url, proxy = recording_proxy
    with Store(tmp_path / "results.sqlite") as store:
        agent = _campaign_agent(url, store, max_tokens=160, max_repairs=1, timeout_s=300)
        result = run_branch(spec, agent, 11, "adaptive", store, max_invalid_streak=3)
        stored_events = store.events(result.run_id)
        calls = store.llm_calls(result.run_id)
        scores = store.scores(result.run_id)
        run = store.run(result.run_id)

    # The trajectory is complete, hash-chained and stored as returned.
    events = result.events
    assert events[0]["kind"] == "reset" and events[-1]["kind"] == "end"
    assert Trajectory.verify(stored_events, spec.spec_hash) == result.head_hash
    assert run.agent == f"openai:{LLM_MODEL}"
    # SmolLM2-135M is weak: when most of its replies are unusable the one failed-run rule
    # (docs/metrics.md) marks the run failed, with the cause named. The plumbing below holds
    # either way; the status must be what the rule gives for the recorded counts.
    summary = run.summary or {}
    failures = sum(summary["policy_failures"].values())
    rule_fails = failures > summary["policy_calls"] / 2 or (
        summary["checkpoint_failures"] > summary["checkpoints"] / 2
    )
    assert run.status == ("failed" if rule_fails else "complete"), summary
    if run.status == "failed":
        assert summary["cause_kind"] in ("replies invalid", "checkpoints failed"), summary
    closed = events[-1]["payload"]["closed"]
    assert sum(e["kind"] == "checkpoint" for e in events) == 1 + len(closed)

    # Every model call is in llm_calls, in order, with its token counts. (llama-cpp-python's
    # server refuses response_format "json_schema"; that refusal is part of the format
    # detection, not a call of its own.)
    chat = [b for b in _chat_bodies(proxy) if _format(b) != "json_schema"]
    assert len(calls) == len(chat) >= 2
    assert [c["call_index"] for c in calls] == list(range(len(calls)))
    for call in calls:
        assert call["model"] == LLM_MODEL and len(call["request_hash"]) == 64
        assert call["error"] is None, call
        assert call["prompt_tokens"] > 100 and call["completion_tokens"] >= 1

    # Invalid actions (if the model made any) are recorded with their reason and scored.
    rejected = [e for e in events if e["kind"] == "action" and not e["payload"]["accepted"]]
    assert events[-1]["payload"]["invalid_actions"] == len(rejected)
    assert scores["invalid_actions"] == len(rejected)
    assert all(e["payload"]["reason"] for e in rejected)

    # Nothing private was ever sent, apart from evidence the agent paid to reveal.
    _assert_no_leak(chat, paid_canaries(events, by_item))
    assert not any("CANARY-OUTCOME" in json.dumps(b) for b in chat)


@pytest.fixture(scope="module")
def mitsunobu_questions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """One question of each type from the real EDBO Mitsunobu screening table: of each type
    the one with the shortest prompt (prompt evaluation is most of a tiny model's time)."""
    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.prompts import render_prompt
    from labreplay.suites.conditions.questions import agent_view, load_questions, write_questions

    compiled = compile_datasets(["edbo_mitsunobu"], resolve_data_dir(None), seed=0)
    chosen: list[Any] = []
    for qtype in ("mc_single", "mc_all", "fib_all"):
        of_type = [q for q in compiled.questions if q["question_type"] == qtype]
        chosen += sorted(of_type, key=lambda q: len(render_prompt(agent_view(q))))[:1]
    path = tmp_path_factory.mktemp("questions") / "mitsunobu.jsonl"
    write_questions(path, chosen)
    return path, load_questions(path)


def test_conditions_questions_through_a_real_model(
    mitsunobu_questions: tuple[Path, list[Any]],
    recording_proxy: tuple[str, Any],
    tmp_path: Path,
) -> None:
    from labreplay.suites.conditions.questions import agent_view
    from labreplay.suites.conditions.run import run_agent

    path, questions = mitsunobu_questions
    url, proxy = recording_proxy
    with Store(tmp_path / "results.sqlite") as store:
        agent = make_question_agent(
            f"openai:{LLM_MODEL}",
            base_url=url,
            max_tokens=120,
            max_repairs=1,
            max_concurrency=3,
            # the server answers one request at a time, so the third waits for the first two:
            # at the default 60 s timeout it was cut and sent again on a loaded machine, which
            # made the server evaluate the longest prompt twice
            timeout_s=300,
            store=store,
        )
        assert isinstance(agent, LLMQuestionAgent)
        summary = run_agent(store, path, questions, agent, seed=0)
        run_id = summary["run_id"]
        events = [e for e in store.events(run_id) if e["kind"] == "answer"]  # header aside
        calls = store.llm_calls(run_id)
        assert store.run(run_id).status == "complete"

        # Every question answered and scored; every call recorded with token counts.
        assert [e["payload"]["question_id"] for e in events] == [q["id"] for q in questions]
        chat = [b for b in _chat_bodies(proxy) if _format(b) != "json_schema"]
        # one recorded call per question; a retry (a timeout on a loaded server) sends its
        # request again and is counted on its call
        assert len(calls) >= len(questions)
        assert len(chat) == sum(1 + int(c["retries"] or 0) for c in calls)
        assert all(c["prompt_tokens"] > 50 and c["completion_tokens"] >= 1 for c in calls)
        for event in events:
            answer = event["payload"]["answer"]
            assert "option" in answer or "choices" in answer or "invalid" in answer

        # The same questions many at a time: all answered (now from the response cache).
        before = len(proxy.bodies)
        many = agent.answer_many([agent_view(q) for q in questions])
        assert len(many) == len(questions) and len(proxy.bodies) == before
        assert all(c["cached"] for c in agent.drain_calls())

    # The answer key and the evaluator's scores never reach the model.
    for body in chat:
        text = json.dumps(body)
        for private in ("option_relative_scores", "effective_scores", "option_source_entries"):
            assert private not in text
