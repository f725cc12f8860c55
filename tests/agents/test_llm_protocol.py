"""The pure parts of the LLM agents: reply extraction, validation, question schemas, and the
question agent's answer form (against the local stub server, on real conditions questions)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from labreplay._provenance import scrub_secrets
from labreplay.agents.llm_config import public_endpoint
from labreplay.agents.llm_wire import extract_json_object, validate_reply, validator_for_schema
from labreplay.errors import AgentError
from labreplay.suites.campaign.llm_agent import make_agent
from labreplay.suites.conditions.llm_agent import (
    LLMQuestionAgent,
    conditions_agent,
    make_question_agent,
)
from labreplay.suites.conditions.llm_prompts import question_schema
from labreplay.testing import fault_server as stub


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 2}\n```', {"a": 2}),
        ('Sure. My action: {"a": 3} -- hope that helps {"b": 4}', {"a": 3}),
        ("[1, 2]", None),
        ('{"a": 1', None),
        ("", None),
    ],
)
def test_extract_json_object(text: str, expected: dict[str, Any] | None) -> None:
    assert extract_json_object(text) == expected


def test_broken_schemas_are_reported_as_the_environments_fault() -> None:
    for schema in ({"type": "nonsense"}, {"$ref": "#/nowhere"}, {"properties": 3}):
        value, problem = validate_reply('{"a": 1}', validator_for_schema(schema), "stop")
        assert value is None and problem.startswith("the environment's schema"), problem


def test_cut_off_reply_says_so() -> None:
    _, problem = validate_reply('{"type": "sel', validator_for_schema({"type": "object"}), "length")
    assert problem == (
        "the reply contains no JSON object (the reply was cut off at the token limit)"
    )


def test_public_endpoint_defaults_and_strips() -> None:
    assert public_endpoint(None) == "https://api.openai.com/v1"
    assert public_endpoint("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"


def test_params_carry_no_secret_and_survive_scrubbing() -> None:
    agent = make_agent("openai:m", base_url="http://127.0.0.1:9/v1", api_key="sk-abcdefgh1234")
    params = agent.params()
    assert scrub_secrets(params) == params  # nothing in them even looks like a credential
    assert "sk-abcdefgh1234" not in json.dumps(params)
    assert params["max_tokens"] == "derived" and params["sampling_seed"] == "derived-from-run-seed"


@pytest.fixture(scope="module")
def real_views() -> list[dict[str, Any]]:
    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.questions import agent_view

    compiled = compile_datasets(["edbo_mitsunobu"], resolve_data_dir(None), seed=0)
    views = []
    for qtype in ("mc_single", "mc_all", "fib_all"):
        views.append(agent_view(next(q for q in compiled.questions if q["question_type"] == qtype)))
    return views


def test_question_schema_follows_the_prompt_numbering(real_views: list[dict[str, Any]]) -> None:
    mc, _, fib = real_views
    schema = question_schema(mc)
    assert schema["properties"]["answer"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": len(mc["options"]),
    }
    fib_schema = question_schema(fib)
    assert fib_schema["required"] == fib["varying_keys"]
    for key in fib["varying_keys"]:
        assert fib_schema["properties"][key]["maximum"] == len(fib["candidates"][key])


def test_question_agent_answers_zero_based_and_flags_failures(
    real_views: list[dict[str, Any]],
) -> None:
    mc, mc_all, fib = real_views
    fib_reply = json.dumps({k: 1 for k in fib["varying_keys"]})
    replies = [stub.ok('{"answer": 2}'), stub.ok('{"answer": 99}'), stub.ok("no idea")]
    with stub.StubServer(stub.scripted(replies, then=stub.ok(fib_reply))) as server:
        agent = make_question_agent("openai:stub", base_url=server.base_url, max_repairs=1)
        assert isinstance(agent, LLMQuestionAgent)
        first = agent.answer(mc)
        second = agent.answer(mc_all)  # 99 is out of range, then "no idea": invalid
        third = agent.answer(fib)
        prompt = server.chat_requests[0].body["messages"][1]["content"]
    assert first == {"option": 1}
    assert second["error"].startswith("no valid reply in 2 attempts") and second["raw"] == "no idea"
    assert third == {"choices": {k: 0 for k in fib["varying_keys"]}}
    assert "Which option for" in prompt  # the suite's own rendering of the question
    assert [c["call_index"] for c in agent.drain_calls()] == [0, 1, 2, 3]


def test_conditions_agent_needs_a_model() -> None:
    with pytest.raises(AgentError, match="--model"):
        conditions_agent(model=None)
    agent = conditions_agent(model="smollm2", seed=3, base_url="http://127.0.0.1:9/v1")
    assert agent.name == "openai:smollm2"
