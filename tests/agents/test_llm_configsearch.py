"""The configsearch LLM optimiser (`--agent openai:MODEL`) against local test servers: it takes
the one LLM option set, suggests only untried candidates, and an endpoint whose every call fails
makes the run failed and unranked (exit 1), with every call accounted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from labreplay.suites.configsearch.cli import app
from labreplay.testing.fault_server import StubServer, constant, error_reply, garbage_body
from labreplay.testing.schema_server import SchemaAnswerer

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "references" / "configsearch"


def _replay(base_url: str, *extra: str) -> tuple[int, str]:
    # band gap has degenerate (all-metal) test folds in every configuration: not scored
    ref = sorted(RECORDED.glob("refractive_index__*.json.gz"))
    if not ref:
        pytest.skip("no recorded reference files")
    args = ["replay", "--references", str(ref[0]), "--seeds", "2", "--budget", "4"]
    llm = ["--agent", "openai:frontier", "--base-url", base_url, "--timeout", "5"]
    result = CliRunner().invoke(app, [*args, *llm, "--max-retries", "0", "--json", *extra])
    return result.exit_code, result.output


def test_llm_optimiser_suggests_untried_candidates_and_accounts_its_calls() -> None:
    with StubServer(SchemaAnswerer()) as server:
        code, out = _replay(server.base_url)
        prompts = [r.body for r in server.chat_requests if r.body]
    assert code == 0, out
    (row,) = json.loads(out)
    agent = row["agent"]
    assert agent["status"] == "complete" and agent["ranked"] and agent["invalid_steps"] == 0
    # Two seeds, one call per step after the shared initial design (3 of 4 steps).
    usage = agent["llm_usage"]
    assert usage["calls"] == len(prompts) == 2 * (4 - 3) and usage["failed_calls"] == 0
    assert usage["prompt_tokens"] > 0 and usage["resolved_models"]
    text = prompts[0]["messages"][1]["content"]
    assert "UNTRIED CANDIDATES" in text and "TRIALS" in text


def test_llm_optimiser_on_a_garbage_endpoint_is_failed_and_unranked() -> None:
    with StubServer(constant(garbage_body())) as server:
        code, out = _replay(server.base_url)
    assert code == 1, out
    (row,) = json.loads(out)
    agent = row["agent"]
    assert agent["status"] == "failed" and not agent["ranked"]
    assert agent["llm_usage"]["calls"] == agent["llm_usage"]["failed_calls"] > 0
    assert agent["invalid_steps"] == 2  # every suggestion failed: recorded, never a crash
    assert agent["cause"].startswith("model calls failed: every model call failed; first:")


def test_an_llm_optimiser_whose_every_call_is_refused_is_failed_with_that_cause() -> None:
    """Defect: a replay whose every call got HTTP 400 "context length exceeded" (a small local
    model) was reported without its cause."""
    refused = error_reply(400, "the request exceeds the available context size")
    with StubServer(constant(refused)) as server:
        code, out = _replay(server.base_url)
    assert code == 1, out
    agent = json.loads(out)[0]["agent"]
    assert agent["status"] == "failed" and not agent["ranked"]
    assert "HTTP 400" in agent["cause"] and "exceeds the available context size" in agent["cause"]


def test_llm_optimiser_calls_are_priced_from_a_price_file(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"frontier": {"input": 3, "output": 15, "cached_input": 0.3}}))
    with StubServer(SchemaAnswerer()) as server:
        code, out = _replay(server.base_url, "--prices", str(prices))
    assert code == 0, out
    usage = json.loads(out)[0]["agent"]["llm_usage"]
    cached = usage["cached_tokens"]
    fresh = usage["prompt_tokens"] - cached
    expected = (fresh * 3 + cached * 0.3 + usage["completion_tokens"] * 15) / 1e6
    assert usage["cost_usd"] == pytest.approx(expected, abs=1e-6)
