"""Fault handling of the LLM client against a local server that misbehaves on purpose.

The stub server (labreplay.testing.fault_server) is a real HTTP server on 127.0.0.1 in a thread; the
client talks to it through the real openai package. No model is involved: these tests are about
retries, timeouts, garbage and secrets, not about answers.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agents.schemas import ACTION_SCHEMA

from labreplay.agents.base import drain_calls
from labreplay.agents.llm_client import AsyncLLMClient, LLMClient
from labreplay.agents.llm_config import RetryPolicy
from labreplay.errors import AgentError
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.llm_agent import LLMCampaignAgent, make_agent
from labreplay.suites.campaign.llm_prompts import Conversation, campaign_messages
from labreplay.testing import fault_server as stub

OBSERVATION: dict[str, Any] = {
    "phase": "select",
    "rules": "Pick one experiment or stop.",
    "action_schema": ACTION_SCHEMA,
    "state": {"budgets_left": {"experiments": 2}, "candidates": ["PG_0001", "PG_0002"]},
    "last_result": None,
    "step": 0,
}
GOOD = '{"type": "select_experiment", "experiment_id": "PG_0002"}'
FAST = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05, timeout_s=5.0)


def _agent(url: str, retry: RetryPolicy = FAST, **kw: Any) -> LLMCampaignAgent:
    return LLMCampaignAgent(LLMClient("stub", base_url=url, retry=retry, **kw))


def test_rate_limit_is_retried_and_retry_after_honoured() -> None:
    replies = [stub.rate_limited(0.3), stub.ok(GOOD)]
    with stub.StubServer(stub.scripted(replies)) as server:
        agent = _agent(server.base_url, RetryPolicy(base_delay_s=0.01, max_delay_s=1.0))
        agent.reset(7)
        started = time.monotonic()
        action = agent.act(OBSERVATION)
        elapsed = time.monotonic() - started
    assert action == {"type": "select_experiment", "experiment_id": "PG_0002"}
    assert elapsed >= 0.3  # waited at least as long as the server asked
    (call,) = drain_calls(agent)
    assert call["retries"] == 1 and call["error"] is None
    assert call["prompt_tokens"] == 11 and call["completion_tokens"] == 7
    assert len(server.chat_requests) == 2


def test_server_errors_retry_a_bounded_number_of_times_then_invalid_action() -> None:
    with stub.StubServer(stub.constant(stub.server_error(503))) as server:
        agent = _agent(server.base_url)
        agent.reset(0)
        action = agent.act(OBSERVATION)
        assert len(server.chat_requests) == FAST.max_retries + 1
    assert action["type"] == "invalid"
    assert "HTTP 503" in action["error"] and "gave up after 3 retries" in action["error"]
    (call,) = agent.drain_calls()
    assert call["retries"] == 3 and call["prompt_tokens"] is None


def test_total_retry_time_bounds_many_retries() -> None:
    # 3 s of retries leaves room for a retry however slow a loaded machine makes the first
    # request; unbounded, 100 retries of 0.2 s would take 20 s
    policy = RetryPolicy(max_retries=100, base_delay_s=0.2, max_delay_s=0.2, total_time_s=3.0)
    with stub.StubServer(stub.constant(stub.server_error(500))) as server:
        agent = _agent(server.base_url, policy)
        started = time.monotonic()
        action = agent.act(OBSERVATION)
        elapsed = time.monotonic() - started
        n_requests = len(server.chat_requests)
    assert elapsed < 10.0
    assert 2 <= n_requests < 20
    assert "total retry time 3s would be exceeded" in action["error"]


def test_timeouts_are_honoured() -> None:
    policy = RetryPolicy(max_retries=1, base_delay_s=0.01, timeout_s=0.3)
    with stub.StubServer(stub.constant(stub.slow(GOOD, delay_s=5.0))) as server:
        agent = _agent(server.base_url, policy)
        started = time.monotonic()
        action = agent.act(OBSERVATION)
        elapsed = time.monotonic() - started
        assert len(server.chat_requests) == 2
    assert elapsed < 10.0  # two requests to a server that answers in 5 s each would take 10 s
    assert action["type"] == "invalid" and "timed out" in action["error"]


def test_garbage_body_becomes_an_invalid_action() -> None:
    with stub.StubServer(stub.constant(stub.garbage_body())) as server:
        agent = _agent(server.base_url)
        action = agent.act(OBSERVATION)
    assert action["type"] == "invalid"
    assert "malformed response" in action["error"]


def test_garbage_content_gets_repair_turns_then_is_invalid() -> None:
    junk = "I think the best experiment is the second one!"
    with stub.StubServer(stub.constant(stub.ok(junk))) as server:
        agent = _agent(server.base_url, max_repairs=2)
        action = agent.act(OBSERVATION)
        requests = server.chat_requests
    assert len(requests) == 3  # the first answer and two repairs
    assert action == {
        "type": "invalid",
        "raw": junk,
        "error": "no valid reply in 3 attempts: the reply contains no JSON object",
    }
    repair_turn = requests[1].body["messages"][-1]["content"]
    assert "the reply contains no JSON object" in repair_turn
    assert requests[1].body["messages"][-2] == {"role": "assistant", "content": junk}
    assert len(drain_calls(agent)) == 3


def test_schema_violation_is_shown_to_the_model_and_repaired() -> None:
    wrong = '{"type": "select_experiment", "experiment_id": "PG_9999"}'
    with stub.StubServer(stub.scripted([stub.ok(wrong), stub.ok(GOOD)])) as server:
        agent = _agent(server.base_url)
        action = agent.act(OBSERVATION)
        repair = server.chat_requests[1].body["messages"][-1]["content"]
    assert action["experiment_id"] == "PG_0002"
    assert "schema violation" in repair


def _format_of(request: stub.SeenRequest) -> str | None:
    fmt = (request.body or {}).get("response_format")
    return fmt["type"] if fmt else None


def test_structured_output_detected_once_then_falls_back() -> None:
    def respond(request: stub.SeenRequest, _n: int) -> stub.StubReply:
        if _format_of(request) is not None:
            return stub.StubReply(
                400, b'{"error": {"message": "response_format is not supported"}}'
            )
        return stub.ok(GOOD)

    with stub.StubServer(respond) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=FAST)
        agent = LLMCampaignAgent(client)
        assert client.structured_format is None
        first = agent.act(OBSERVATION)
        second = agent.act(OBSERVATION)
        sent = [_format_of(r) for r in server.chat_requests]
    assert first == second == {"type": "select_experiment", "experiment_id": "PG_0002"}
    assert sent == ["json_schema", "json_object", None, None]  # asked once, then never again
    assert client.structured_format == "none"
    assert [c["retries"] for c in agent.drain_calls()] == [0, 0]


def test_llama_cpp_style_refusal_falls_back_to_json_object_with_schema() -> None:
    # llama-cpp-python's server rejects "json_schema" with an HTTP 500 quoting its validation
    # error, and takes {"type": "json_object", "schema": ...} instead.
    refusal = json.dumps(
        {"error": {"message": "Input should be 'text' or 'json_object' (response_format.type)"}}
    ).encode()

    def respond(request: stub.SeenRequest, _n: int) -> stub.StubReply:
        if _format_of(request) == "json_schema":
            return stub.StubReply(500, refusal)
        return stub.ok(GOOD)

    with stub.StubServer(respond) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=FAST)
        LLMCampaignAgent(client).act(OBSERVATION)
        LLMCampaignAgent(client).act(OBSERVATION)
        requests = server.chat_requests
    assert [_format_of(r) for r in requests] == ["json_schema", "json_object", "json_object"]
    assert requests[1].body["response_format"]["schema"] == ACTION_SCHEMA
    assert client.structured_format == "json_object"


def test_structured_output_used_when_supported() -> None:
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=FAST)
        LLMCampaignAgent(client).act(OBSERVATION)
        body = server.chat_requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == ACTION_SCHEMA
    assert client.structured_format == "json_schema"


def test_response_cache_survives_a_new_process_view(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        with Store(db) as store:
            agent = make_agent("openai:stub", base_url=server.base_url, store=store)
            assert isinstance(agent, LLMCampaignAgent)
            agent.reset(3)
            agent.act(OBSERVATION)
        assert len(server.chat_requests) == 1
        with Store(db) as store:  # a "resumed" run: fresh store handle, fresh agent
            agent = make_agent("openai:stub", base_url=server.base_url, store=store)
            assert isinstance(agent, LLMCampaignAgent)
            agent.reset(3)
            action = agent.act(OBSERVATION)
        assert len(server.chat_requests) == 1  # no second HTTP call
    assert action["experiment_id"] == "PG_0002"
    (call,) = agent.drain_calls()
    assert call["cached"] is True and call["prompt_tokens"] == 11


def test_api_key_never_reaches_the_store(tmp_path: Path) -> None:
    key = "sk-canary-5f0e1d2c3b4a"
    db = tmp_path / "results.sqlite"

    def respond(request: stub.SeenRequest, n: int) -> stub.StubReply:
        if n == 0:  # a server that echoes the key in an error, as some proxies do
            body = json.dumps({"error": {"message": f"bad key {key}"}}).encode()
            return stub.StubReply(401, body)
        return stub.ok(GOOD)

    with stub.StubServer(respond) as server, Store(db) as store:
        agent = make_agent("openai:stub", base_url=server.base_url, api_key=key, store=store)
        assert isinstance(agent, LLMCampaignAgent)
        failed = agent.act(OBSERVATION)
        agent.act(OBSERVATION)
        seen_auth = {r.headers.get("authorization") for r in server.chat_requests}
        params = agent.params()
        run_id, _ = store.open_run(
            suite="campaign",
            spec_hash="0" * 64,
            spec_id="fault-test",
            branch="adaptive",
            agent=agent.name,
            agent_params=params,
            seed=0,
            model="stub",
            endpoint=params["endpoint"],
            extra_provenance={"agent_params": params},
        )
        store.record_llm_calls(run_id, agent.drain_calls())
        store.finish_run(run_id, "done", {"failed": failed})
    assert seen_auth == {f"Bearer {key}"}  # the key was really used...
    assert key not in json.dumps(params) and key not in json.dumps(failed)
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert key.encode() not in stored  # ...and is nowhere in the store's files


def test_endpoint_credentials_are_stripped_from_params() -> None:
    client = LLMClient("m", base_url="https://user:pw@example.invalid:8443/v1/?token=abc")
    assert client.params()["endpoint"] == "https://example.invalid:8443/v1"


@pytest.mark.parametrize(("given", "peak"), [(3, 3), (None, 1)], ids=["given", "local-default"])
def test_async_client_bounds_concurrency(given: int | None, peak: int) -> None:
    """`given` None: the server is on 127.0.0.1, which answers one request at a time, so one is
    in flight (defect: 4 questions waited on a local server, and 3 of 20 calls timed out)."""
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def respond(_request: stub.SeenRequest, _n: int) -> stub.StubReply:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return stub.ok('{"answer": 1}')

    schema = {"type": "object", "required": ["answer"]}
    messages = [{"role": "user", "content": "q"}]
    with stub.StubServer(respond) as server:
        client = AsyncLLMClient("stub", base_url=server.base_url, max_concurrency=given, retry=FAST)
        replies = client.run_many([(messages, schema)] * 9)
        again = client.run_many([(messages, schema)] * 2)  # a second event loop works too
    assert all(r.ok for r in replies + again)
    assert state["peak"] == peak
    assert AsyncLLMClient("stub", base_url="http://localhost:9/v1").max_concurrency == 1
    assert AsyncLLMClient("stub", base_url="https://api.example.com/v1").max_concurrency == 4


def test_missing_openai_package_is_a_clear_agent_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "openai", None)
    with pytest.raises(AgentError, match=r"pip install 'labreplay\[llm\]'"):
        LLMClient("m", base_url="http://127.0.0.1:9/v1")


def test_agent_spec_parsing() -> None:
    agent = make_agent("openai:llama3.2:1b", base_url="http://127.0.0.1:9/v1")
    assert agent.name == "openai:llama3.2:1b"
    assert agent.params()["model"] == "llama3.2:1b"
    with pytest.raises(AgentError, match="openai:MODEL"):
        make_agent("gpt-4o")
    with pytest.raises(AgentError, match="temperature"):
        make_agent("openai:m", temperature=5.0)


def test_prompt_rendering_is_canonical() -> None:
    shuffled = {k: OBSERVATION[k] for k in reversed(list(OBSERVATION))}
    shuffled["state"] = {k: OBSERVATION["state"][k] for k in reversed(OBSERVATION["state"])}
    assert campaign_messages(shuffled) == campaign_messages(OBSERVATION)


def test_prompt_layout_keeps_the_campaign_part_byte_identical_and_history_append_only() -> None:
    chat = Conversation()
    candidates = [
        {"experiment_id": f"PG_000{i}", "descriptors": {"t": 100 * i}, "status": "available"}
        for i in (1, 2)
    ]
    state: dict[str, Any] = {
        "budgets_left": {"experiments": 2},
        "candidates": candidates,
        "context": {"rows": 40},
        "experiments": {},
        "closed": [],
        "open_experiment": None,
    }
    system, user = campaign_messages({**OBSERVATION, "state": state}, chat)
    # Candidates are a table in the CAMPAIGN part (the system message); no status there.
    table = '{"columns":["experiment_id","descriptors.t"],"rows":[["PG_0001",100],["PG_0002",200]]}'
    assert table in system["content"] and '"candidate_status":{}' in user["content"]
    chat.answered({"type": "stop"})
    # Within an experiment a turn extends the conversation with only what changed.
    opened = {**state, "open_experiment": "PG_0001", "budgets_left": {"experiments": 1}}
    *kept, answer, delta = campaign_messages({**OBSERVATION, "state": opened}, chat)
    assert kept == [system, user] and answer == {"role": "assistant", "content": '{"type":"stop"}'}
    changed = delta["content"].split("\n")[1]
    assert '"open_experiment":"PG_0001"' in changed and "candidates" not in changed
    assert delta["content"].endswith("SCHEMA S1 (given above)")  # the same schema, by label
    chat.answered({"type": "stop"})
    record = {"forecasts": [{"p_valid": 0.5}], "review": None}
    closed = {
        **state,
        "budgets_left": {"experiments": 1},
        "candidates": [{**candidates[0], "status": "closed"}, candidates[1]],
        "experiments": {"PG_0001": record},
        "closed": ["PG_0001"],
    }
    # A closed experiment restarts the conversation: the same system message, the whole state.
    again, second = campaign_messages({**OBSERVATION, "state": closed}, chat)
    assert again == system
    history = 'COLUMNS: ["experiment_id","forecasts","review"]\n["PG_0001",[{"p_valid":0.5}],null]'
    assert f"\n{history}\nNOW:" in second["content"]
    assert '"candidate_status":{"PG_0001":"closed"}' in second["content"]
    assert '"budgets_left":{"experiments":1}' in second["content"].split("NOW:")[1]
    # The schema comes last.
    schema = json.dumps(ACTION_SCHEMA, sort_keys=True, separators=(",", ":"))
    assert second["content"].endswith(f"SCHEMA S1: {schema}")
    # A campaign-long key that changes moves to NOW and is never shown stale.
    grown = {**closed, "context": {"rows": 41}}
    third = campaign_messages({**OBSERVATION, "state": grown}, chat)
    assert '"rows":40' not in third[0]["content"]
    assert '"context":{"rows":41}' in third[-1]["content"].split("NOW:")[1]
    chat.reset()
    assert campaign_messages({**OBSERVATION, "state": state}, chat) == [system, user]


def test_concurrent_refusals_drop_a_format_only_once() -> None:
    def respond(request: stub.SeenRequest, _n: int) -> stub.StubReply:
        if _format_of(request) == "json_schema":
            time.sleep(0.05)  # let all requests get refused at about the same time
            return stub.StubReply(500, b'{"error": {"message": "bad response_format type"}}')
        return stub.ok('{"answer": 1}')

    schema = {"type": "object", "required": ["answer"]}
    with stub.StubServer(respond) as server:
        client = AsyncLLMClient("stub", base_url=server.base_url, max_concurrency=4, retry=FAST)
        replies = client.run_many(
            [([{"role": "user", "content": f"q{i}"}], schema) for i in range(4)]
        )
        formats = [_format_of(r) for r in server.chat_requests]
    assert all(r.ok for r in replies)
    assert client.structured_format == "json_object"
    assert formats.count("json_object") == 4 and None not in formats


def test_panel_forecast_is_asked_as_rows_and_decoded_to_the_environment_format() -> None:
    from labreplay.suites.campaign.env import panel_schema
    from labreplay.suites.campaign.llm_panel import panel_wire

    schema = panel_schema(["PG_0002", "PG_0001", "PG_0003"])
    wire = panel_wire(schema)
    assert wire is not None and wire.ids == ("PG_0002", "PG_0001", "PG_0003")
    assert wire.schema["properties"]["forecasts"]["minItems"] == 3
    rows = [[0.9, 1, 0.5, 0.5, 0], [0.2, 0, 0, 0, 0], "no"]  # weights; a zero row; not a row
    decoded = wire.decode({"forecasts": rows})
    (entry,) = decoded["forecasts"]  # the last two take the runtime's fallback
    assert entry["experiment_id"] == "PG_0002" and entry["p_valid"] == 0.9
    assert sum(entry["categories"].values()) == pytest.approx(1.0)
    assert entry["categories"]["completely_reacted"] == pytest.approx(0.5)
    assert wire.decode({"rows": []})["forecasts"] == []
    # A reply that broke the schema keeps its valid rows; an out-of-range row falls back.
    broken = '{"forecasts": [[0.5, 1, 1, 1, 1], [0.5, 163, 0, 0, 0], [0.1, 0, 0, 1, 0]]}'
    kept = wire.salvage(broken)
    assert kept is not None
    assert [f["experiment_id"] for f in kept["forecasts"]] == ["PG_0002", "PG_0003"]
    assert wire.salvage("no json") is None
    assert panel_wire({"type": "object"}) is None  # an unknown shape: the env's own schema


def test_timeout_is_derived_from_each_calls_response_budget_unless_given() -> None:
    """No --timeout: each request's timeout is max(60 s, max_tokens / 20 tokens/s) and its total
    retry time max(180 s, 2 x that); a given --timeout is used as is, with the 180 s total."""
    from labreplay.agents.llm_options import LlmOptions
    from labreplay.suites.campaign.env import panel_schema
    from labreplay.suites.campaign.llm_panel import panel_wire

    wire = panel_wire(panel_schema([f"PG_{i:04d}" for i in range(1, 33)]))  # long-1's panel
    assert wire is not None
    messages = [{"role": "user", "content": "forecast"}]
    url = "http://127.0.0.1:9/v1"  # nothing is sent: only the attempts are planned
    derived = make_agent("openai:m", base_url=url, **LlmOptions().builder_kwargs())
    panel = derived.client._start(messages, wire.schema, "panel_forecast")
    assert panel.request["max_tokens"] == 3173
    assert panel.timeout_s >= 158 and panel.timeout_s == pytest.approx(3173 / 20)
    assert panel.total_time_s == pytest.approx(2 * panel.timeout_s)
    short = derived.client._start(messages, ACTION_SCHEMA, "action")
    assert short.request["max_tokens"] < 1200  # a budget that 60 s covers at 20 tokens/s
    assert (short.timeout_s, short.total_time_s) == (60.0, 180.0)
    retry = derived.params()["retry"]
    assert str(retry["timeout_s"]).startswith("derived") and "derived" in retry["total_time_s"]
    given = make_agent("openai:m", base_url=url, **LlmOptions(timeout=5.0).builder_kwargs())
    for schema in (wire.schema, ACTION_SCHEMA):
        attempt = given.client._start(messages, schema, "panel_forecast")
        assert (attempt.timeout_s, attempt.total_time_s) == (5.0, 180.0)
    # The same provenance as before the timeout was derived, so explicit-timeout run ids hold.
    assert given.params()["retry"] == {
        "max_retries": 4, "base_delay_s": 0.5, "max_delay_s": 8.0, "total_time_s": 180.0,
        "timeout_s": 5.0,
    }  # fmt: skip
