"""LLM runs that are valid, bounded and costed (issue 19), against a local server the tests
start: `labreplay.testing.schema_server` answers every schema it is sent correctly, honours
`max_tokens` like a real server (a reply over it is cut off, finish_reason "length") and reports
usage, provider-cached tokens and a resolved model id. The CLI runs as a subprocess, so exit
codes and output are what a user sees.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.reliability.conftest import run_cli_in_process

from labreplay.agents.llm_budget import reply_tokens, response_budget
from labreplay.store.sqlite import Store
from labreplay.testing.fault_server import StubServer, constant, garbage_body
from labreplay.testing.schema_server import (
    LOOPING,
    RESOLVED_SUFFIX,
    SchemaAnswerer,
    count_tokens,
    instance,
)

pytest.importorskip("openai")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process, its text boards 200 columns wide (the exit code and output a
    user sees, without an interpreter start per call)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("COLUMNS", "200")
        return run_cli_in_process(*args)


@pytest.fixture(scope="module")
def specs(campaign_specs_source: Path) -> Path:
    """The session's `campaign compile` output (tests/conftest.py): runs only read it."""
    return campaign_specs_source


@pytest.fixture(scope="module")
def questions(buchwald_questions: Path) -> Path:
    """The session's `conditions compile --dataset buchwald_hartwig` output: read only."""
    return buchwald_questions


@pytest.fixture
def answerer() -> Iterator[tuple[SchemaAnswerer, StubServer]]:
    responder = SchemaAnswerer()
    with StubServer(responder) as server:
        yield responder, server


def _campaign(specs: Path, store: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "campaign", "run", "--specs", str(specs), "--agent", "openai:frontier", "--base-url",
        url, "--store", str(store), *extra,
    )  # fmt: skip


def test_long_assignment_at_default_settings_has_no_truncated_forecast(
    specs: Path, tmp_path: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    responder, server = answerer
    store = tmp_path / "s.sqlite"
    proc = _campaign(specs, store, server.base_url, "--only", "long-1", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)[0]
    assert result["status"] == "complete"
    assert responder.truncated == 0
    assert all(b["checkpoint_fallbacks"] == 0 for b in result["branches"].values())
    # Every panel request carried a budget derived from its schema (32 rows), not a constant.
    budgets = {r.body["max_tokens"] for r in server.chat_requests if r.body}
    assert max(budgets) > 3000 and len(budgets) > 1
    with Store(store, readonly=True) as db:
        adaptive = next(r for r in db.runs() if r.branch == "adaptive")
        calls = db.llm_calls(adaptive.run_id)
    assert calls and all(c["finish_reason"] == "stop" and not c["parse_error"] for c in calls)
    assert {c["purpose"] for c in calls} == {"policy", "checkpoint"}
    assert {c["resolved_model"] for c in calls} == {f"frontier{RESOLVED_SUFFIX}"}
    assert sum(c["cached_tokens"] for c in calls) > 0
    usage = adaptive.summary["usage"] if adaptive.summary else {}
    assert usage["calls"] == len(calls)
    assert usage["prompt_tokens"] == sum(c["prompt_tokens"] for c in calls)
    # The system is ranked, and its row carries its token totals (JSON and text boards).
    board = run_cli("campaign", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0, board.stderr
    data = json.loads(board.stdout)
    rows = [r for t in data["tables"].values() for r in t["rows"]]
    row = next(r for r in rows if r["system"] == "openai:frontier")
    assert row["rank"] == 1 and row["checkpoint_fallbacks"] == 0
    assert row["prompt_tokens"] > usage["prompt_tokens"]  # the controls called the model too
    assert 0 < row["controls_token_share"] < 1
    text = run_cli("campaign", "leaderboard", "--store", str(store), "--price-per-mtok", "2.5,10")
    assert "prompt +" in text.stdout and "cost" in text.stdout, text.stdout
    out = tmp_path / "report"
    report = run_cli("report", "--store", str(store), "--out", str(out))
    assert report.returncode == 0, report.stderr
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "campaign-costs" in html and f"frontier{RESOLVED_SUFFIX}" in html


def test_a_small_budget_is_cut_off_by_the_server_and_recorded_per_call(
    specs: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    from labreplay.suites.campaign.api import load_specs, select_specs
    from labreplay.suites.campaign.llm_agent import make_agent
    from labreplay.suites.campaign.runner import run_branch

    responder, server = answerer
    spec = select_specs(load_specs(specs), "short-1")[0]
    agent = make_agent("openai:frontier", base_url=server.base_url, max_tokens=128, max_repairs=0)
    result = run_branch(spec, agent, 0, "adaptive")
    assert result.metrics["checkpoint_fallbacks"] > 0 and responder.truncated > 0
    cut = [c for c in result.calls if c["finish_reason"] == "length"]
    assert cut and all("cut off at the token limit" in str(c["parse_error"]) for c in cut)


def test_budget_covers_the_largest_valid_reply() -> None:
    from labreplay.suites.campaign.env import panel_schema

    for n in (1, 11, 32, 64):
        schema = panel_schema([f"PG_{i:04d}" for i in range(n)])
        reply = json.dumps(instance(schema), indent=2)  # pretty-printed, as models write
        assert count_tokens(reply) <= reply_tokens(schema) < response_budget(schema)


def test_too_small_max_tokens_is_refused_up_front(
    specs: Path, tmp_path: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    _, server = answerer
    store = tmp_path / "s.sqlite"
    proc = _campaign(specs, store, server.base_url, "--only", "long-1", "--max-tokens", "512")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "needs at least" in proc.stderr and "32-query panel" in proc.stderr
    assert not store.exists() and server.chat_requests == []


def test_a_looping_policy_stops_at_its_cap_failed_with_calls_recorded(
    specs: Path, tmp_path: Path
) -> None:
    store = tmp_path / "s.sqlite"
    with StubServer(SchemaAnswerer(LOOPING)) as server:
        proc = _campaign(specs, store, server.base_url, "--only", "short-1")
        sent = len(server.chat_requests)
    assert proc.returncode == 1, proc.stderr
    assert "cap reached: policy turns per experiment" in proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()
        assert run.status == "failed" and run.summary is not None
        assert run.summary["cap_reached"].startswith("policy turns per experiment")
        assert run.summary["caps"]["policy_turns_per_branch"] > 0
        assert len(db.llm_calls(run.run_id)) == sent == run.summary["usage"]["calls"]
    board = run_cli("campaign", "leaderboard", "--store", str(store), "--json")
    ranked = [r for t in json.loads(board.stdout)["tables"].values() for r in t["rows"]]
    assert not any(r.get("rank") for r in ranked)


def test_max_calls_ends_the_run_failed_and_a_higher_cap_resumes_it(
    specs: Path, tmp_path: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    _, server = answerer
    store = tmp_path / "s.sqlite"
    capped = _campaign(specs, store, server.base_url, "--only", "short-1", "--max-calls", "10")
    assert capped.returncode == 1 and "cap reached: --max-calls 10" in capped.stderr
    assert len(server.chat_requests) == 10
    again = _campaign(specs, store, server.base_url, "--only", "short-1", "--json")
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)[0]
    assert result["status"] == "complete"
    assert result["usage"]["adaptive"]["cached_calls"] == 10  # the spent calls were not repeated


def test_dry_run_calls_nothing_and_estimates_tokens(
    specs: Path, tmp_path: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    _, server = answerer
    store = tmp_path / "s.sqlite"
    proc = _campaign(specs, store, server.base_url, "--only", "short-1", "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    estimate = json.loads(proc.stdout)
    assert server.chat_requests == [] and not store.exists()
    play = estimate["plays"][0]  # the stand-in that inspects nothing
    assert estimate["dry_run"] and play["total"]["prompt_tokens"] > 0
    branches = play["assignments"][0]["branches"]
    assert set(branches) == {"adaptive", "random", "no-evidence"}
    assert "\nCAMPAIGN (the same all campaign long):\n" in branches["adaptive"]["first_prompt"]
    # it names what it estimated: the partition seed(s) of the assignments and the run seed
    assert estimate["partition_seeds"] == [play["assignments"][0]["partition_seed"]] == [0]
    assert estimate["seed"] == 0
    # The estimate's calls are what a run against a model that answers like the stand-in makes.
    real = _campaign(specs, store, server.base_url, "--only", "short-1", "--json")
    made = json.loads(real.stdout)[0]["usage"]
    assert sum(u["calls"] for u in made.values()) == play["total"]["calls"]
    text = _campaign(specs, store, server.base_url, "--only", "short-1", "--dry-run")
    assert "DRY RUN (no model called)" in text.stdout and "prompt +" in text.stdout
    assert "1 assignments (partition seed(s) 0; run seed 0)" in " ".join(text.stdout.split())
    assert "UPPER BOUND (an agent that spends everything" in " ".join(text.stdout.split())


def test_conditions_subset_runs_and_a_garbage_endpoint_fails_unranked(
    questions: Path, tmp_path: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    _, server = answerer
    store = tmp_path / "c.sqlite"
    argv = ["conditions", "run", "--questions", str(questions), "--agent", "openai:frontier"]
    ok = run_cli(*argv, "--base-url", server.base_url, "--limit", "20", "--store", str(store))
    assert ok.returncode == 0, ok.stderr
    assert "invalid answers 0" in ok.stdout and "20 calls" in ok.stdout
    assert len(server.chat_requests) == 20
    with StubServer(constant(garbage_body())) as garbage:
        bad = run_cli(
            *argv, "--base-url", garbage.base_url, "--limit", "20", "--store", str(store),
            "--max-retries", "0", "--seed", "1",
        )  # fmt: skip
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "every model call failed" in bad.stderr and garbage.base_url in bad.stderr
    board = json.loads(run_cli("conditions", "leaderboard", "--store", str(store), "--json").stdout)
    assert [r["seed"] for r in board["runs"]] == [0]  # only the good run is on the board
    assert board["runs"][0]["prompt_tokens"] > 0
    with Store(store, readonly=True) as db:
        failed = [r for r in db.runs() if r.status == "failed"]
        assert len(failed) == 1 and len(db.llm_calls(failed[0].run_id)) == 20
    out = tmp_path / "report"
    report = run_cli("report", "--store", str(store), "--out", str(out))
    assert report.returncode == 0, report.stderr
    html = (out / "index.html").read_text(encoding="utf-8")
    panel = html[html.index('id="conditions-costs"') :]
    assert f"frontier{RESOLVED_SUFFIX}" in panel and "failed (not ranked)" in panel


def test_conditions_cap_fails_the_run_with_every_call_accounted(
    questions: Path, tmp_path: Path, answerer: tuple[SchemaAnswerer, StubServer]
) -> None:
    _, server = answerer
    store = tmp_path / "c.sqlite"
    argv = ["conditions", "run", "--questions", str(questions), "--agent", "openai:frontier"]
    proc = run_cli(
        *argv, "--base-url", server.base_url, "--limit", "20", "--store", str(store),
        "--max-calls", "5", "--max-concurrency", "1",
    )  # fmt: skip
    assert proc.returncode == 1 and "cap reached: --max-calls 5" in proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()
        assert run.status == "failed"
        assert len(db.llm_calls(run.run_id)) == len(server.chat_requests) == 5
    dry = run_cli(*argv, "--base-url", server.base_url, "--limit", "20", "--store", str(store),
                  "--dry-run", "--json")  # fmt: skip
    assert dry.returncode == 0 and json.loads(dry.stdout)["calls"] == 20
    assert len(server.chat_requests) == 5
    ceiling = json.loads(dry.stdout)["upper_bound"]  # 1 + 2 repairs per question, at most
    assert (
        ceiling["calls"] == 60
        and ceiling["prompt_tokens"] > json.loads(dry.stdout)["prompt_tokens"] * 3
    )


def test_empty_choices_and_non_json_content_are_failed_calls_naming_the_endpoint() -> None:
    from labreplay.agents.base import call_failures
    from labreplay.agents.llm_client import LLMClient
    from labreplay.agents.llm_config import RetryPolicy
    from labreplay.testing.fault_server import StubReply, ok

    empty = StubReply(
        200, json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
    )
    fast = RetryPolicy(max_retries=0)
    for reply, expected in ((empty, "malformed response"), (ok("plain words"), "no JSON object")):
        with StubServer(constant(reply)) as server:
            client = LLMClient("m", base_url=server.base_url, retry=fast, max_repairs=0)
            got = client.complete_json([{"role": "user", "content": "x"}], {"type": "object"})
            (call,) = got.calls
            assert expected in str(call.get("error") or call.get("parse_error"))
            assert call_failures(got.calls)["all_failed"]
            if call.get("error"):
                assert server.base_url in str(call["error"])


def test_a_store_from_before_the_accounting_columns_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE llm_calls")
    conn.execute(
        "CREATE TABLE llm_calls (run_id TEXT NOT NULL, call_index INTEGER NOT NULL, "
        "request_hash TEXT NOT NULL, model TEXT, prompt_tokens INTEGER, completion_tokens "
        "INTEGER, latency_s REAL, finish_reason TEXT, retries INTEGER, error TEXT, cached "
        "INTEGER, PRIMARY KEY (run_id, call_index))"
    )
    conn.execute("INSERT INTO llm_calls VALUES ('r', 0, 'h', 'm', 1, 2, 0.1, 'stop', 0, NULL, 0)")
    conn.commit()
    conn.close()
    with Store(path, readonly=True) as db:  # read as it is
        assert db.llm_calls("r")[0]["prompt_tokens"] == 1
    with Store(path) as db:  # upgraded in place on a writable open
        db.record_llm_calls("r", [{"call_index": 1, "request_hash": "h", "cached_tokens": 5}])
        rows: list[dict[str, Any]] = db.llm_calls("r")
    assert rows[0]["cached_tokens"] is None and rows[1]["cached_tokens"] == 5


def test_progress_line_reports_calls_retries_and_time() -> None:
    import io

    from labreplay.agents.llm_progress import CallProgress

    stream = io.StringIO()
    with CallProgress("openai:m", every_s=0.05, stream=stream) as progress:
        progress.retry("request timed out")
        progress.call({"error": None})
        import time

        time.sleep(0.3)
    line = stream.getvalue().splitlines()[0]
    assert "1 calls done" in line and "1 retries" in line and "request timed out" in line
