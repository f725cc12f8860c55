"""inspect_ai's model API as the transport of our LLM clients (issue 35): an inspect model string
(`openai-api/<service>/<model>`, `openai/o3-mini`, `mockllm/model`) names an LLM agent in every
suite, against local servers on 127.0.0.1; our retries, Retry-After, circuit breaker, cache and
call records wrap it exactly as on the native `openai:MODEL` path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agents.schemas import ACTION_SCHEMA

from labreplay.agents import llm_inspect
from labreplay.agents.llm import agent_provider, is_llm_agent, parse_agent_spec
from labreplay.agents.llm_client import CIRCUIT_LIMIT, AsyncLLMClient, LLMClient
from labreplay.agents.llm_config import RetryPolicy
from labreplay.errors import AgentError
from labreplay.store.sqlite import Store
from labreplay.testing import fault_server as stub
from labreplay.testing.schema_server import SchemaAnswerer

pytest.importorskip("openai")
pytest.importorskip("inspect_ai")

LOCAL = "openai-api/local/stub"
KEY = "sk-inspect-test-0123456789abcdef0123456789"
MESSAGES = [{"role": "system", "content": "You pick."}, {"role": "user", "content": "Pick one."}]
GOOD = '{"type": "select_experiment", "experiment_id": "PG_0002"}'


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    child = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=child,
        check=False,
    )


@pytest.fixture(scope="module")
def specs(campaign_specs_source: Path) -> Path:
    return campaign_specs_source  # `campaign compile` at its defaults, read only


@pytest.fixture
def answering() -> Iterator[stub.StubServer]:
    with stub.StubServer(SchemaAnswerer()) as server:
        yield server


def _client(model: str, base_url: str | None, **options: Any) -> LLMClient:
    return LLMClient(model, base_url=base_url, provider="inspect", **options)


# ---------------------------------------------------------------------- routing
def test_inspect_model_strings_name_llm_agents_and_openai_model_stays_native() -> None:
    assert is_llm_agent("openai-api/local/smollm2") and is_llm_agent("mockllm/model")
    assert is_llm_agent("openai:Qwen/Qwen2.5-7B-Instruct") and not is_llm_agent("bayes")
    assert not is_llm_agent("my_agents:Greedy")
    assert parse_agent_spec("openai/gpt-5") == "openai/gpt-5"
    # a model name with a "/" behind openai: is the native client's, as before (vLLM, OpenRouter)
    assert parse_agent_spec("openai:openai/gpt-4o") == "openai/gpt-4o"
    assert agent_provider("openai:openai/gpt-4o", None) == "auto"
    assert agent_provider("openai/gpt-4o", None) == "inspect"
    with pytest.raises(AgentError, match="--provider anthropic applies to openai:MODEL"):
        agent_provider("openai/gpt-4o", "anthropic")


def test_conditions_llm_model_keeps_bare_names_on_the_native_path() -> None:
    assert llm_inspect.is_builtin_spec("openai-api/local/m")
    assert not llm_inspect.is_builtin_spec("Qwen/Qwen2.5-7B-Instruct")
    assert not llm_inspect.is_builtin_spec("meta-llama/Llama-3.1-8B")


# ---------------------------------------------------------------------- (a) an OpenAI-compatible server
@pytest.mark.slow
def test_a_campaign_through_openai_api_completes_with_every_call_recorded(
    specs: Path, tmp_path: Path, answering: stub.StubServer
) -> None:
    store = tmp_path / "s.sqlite"
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--only", "short-1", "--agent", LOCAL,
        "--base-url", answering.base_url, "--api-key-env", "H35_TEST_KEY", "--store",
        str(store), "--controls", "none", "--json", env={"H35_TEST_KEY": KEY},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["status"] == "complete"
    with Store(store, readonly=True) as db:
        adaptive = next(r for r in db.runs() if r.branch == "adaptive")
        calls = db.llm_calls(adaptive.run_id)
    assert adaptive.agent == LOCAL and adaptive.model == LOCAL
    params = adaptive.agent_params
    assert params["layer"] == "inspect_ai" and params["provider"] == "openai-api"
    assert params["structured"] == "auto: response_format sent as is"
    assert calls and not any(c["error"] or c["parse_error"] for c in calls)
    assert all(c["prompt_tokens"] > 0 and c["completion_tokens"] > 0 for c in calls)
    assert all(c["resolved_model"] == "stub-2026-01-01" for c in calls)
    usage = adaptive.summary["usage"] if adaptive.summary else {}
    assert usage["failed_calls"] == 0 and usage["calls"] == len(calls)
    # what the server got: our exact schema, the key as a bearer token; neither key in the store
    sent = [r for r in answering.chat_requests if r.body]
    assert sent and all(r.body["response_format"]["type"] == "json_schema" for r in sent)
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in sent)
    assert KEY.encode() not in store.read_bytes()


def test_the_sent_request_carries_our_schema_seed_and_budget() -> None:
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        client = _client(LOCAL, server.base_url, retry=RetryPolicy(timeout_s=5.0))
        client.reseed(7)
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        (request,) = server.chat_requests
    assert reply.value == json.loads(GOOD)
    body = request.body or {}
    assert body["model"] == "stub" and body["temperature"] == 0.0
    assert isinstance(body["seed"], int) and body["max_tokens"] == reply.calls[0]["max_tokens"]
    assert body["response_format"]["json_schema"]["schema"] == ACTION_SCHEMA  # not degraded
    assert body["messages"] == MESSAGES


def test_openai_model_goes_through_inspect_and_sends_exactly_the_hashed_request(
    tmp_path: Path,
) -> None:
    """`openai:MODEL --base-url URL` is carried by inspect's openai-api provider: the server
    gets exactly the body we hash and cache (every field, the budget under the name we chose),
    the agent's params have no layer key (so its run ids are those of earlier versions), and
    the run's provenance names the model layer's versions."""
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=RetryPolicy(timeout_s=5.0))
        client.reseed(7)
        expected = client._request(MESSAGES, ACTION_SCHEMA, "action")
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        (request,) = server.chat_requests
        client.token_param = "max_completion_tokens"
        later = client._request(MESSAGES, ACTION_SCHEMA, "action")
        client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        second = server.chat_requests[1]
    assert reply.ok and request.body == expected
    assert second.body == later and "max_tokens" not in later
    assert "layer" not in client.params() and "provider" not in client.params()
    assert isinstance(client._sdk, llm_inspect.InspectEndpoint)
    with Store(tmp_path / "s.sqlite") as db:
        run_id, _ = db.open_run(
            suite="campaign", spec_hash="h", spec_id="s", branch="adaptive",
            agent="openai:stub", agent_params=client.params(), seed=0,
        )  # fmt: skip
        provenance = db.run(run_id).provenance
    assert "inspect-ai" in str(provenance["model_layer"])


def test_a_refused_response_format_falls_back_as_natively() -> None:
    """A server that refuses json_schema (llama-cpp-python's 500) is asked again at once with
    json_object and its schema, then keeps it: the native detection, through inspect."""
    refusal = json.dumps(
        {"error": {"message": "Input should be 'text' or 'json_object' (response_format.type)"}}
    ).encode()

    def respond(request: stub.SeenRequest, _n: int) -> stub.StubReply:
        fmt = (request.body or {}).get("response_format") or {}
        return stub.StubReply(500, refusal) if fmt.get("type") == "json_schema" else stub.ok(GOOD)

    with stub.StubServer(respond) as server:
        client = _client(LOCAL, server.base_url, retry=RetryPolicy(timeout_s=5.0))
        replies = [client.complete_json(MESSAGES, ACTION_SCHEMA, "action") for _ in range(2)]
        sent = [(r.body or {})["response_format"]["type"] for r in server.chat_requests]
    assert all(r.ok and r.calls[0]["retries"] == 0 for r in replies)
    assert sent == ["json_schema", "json_object", "json_object"]
    assert client.structured_format == "json_object"


def test_a_provider_without_response_format_gets_a_lossless_schema_or_none() -> None:
    converted = llm_inspect.inspect_schema(ACTION_SCHEMA)
    assert converted is not None and "anyOf" in converted  # const -> enum, exclusive oneOf
    assert converted["anyOf"][1]["properties"]["type"] == {"type": "string", "enum": ["stop"]}
    rows = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
    assert llm_inspect.inspect_schema({"type": "object", "properties": {"r": rows}}) is None


def test_the_conditions_and_configsearch_llm_agents_take_an_inspect_model_string(
    answering: stub.StubServer,
) -> None:
    from typer.testing import CliRunner

    from labreplay.suites.conditions.llm_agent import conditions_agent, make_question_agent
    from labreplay.suites.configsearch.cli import app

    agent = make_question_agent(LOCAL, base_url=answering.base_url)
    assert agent.name == LOCAL and agent.endpoint == answering.base_url
    assert agent.params()["provider"] == "openai-api"
    legacy = conditions_agent("openai-api/local/stub", base_url=answering.base_url)
    assert legacy.name == LOCAL  # --agent llm --model PROVIDER/MODEL
    references = Path(__file__).resolve().parents[2] / "benchmarks" / "references"
    found = sorted((references / "configsearch").glob("refractive_index__*.json.gz"))
    if not found:
        pytest.skip("no recorded reference files")
    args = ["replay", "--references", str(found[0]), "--seeds", "2", "--budget", "4"]
    llm = ["--agent", LOCAL, "--base-url", answering.base_url, "--timeout", "5", "--json"]
    result = CliRunner().invoke(app, [*args, *llm])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.output)
    usage = row["agent"]["llm_usage"]
    assert row["agent"]["status"] == "complete" and usage["failed_calls"] == 0
    assert usage["calls"] == 2 and usage["prompt_tokens"] > 0


def test_inspect_output_maps_to_our_completion() -> None:
    from inspect_ai.model import ModelOutput, ModelUsage

    output = ModelOutput.from_content("m", '{"a": 1}', stop_reason="max_tokens")
    output.usage = ModelUsage(
        input_tokens=30, output_tokens=9, input_tokens_cache_read=1000,
        input_tokens_cache_write=200, reasoning_tokens=4,
    )  # fmt: skip
    got = llm_inspect.completion_of(output)
    assert got.text == '{"a": 1}' and got.finish_reason == "length"  # cut off, as natively
    assert got.prompt_tokens == 1230 and got.completion_tokens == 9
    assert got.cached_tokens == 1000 and got.cache_write_tokens == 200
    assert got.resolved_model == "m"


def test_every_sdks_failures_become_the_faults_we_classify() -> None:
    import httpx
    import openai
    import tenacity

    from labreplay.agents.llm_faults import failure_kind, fault_of

    class RateLimitError(Exception):  # shaped like anthropic's / google's HTTP errors
        def __init__(self, response: httpx.Response) -> None:
            super().__init__("slow down")
            self.status_code, self.response = response.status_code, response

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/messages")
    limited = httpx.Response(429, headers={"retry-after": "7"}, json={}, request=request)
    mapped = fault_of(RateLimitError(limited))
    assert mapped is not None and mapped.status == 429 and mapped.retry_after == 7.0
    assert failure_kind(mapped) == "transient"
    broken = httpx.Response(503, json={"error": {"message": "busy"}}, request=request)
    busy = fault_of(RateLimitError(broken))
    assert busy is not None and busy.status == 503 and failure_kind(busy) == "transient"

    class APITimeoutError(Exception):
        pass

    for late in (APITimeoutError(), httpx.ReadTimeout("late")):
        found = fault_of(late)
        assert found is not None and found.kind == "timeout"
    # inspect's retry wrapper (tenacity) hands back the last attempt's own error
    future = tenacity.Future(attempt_number=1)
    future.set_exception(openai.APITimeoutError(request=request))
    found = fault_of(tenacity.RetryError(future))
    assert found is not None and found.kind == "timeout"
    assert fault_of(KeyError("bug")) is None  # ours: not a call failure


# ---------------------------------------------------------------------- (b) a reasoning model
def test_a_reasoning_model_through_inspect_gets_max_completion_tokens() -> None:
    answerer = SchemaAnswerer(reasoning_tokens=300)
    with stub.StubServer(stub.reasoning_endpoint(answerer)) as server:
        client = _client("openai/o3-mini", server.base_url, retry=RetryPolicy(timeout_s=5.0))
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        bodies = [r.body or {} for r in server.chat_requests]
    assert reply.ok and [c["error"] for c in reply.calls] == [None]
    assert len(bodies) == 1 and "max_tokens" not in bodies[0]
    assert bodies[0]["max_completion_tokens"] > 8192 and "temperature" not in bodies[0]
    assert answerer.truncated == 0
    assert client.params()["provider"] == "openai"


# ---------------------------------------------------------------------- (c) mockllm, offline
@pytest.mark.slow
def test_mockllm_runs_offline_and_its_replies_are_invalid_and_the_run_failed(
    specs: Path, tmp_path: Path
) -> None:
    store = tmp_path / "m.sqlite"
    offline = {  # no tiktoken file and no network: mockllm's token count falls back
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "no-tiktoken"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--only", "short-1", "--agent",
        "mockllm/model", "--store", str(store), "--controls", "none", "--json", env=offline,
    )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    (result,) = json.loads(proc.stdout)
    assert result["status"] == "failed" and "every model call failed" in result["cause"]
    with Store(store, readonly=True) as db:
        (run,) = [r for r in db.runs() if r.branch == "adaptive"]
        calls = db.llm_calls(run.run_id)
    assert run.status == "failed" and run.agent_params["provider"] == "mockllm"
    assert run.agent_params["sampling_seed"].startswith("not sent")
    assert run.agent_params["structured"].startswith("none: inspect_ai's mockllm")
    assert calls and all(c["error"] is None for c in calls)  # answered: failure is data
    assert all("no JSON object" in str(c["parse_error"]) for c in calls)
    assert all(c["prompt_tokens"] and c["prompt_tokens"] > 0 for c in calls)


# ---------------------------------------------------------------------- (d) failures as on the native path
def test_a_429_retry_after_is_honoured_and_its_excess_refused_as_natively() -> None:
    with stub.StubServer(stub.scripted([stub.rate_limited(1), stub.ok(GOOD)])) as server:
        client = _client(LOCAL, server.base_url, retry=RetryPolicy(timeout_s=5.0))
        started = time.monotonic()
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        waited = time.monotonic() - started
    assert reply.ok and reply.calls[0]["retries"] == 1 and len(server.chat_requests) == 2
    assert waited >= 1.0  # the server's Retry-After, not inspect's or the SDK's own backoff
    with stub.StubServer(stub.constant(stub.rate_limited(30))) as server:
        policy = RetryPolicy(timeout_s=5.0, max_retry_wait_s=5.0)
        native = LLMClient("stub", base_url=server.base_url, retry=policy)
        ours = _client(LOCAL, server.base_url, retry=policy)
        errors = [
            c.complete_json(MESSAGES, ACTION_SCHEMA).calls[0]["error"] for c in (native, ours)
        ]
        assert len(server.chat_requests) == 2  # one request each: no hidden SDK retries
    assert errors[0] == errors[1]
    assert "HTTP 429" in str(errors[1]) and "over --max-retry-wait 5 s" in str(errors[1])


def test_a_hung_endpoint_times_out_into_the_circuit_breaker_as_natively() -> None:
    policy = RetryPolicy(max_retries=0, timeout_s=1.5)  # room for a loaded machine
    with stub.StubServer(stub.constant(stub.hung())) as server:
        client = _client(LOCAL, server.base_url, retry=policy)
        records = [client.chat(MESSAGES, ACTION_SCHEMA)[1] for _ in range(CIRCUIT_LIMIT + 2)]
        assert len(server.chat_requests) == CIRCUIT_LIMIT
    errors = [str(r.get("error")) for r in records]
    assert all(e.startswith("request timed out") for e in errors[:CIRCUIT_LIMIT])
    assert all(e.startswith("not sent") and "timed out" in e for e in errors[CIRCUIT_LIMIT:])


def test_concurrent_calls_through_inspect_classify_5xx_and_succeed_after_it() -> None:
    replies = [stub.server_error(503), stub.ok(GOOD)]
    with stub.StubServer(stub.scripted(replies, then=stub.ok(GOOD))) as server:
        client = AsyncLLMClient(
            LOCAL, base_url=server.base_url, provider="inspect",
            retry=RetryPolicy(timeout_s=5.0, base_delay_s=0.01), max_concurrency=1,
        )  # fmt: skip
        first, second = client.run_many([(MESSAGES, ACTION_SCHEMA), (MESSAGES, ACTION_SCHEMA)])
    assert first.ok and second.ok and first.calls[0]["retries"] == 1


def test_an_unreachable_endpoint_opens_the_circuit_after_one_call() -> None:
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        url = server.base_url  # closed below: nothing listens there any more
    client = _client(LOCAL, url, retry=RetryPolicy(max_retries=1, timeout_s=2.0, base_delay_s=0.01))
    first = client.chat(MESSAGES, ACTION_SCHEMA)[1]
    second = client.chat(MESSAGES, ACTION_SCHEMA)[1]
    assert str(first["error"]).startswith("connection failed") and first["retries"] == 1
    assert str(second["error"]).startswith("not sent")


# ---------------------------------------------------------------------- (e) refused before any store
@pytest.mark.slow
def test_unknown_provider_is_one_line_exit_2_and_nothing_created(
    specs: Path, tmp_path: Path
) -> None:
    store = tmp_path / "x.sqlite"
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--only", "short-1", "--agent",
        "nosuch/model", "--store", str(store),
    )  # fmt: skip
    assert proc.returncode == 2 and not store.exists()
    assert proc.stderr.count("\n") == 1 and "inspect_ai has no provider 'nosuch'" in proc.stderr


def test_a_missing_provider_package_or_inspect_is_named_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AgentError, match=r"inspect_ai refused it \(.*No OPENAI_API_KEY") as no_key:
        _client("openai/gpt-4o-mini", None)
    assert "[bold]" not in str(no_key.value)  # inspect's console markup is dropped
    monkeypatch.setattr(llm_inspect, "_installed", lambda module: module != "anthropic")
    with pytest.raises(AgentError, match=r"needs the anthropic package: pip install anthropic"):
        _client("anthropic/claude-sonnet-4-5", None)
    real = llm_inspect.importlib.util.find_spec

    def no_inspect(name: str, *args: Any) -> Any:
        return None if name == "inspect_ai" else real(name, *args)

    monkeypatch.setattr(llm_inspect.importlib.util, "find_spec", no_inspect)
    with pytest.raises(AgentError, match=r"pip install 'labreplay\[llm\]'"):
        _client(LOCAL, "http://127.0.0.1:9/v1")


# ---------------------------------------------------------------------- a real small model
@pytest.mark.llm
def test_smollm2_answers_through_openai_api(llm_base_url: str) -> None:
    client = _client("openai-api/local/smollm2", llm_base_url)
    _, record = client.chat(MESSAGES, ACTION_SCHEMA, "action")
    assert record["error"] is None and (record["prompt_tokens"] or 0) > 0


def test_anthropic_through_inspect_reaches_the_messages_api_and_records_what_it_sent(
    tmp_path: Path,
) -> None:
    """`anthropic/MODEL` through inspect_ai's anthropic provider against a local stand-in of
    the Messages API: the same URL as the native `--provider anthropic` path for the same
    `--base-url`, the key only in its header, usage with cache reads and writes priced, and
    provenance that says temperature was not sent (inspect's provider sends none)."""
    pytest.importorskip("anthropic", reason="inspect's anthropic provider needs `anthropic`")
    from tests.agents.test_llm_providers import PICK, TALK, MessagesServer, message

    key = "sk-ant-inspect-0123456789abcdef0123456789"
    reply = message('{"pick": "b"}', cache_read_input_tokens=1000, cache_creation_input_tokens=200)
    with MessagesServer([(200, reply, {})]) as server, Store(tmp_path / "s.sqlite") as db:
        client = _client("anthropic/claude-sonnet-4-5", server.base_url, api_key=key, cache=db)
        got = client.complete_json(TALK, PICK)
    assert got.value == {"pick": "b"}
    ((path, headers, body),) = server.seen
    assert path == "/v1/messages"  # base URL given with /v1, as on the native path
    lower = {name.lower(): value for name, value in headers.items()}
    assert lower.get("x-api-key") == key or lower.get("authorization") == f"Bearer {key}", lower
    assert body["system"][0]["text"] == "You pick."
    assert not {"temperature", "top_p", "seed"} & set(body)
    (call,) = got.calls
    assert call["prompt_tokens"] == 1230 and call["cached_tokens"] == 1000
    assert call["cache_write_tokens"] == 200 and call["finish_reason"] == "stop"
    usd = (30 * 3.0 + 1000 * 0.3 + 200 * 3.75 + 9 * 15.0) / 1e6  # built-in claude-sonnet-4-5
    assert call["cost_usd"] == pytest.approx(usd)
    params = client.params()
    assert params["layer"] == "inspect_ai" and params["provider"] == "anthropic"
    assert str(params["temperature"]).startswith("not sent")
    assert str(params["sampling_seed"]).startswith("not sent")
    assert key not in json.dumps(params)
    assert key.encode() not in (tmp_path / "s.sqlite").read_bytes()


# ---------------------------------------------------------------------- (e) Google's Gemini API
def gemini_reply(text: str) -> dict[str, Any]:
    """One candidate of Google's Gemini API (`models/{model}:generateContent`), in its usage
    form: promptTokenCount includes the cached tokens, thoughtsTokenCount apart."""
    return {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 9,
                          "thoughtsTokenCount": 120, "cachedContentTokenCount": 10,
                          "totalTokenCount": 159},
        "modelVersion": "gemini-2.5-pro-001",
    }  # fmt: skip


def test_gemini_through_inspect_thinks_within_its_budget_and_records_what_it_sent(
    tmp_path: Path,
) -> None:
    """`google/gemini-2.5-pro` (thinks by default) through inspect_ai's google provider: the
    reply budget has room for the thinking (maxOutputTokens = reply budget + the reasoning
    budget, which caps the thinking), usage with the cached share, no seed sent and
    provenance saying so, the key in its header only."""
    pytest.importorskip("google.genai", reason="inspect's google provider needs google-genai")
    from tests.agents.test_llm_providers import PICK, TALK, MessagesServer

    key = "AIza-inspect-test-0123456789abcdef012345"
    # the same scripted JSON stand-in as Anthropic's, at its root (the SDK adds /v1beta/...)
    with (
        MessagesServer([(200, gemini_reply('{"pick": "b"}'), {})]) as server,
        Store(tmp_path / "s.sqlite") as db,
    ):
        root = server.base_url.removesuffix("/v1")
        client = _client("google/gemini-2.5-pro", root, api_key=key, cache=db)
        client.reseed(5)
        got = client.complete_json(TALK, PICK)
    assert got.value == {"pick": "b"}
    ((path, headers, body),) = server.seen
    assert path.endswith("/models/gemini-2.5-pro:generateContent")
    assert {k.lower(): v for k, v in headers.items()}.get("x-goog-api-key") == key
    config = body["generationConfig"]
    budget = config["thinkingConfig"]  # the SDK's spelling: thinking_budget or thinkingBudget
    thinking = budget.get("thinkingBudget", budget.get("thinking_budget"))
    assert thinking == client.params()["reasoning_tokens"] > 0
    assert config["maxOutputTokens"] > thinking and "seed" not in config
    assert body["systemInstruction"]["parts"][0]["text"] == "You pick."
    (call,) = got.calls
    assert call["prompt_tokens"] == 30 and call["cached_tokens"] == 10
    assert call["resolved_model"] == "gemini-2.5-pro-001" and call["error"] is None
    params = client.params()
    assert params["layer"] == "inspect_ai" and params["provider"] == "google"
    assert str(params["sampling_seed"]).startswith("not sent")
    assert (
        key not in json.dumps(params) and key.encode() not in (tmp_path / "s.sqlite").read_bytes()
    )
