"""Reasoning models run, and time is bounded (issue 35, first part), against local servers the
tests start on 127.0.0.1: `fault_server.reasoning_endpoint` refuses `max_tokens` and any
temperature but 1 the way OpenAI's o-series and GPT-5 do, `schema_server.SchemaAnswerer` answers
every schema (optionally spending hidden reasoning tokens out of the budget first), and
`fault_server.hung` never answers. The CLI runs as a subprocess, so exit codes, timings and
output are what a user sees.
"""

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

from labreplay.agents.llm_caps import CapMeter, RunCaps
from labreplay.agents.llm_client import CIRCUIT_LIMIT, AsyncLLMClient, LLMClient
from labreplay.agents.llm_config import (
    DEFAULT_REASONING_TOKENS,
    RetryPolicy,
    is_reasoning_model,
)
from labreplay.runtime.failure import TIME_CAP
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.llm_agent import make_agent
from labreplay.testing import fault_server as stub
from labreplay.testing.schema_server import SchemaAnswerer

pytest.importorskip("openai")

OBSERVATION: dict[str, Any] = {
    "phase": "select",
    "rules": "Pick one experiment or stop.",
    "action_schema": ACTION_SCHEMA,
    "state": {"budgets_left": {"experiments": 2}, "candidates": ["PG_0001", "PG_0002"]},
    "last_result": None,
    "step": 0,
}
GOOD = '{"type": "select_experiment", "experiment_id": "PG_0002"}'
MESSAGES = [{"role": "user", "content": "answer"}]
NEW_PARAMS = {"token_param", "reasoning_tokens", "reasoning_effort"}


# How long after --max-time a capped run may take to exit: the issue's own margin.
CAP_MARGIN_S = 10.0


def run_cli(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    child = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child,
        check=False,
    )


@pytest.fixture(scope="module")
def specs(campaign_specs_source: Path) -> Path:
    """The session's `campaign compile` output (tests/conftest.py): runs only read it."""
    return campaign_specs_source


@pytest.fixture
def reasoning() -> Iterator[tuple[SchemaAnswerer, stub.StubServer]]:
    """A reasoning model's endpoint that spends 300 hidden tokens before each reply."""
    answerer = SchemaAnswerer(reasoning_tokens=300)
    with stub.StubServer(stub.reasoning_endpoint(answerer)) as server:
        yield answerer, server


class FirstRequest:
    """Wraps a responder and notes when the first chat request arrived: the time a run takes
    is measured from there, not from the start of a CLI process (loading data on a busy CI
    machine can take longer than the cap itself)."""

    def __init__(self, inner: stub.Responder) -> None:
        self.inner = inner
        self.at: float | None = None

    def __call__(self, request: stub.SeenRequest, n: int) -> stub.StubReply:
        if self.at is None:
            self.at = time.monotonic()
        return self.inner(request, n)

    def since(self) -> float:
        assert self.at is not None, "no request arrived"
        return time.monotonic() - self.at


def _campaign(specs: Path, store: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "campaign", "run", "--specs", str(specs), "--base-url", url, "--store", str(store),
        "--only", "short-1", *extra,
    )  # fmt: skip


# ---------------------------------------------------------------------- request parameters
def test_reasoning_model_names() -> None:
    for name in ("o1", "o1-mini", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5.1"):
        assert is_reasoning_model(name) and is_reasoning_model(f"openai/{name}"), name
    for name in (
        "gpt-4o-mini",
        "gpt-4.1",
        "ollama3",
        "smollm2",
        "o",
        "omni",
        "gpt-50x",
        "frontier",
    ):
        assert not is_reasoning_model(name), name


def test_an_ordinary_model_sends_the_same_request_and_provenance_as_before() -> None:
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        agent = make_agent("openai:gpt-4o-mini", base_url=server.base_url)
        agent.reset(7)
        assert agent.act(OBSERVATION)["type"] == "select_experiment"
        (seen,) = server.chat_requests
    body = seen.body or {}
    assert set(body) == {
        "model",
        "messages",
        "temperature",
        "seed",
        "max_tokens",
        "response_format",
    }
    assert body["temperature"] == 0.0
    params = agent.params()
    assert not NEW_PARAMS & set(params) and "max_retry_wait_s" not in params["retry"]
    assert params["temperature"] == 0.0
    (call,) = agent.drain_calls()
    assert "token_param" not in call and call["max_tokens"] == body["max_tokens"]


def test_a_reasoning_model_by_name_gets_its_fields_and_a_reasoning_budget(
    reasoning: tuple[SchemaAnswerer, stub.StubServer],
) -> None:
    _, server = reasoning
    agent = make_agent("openai:o3-mini", base_url=server.base_url, reasoning_effort="low")
    agent.reset(7)
    assert agent.act(OBSERVATION)["type"] == "select_experiment"
    (seen,) = server.chat_requests  # accepted at once: no refusal, no retry
    body = seen.body or {}
    assert "max_tokens" not in body and "temperature" not in body
    assert body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] > DEFAULT_REASONING_TOKENS
    (call,) = agent.drain_calls()
    assert call["error"] is None and call["finish_reason"] == "stop"
    assert call["token_param"] == "max_completion_tokens"
    assert call["max_tokens"] == body["max_completion_tokens"]
    params = agent.params()
    assert params["token_param"] == "max_completion_tokens"
    assert params["reasoning_effort"] == "low" and params["temperature"] is None
    assert params["reasoning_tokens"] == DEFAULT_REASONING_TOKENS


def test_a_temperature_the_user_sets_is_sent_even_to_a_reasoning_model() -> None:
    with stub.StubServer(stub.constant(stub.ok(GOOD))) as server:
        agent = make_agent("openai:o3", base_url=server.base_url, temperature=1.0)
        agent.reset(7)
        agent.act(OBSERVATION)
        (seen,) = server.chat_requests
    assert (seen.body or {})["temperature"] == 1.0


def test_without_room_for_reasoning_every_reply_is_cut_off(
    reasoning: tuple[SchemaAnswerer, stub.StubServer],
) -> None:
    """The failure the reasoning budget prevents: hidden tokens spend the action budget."""
    answerer, server = reasoning
    agent = make_agent(
        "openai:o3-mini", base_url=server.base_url, reasoning_tokens=0, max_repairs=0
    )
    agent.reset(7)
    action = agent.act(OBSERVATION)
    assert action["type"] == "invalid" and "cut off" in action["error"]
    assert answerer.truncated == 1


def test_a_server_refusing_max_tokens_is_asked_again_with_max_completion_tokens_once(
    reasoning: tuple[SchemaAnswerer, stub.StubServer],
) -> None:
    """A reasoning model under a name we do not know: one 400, then every request (of this
    and of later clients in the process) carries max_completion_tokens and no temperature."""
    _, server = reasoning
    agent = make_agent("openai:frontier-thinker", base_url=server.base_url)
    agent.reset(7)
    assert agent.params().get("token_param") is None  # configured: the ordinary field
    for _ in range(3):
        assert agent.act(OBSERVATION)["type"] == "select_experiment"
    bodies = [r.body or {} for r in server.chat_requests]
    assert len(bodies) == 4 and "max_tokens" in bodies[0]
    assert all("max_completion_tokens" in b and "temperature" not in b for b in bodies[1:])
    assert bodies[1]["max_completion_tokens"] > DEFAULT_REASONING_TOKENS  # room for reasoning
    calls = agent.drain_calls()
    assert [c["error"] for c in calls] == [None] * 3 and all(c["retries"] == 0 for c in calls)
    assert {c.get("token_param") for c in calls} == {"max_completion_tokens"}
    later = make_agent("openai:frontier-thinker", base_url=server.base_url)
    later.reset(8)
    assert later.act(OBSERVATION)["type"] == "select_experiment"
    assert len(server.chat_requests) == 5  # learnt once per process: no second refusal
    last = server.chat_requests[-1].body or {}
    assert "temperature" not in last and last["max_completion_tokens"] > DEFAULT_REASONING_TOKENS


def test_concurrent_requests_refused_for_max_tokens_each_switch_and_succeed(
    reasoning: tuple[SchemaAnswerer, stub.StubServer],
) -> None:
    """The conditions path: questions in flight together are all refused once at most, then
    all answered; no call failed and none counted a retry."""
    _, server = reasoning
    from labreplay.suites.conditions.llm_agent import make_question_agent

    agent = make_question_agent("openai:deep-thinker", base_url=server.base_url)
    agent.reset(3)
    assert agent.concurrent is not None
    replies = agent.concurrent.run_many([(MESSAGES, ACTION_SCHEMA)] * 6, "answer")
    assert all(r.ok for r in replies)
    calls = [c for r in replies for c in r.calls]
    assert all(c["error"] is None and c["retries"] == 0 for c in calls)
    assert {c.get("token_param") for c in calls} == {"max_completion_tokens"}
    refused = [r for r in server.chat_requests if "max_tokens" in (r.body or {})]
    assert 1 <= len(refused) <= 4  # at most the requests in flight before the first refusal
    assert len(server.chat_requests) == 6 + len(refused)


def test_a_forced_max_tokens_is_not_switched(
    reasoning: tuple[SchemaAnswerer, stub.StubServer],
) -> None:
    _, server = reasoning
    agent = make_agent("openai:o3", base_url=server.base_url, token_param="max_tokens")
    agent.reset(7)
    action = agent.act(OBSERVATION)
    assert action["type"] == "invalid" and "HTTP 400" in action["error"]
    assert len(server.chat_requests) == 1


# ---------------------------------------------------------------------- Retry-After
def test_retry_after_beyond_the_old_8_s_cap_is_honoured() -> None:
    """A 429 asking for 20 s (the issue's case; the former cap was 8 s) is waited out and the
    call succeeds. The client's wait is a recorder: the test checks the wait asked for (over the
    8 s jittered back-off), not 20 s of its own time."""
    replies = [stub.rate_limited(20), stub.ok(GOOD)]
    with stub.StubServer(stub.scripted(replies)) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=RetryPolicy(timeout_s=5.0))
        waits: list[float] = []
        client.wait = waits.append
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
    assert reply.ok and reply.calls[0]["retries"] == 1 and reply.calls[0]["error"] is None
    assert waits == [20.0] and len(server.chat_requests) == 2


def test_retry_after_over_the_declared_maximum_fails_at_once_saying_why() -> None:
    with stub.StubServer(stub.constant(stub.rate_limited(30))) as server:
        policy = RetryPolicy(timeout_s=5.0, max_retry_wait_s=5.0)
        client = LLMClient("stub", base_url=server.base_url, retry=policy)
        waits: list[float] = []
        client.wait = waits.append
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        assert waits == [] and len(server.chat_requests) == 1  # refused at once: no wait
    error = str(reply.calls[0]["error"])
    assert error.startswith("HTTP 429") and "asked to wait 30 s, over --max-retry-wait 5 s" in error
    assert client.params()["retry"]["max_retry_wait_s"] == 5.0


# ---------------------------------------------------------------------- time
def test_timeouts_count_toward_the_circuit_breaker() -> None:
    """A hung endpoint costs CIRCUIT_LIMIT timed-out calls, not every call's retries."""
    policy = RetryPolicy(max_retries=0, timeout_s=0.5)
    with stub.StubServer(stub.constant(stub.hung())) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=policy)
        records = [client.chat(MESSAGES, ACTION_SCHEMA)[1] for _ in range(CIRCUIT_LIMIT + 2)]
        # at most CIRCUIT_LIMIT reach the server (on a loaded machine a request may time out
        # before the server has read it: fewer, never more)
        assert 1 <= len(server.chat_requests) <= CIRCUIT_LIMIT
    errors = [str(r.get("error")) for r in records]
    assert all("timed out" in e for e in errors[:CIRCUIT_LIMIT])
    assert all(e.startswith("not sent") and "timed out" in e for e in errors[CIRCUIT_LIMIT:])


def test_max_call_time_is_a_wall_clock_deadline_on_a_call_with_its_retries() -> None:
    """At defaults a hung call gets a 60 s timeout and 180 s with its retries; a 1 s call
    deadline ends its request and retries at 1 s."""
    with stub.StubServer(stub.constant(stub.hung())) as server:
        client = make_agent("openai:x", base_url=server.base_url, call_time_s=1.0).client
        client.reseed(0)
        started = time.monotonic()
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 10.0 and reply.cap_reached is None  # not the 60 s timeout
    (call,) = reply.calls
    assert "timed out" in str(call["error"]) and "total retry time 1s" in str(call["error"])
    assert client.params()["retry"]["call_time_s"] == 1.0


def test_an_answer_trickled_byte_by_byte_is_ended_by_the_wall_clock() -> None:
    """Each byte arrives well within the timeout, the whole answer would take ~30 s: a
    concurrent request is ended at its timeout all the same, as a timeout."""
    policy = RetryPolicy(max_retries=0, timeout_s=0.5)
    with stub.StubServer(stub.constant(stub.trickled(GOOD, every_s=0.1))) as server:
        client = AsyncLLMClient("stub", base_url=server.base_url, retry=policy)
        started = time.monotonic()  # after the client: its first import of inspect is slow
        (reply,) = client.run_many([(MESSAGES, ACTION_SCHEMA)], "action")
        elapsed = time.monotonic() - started
    assert elapsed < 10.0 and not reply.ok  # not the ~30 s trickle
    assert str(reply.calls[0]["error"]).startswith("request timed out")


def test_a_trickled_answer_to_the_blocking_client_ends_at_its_timeout_too() -> None:
    """The blocking client's request runs on inspect's event loop under the same wall-clock
    deadline (the SDK's read timeout alone would let a trickle run ~30 s)."""
    policy = RetryPolicy(max_retries=0, timeout_s=0.5)
    with stub.StubServer(stub.constant(stub.trickled(GOOD, every_s=0.1))) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=policy)
        started = time.monotonic()
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        elapsed = time.monotonic() - started
    assert elapsed < 10.0 and not reply.ok  # not the ~30 s trickle
    assert str(reply.calls[0]["error"]).startswith("request timed out")


def test_the_time_cap_stops_a_call_in_flight() -> None:
    """--max-time ends the run's requests and retry waits: a hung call (60 s timeout, 180 s of
    retries) stops at the cap, recorded as stopped by it, and the reply names the cap."""
    with stub.StubServer(stub.constant(stub.hung())) as server:
        client = LLMClient("stub", base_url=server.base_url, meter=CapMeter(RunCaps(max_time_s=1)))
        client.reseed(0)
        started = time.monotonic()
        reply = client.complete_json(MESSAGES, ACTION_SCHEMA, "action")
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 10.0  # not the 60 s timeout
    assert reply.cap_reached is not None and reply.cap_reached.startswith(
        "cap reached: --max-time 1"
    )
    (call,) = reply.calls
    assert str(call["error"]).startswith(f"{TIME_CAP} --max-time 1 reached")
    assert "timed out" in str(call["error"])


def test_the_time_cap_stops_concurrent_calls_in_flight() -> None:
    with stub.StubServer(stub.constant(stub.hung())) as server:
        meter = CapMeter(RunCaps(max_time_s=1))
        client = AsyncLLMClient("stub", base_url=server.base_url, meter=meter, max_concurrency=3)
        client.reseed(0)
        started = time.monotonic()
        replies = client.run_many([(MESSAGES, ACTION_SCHEMA)] * 5, "answer")
        elapsed = time.monotonic() - started
    assert elapsed < 10.0  # not the 60 s timeout
    assert all(r.cap_reached and "--max-time 1" in r.cap_reached for r in replies)
    assert len(server.chat_requests) == 3  # the other two were never admitted


# ---------------------------------------------------------------------- the CLI
def test_a_campaign_against_a_reasoning_endpoint_completes_with_no_failed_call(
    specs: Path, tmp_path: Path, reasoning: tuple[SchemaAnswerer, stub.StubServer]
) -> None:
    answerer, server = reasoning
    store = tmp_path / "s.sqlite"
    proc = _campaign(specs, store, server.base_url, "--agent", "openai:frontier-thinker", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)[0]
    assert result["status"] == "complete"
    refused = [r for r in server.chat_requests if "max_tokens" in (r.body or {})]
    assert len(refused) == 1 and answerer.truncated == 0
    with Store(store, readonly=True) as db:
        adaptive = next(r for r in db.runs() if r.branch == "adaptive")
        calls = db.llm_calls(adaptive.run_id)
    assert calls and not any(c["error"] or c["parse_error"] for c in calls)
    assert all(c["max_tokens"] > DEFAULT_REASONING_TOKENS for c in calls)
    usage = adaptive.summary["usage"] if adaptive.summary else {}
    assert usage["failed_calls"] == 0 and usage["truncated_replies"] == 0
    assert usage["max_completion_tokens_calls"] == usage["calls"] == len(calls)


def test_an_endpoint_that_hangs_mid_campaign_stops_at_max_time_failed_with_the_cap_as_cause(
    specs: Path, tmp_path: Path
) -> None:
    """At defaults a hung request waits 60 s and its retries 180 s; --max-time 3 ends the
    run at 3 s: the request in flight is cut, the run is failed with the cap as its cause."""
    answerer = SchemaAnswerer()

    def answers_then_hangs(request: stub.SeenRequest, n: int) -> stub.StubReply:
        return answerer(request, n) if n < 3 else stub.hung()

    store = tmp_path / "s.sqlite"
    first = FirstRequest(answers_then_hangs)
    with stub.StubServer(first) as server:
        proc = _campaign(specs, store, server.base_url, "--agent", "openai:x", "--max-time", "3")
        elapsed = first.since()
        sent = len(server.chat_requests)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    # The margin (--max-time 30 stops within 40 s): the cap + 10 s, from the first
    # request to the process's exit (a busy machine took 10.5 s under an 8 s bound once).
    assert elapsed < 3 + CAP_MARGIN_S and sent == 4  # 3 answered, 1 hung and cut, none after
    assert "cap reached: --max-time 3" in proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()  # the controls are not run after a failed adaptive branch
        calls = db.llm_calls(run.run_id)
    assert run.status == "failed" and run.summary is not None
    assert run.summary["cap_reached"].startswith("--max-time 3")
    assert [c["error"] is None for c in calls] == [True, True, True, False]
    assert str(calls[-1]["error"]).startswith(f"{TIME_CAP} --max-time 3 reached")
    assert "timed out" in str(calls[-1]["error"])


def test_a_conditions_run_against_a_hung_endpoint_stops_at_max_time(
    tmp_path: Path, buchwald_questions: Path
) -> None:
    questions = buchwald_questions  # read only: the run is limited to its first 8
    store = tmp_path / "c.sqlite"
    first = FirstRequest(stub.constant(stub.hung()))
    with stub.StubServer(first) as server:
        proc = run_cli(
            "conditions", "run", "--questions", str(questions), "--agent", "openai:x",
            "--base-url", server.base_url, "--store", str(store), "--limit", "8",
            "--max-time", "3",
        )  # fmt: skip
        elapsed = first.since()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert elapsed < 3 + CAP_MARGIN_S and "cap reached: --max-time 3" in proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()
        calls = db.llm_calls(run.run_id)
    assert run.status == "failed" and run.summary is not None
    assert str(run.summary.get("cap_reached", "")).startswith("--max-time 3"), run.summary
    assert run.summary["cause_kind"] == TIME_CAP  # the cause named as campaign names it
    assert calls and all(str(c["error"]).startswith(TIME_CAP) for c in calls)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("--max-retry-wait", "100000", "--max-retry-wait"),
        ("--max-retry-wait", "-1", "--max-retry-wait"),
        ("--max-call-time", "0", "--max-call-time"),
        ("--token-param", "max_output_tokens", "--token-param"),
        ("--reasoning-effort", "extreme", "--reasoning-effort"),
        ("--reasoning-tokens", "-5", "--reasoning-tokens"),
    ],
)
def test_absurd_values_are_refused_in_one_line_before_any_store(
    tmp_path: Path, option: str, value: str, said: str
) -> None:
    store = tmp_path / "s.sqlite"
    proc = run_cli(
        "campaign", "run", "--specs", str(tmp_path), "--agent", "openai:o3", "--store",
        str(store), option, value,
    )  # fmt: skip
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not store.exists()


def test_a_family_that_thinks_by_default_gets_room_to_think_and_keeps_its_temperature() -> None:
    """Gemini 2.5, DeepSeek-R1, Grok 4, QwQ reason before every reply: the reply budget gets
    the reasoning budget on top (else the thinking eats it), under the ordinary field, and
    our temperature is still sent (only OpenAI's reasoning models refuse one)."""
    from labreplay.agents.llm_config import thinks_by_default

    assert thinks_by_default("openai-api/vllm/deepseek-ai/DeepSeek-R1")
    assert thinks_by_default("google/gemini-2.5-flash") and thinks_by_default("grok/grok-4")
    assert not thinks_by_default("gemini-2.5-flash-lite") and not thinks_by_default("gpt-4o")
    assert not thinks_by_default("claude-opus-4-1")  # thinks only when asked
    assert thinks_by_default("Qwen3-235B-A22B-Thinking-2507") and thinks_by_default("gpt-oss-20b")
    assert not thinks_by_default("Qwen3-235B-A22B-Instruct-2507")
    assert thinks_by_default("grok-code-fast-1") and thinks_by_default("MiniMax-M2")
    assert not thinks_by_default("DeepSeek-V3.1-non-thinking")
    plain = LLMClient("gpt-4o-mini", base_url="http://127.0.0.1:9/v1", temperature_explicit=False)
    thinker = LLMClient("DeepSeek-R1", base_url="http://127.0.0.1:9/v1", temperature_explicit=False)
    ordinary = plain._request(MESSAGES, ACTION_SCHEMA, "action")
    request = thinker._request(MESSAGES, ACTION_SCHEMA, "action")
    extra = thinker.params()["reasoning_tokens"]
    assert request["max_tokens"] == ordinary["max_tokens"] + extra and extra > 0
    assert request["temperature"] == 0.0 and "max_completion_tokens" not in request


def test_inspect_model_database_tells_which_models_reason() -> None:
    """Names the rules do not list are read from inspect_ai's model database: a reasoning model
    with a default effort thinks by default (Kimi K3, GLM 5.3, DeepSeek V4 Pro, Magistral),
    OpenAI's reasoning models get OpenAI's reasoning request (GPT-6), a model it says does not
    reason does not (even under a family rule), and Claude's default effort is not thinking."""
    from labreplay.agents.llm_config import catalogue_entry, is_reasoning_model, thinks_by_default

    assert catalogue_entry("kimi-k3") == ("Moonshot AI", True, "max")
    for thinker in ("kimi-k3", "openai-api/labreplay/glm-5.3", "deepseek-v4-pro",
                    "magistral-medium-2506"):  # fmt: skip
        assert thinks_by_default(thinker) and not is_reasoning_model(thinker), thinker
    assert is_reasoning_model("gpt-6-sol") and is_reasoning_model("openai/gpt-6-luna")
    assert not thinks_by_default("grok-4-fast-non-reasoning")  # the database: reasoning false
    assert not thinks_by_default("mistral-medium-2604")  # default effort "none"
    assert not thinks_by_default("claude-opus-4-6")  # default effort "adaptive", once asked
    assert catalogue_entry("SmolLM2-135M-Instruct") is None
    assert not thinks_by_default("SmolLM2-135M-Instruct")
    assert not is_reasoning_model("SmolLM2-135M-Instruct")
