"""The one failed-run rule (`labreplay.runtime.failure`), applied by every suite: an agent that
could not act is `failed`, never ranked, with its cause named; garbage answers are recorded
alike in-process and isolated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.runtime.failure import (
    AGENT_RAISED,
    CHECKPOINTS_FAILED,
    MODEL_CALLS_FAILED,
    REPLIES_INVALID,
    TURN_CAP,
    RunHealth,
    cap_kind,
    decision_failed,
    judge,
)
from labreplay.store.sqlite import Store


def _health(ok: int, failed: dict[str, int], checkpoints: tuple[int, int] = (0, 0)) -> RunHealth:
    health = RunHealth()
    for _ in range(ok):
        health.policy(None)
    for cause, n in failed.items():
        for _ in range(n):
            health.policy(cause, f"{cause} detail")
    for k in range(checkpoints[0]):
        health.checkpoint(k < checkpoints[1])
    return health


def test_every_policy_call_failed_is_a_failed_run_with_its_cause() -> None:
    verdict = judge(_health(0, {REPLIES_INVALID: 24}))
    assert verdict.status == "failed" and verdict.kind == REPLIES_INVALID
    assert "every policy call failed (24 of 24)" in str(verdict.cause)


def test_more_than_half_failed_is_failed_and_half_is_not() -> None:
    assert judge(_health(4, {MODEL_CALLS_FAILED: 5})).status == "failed"
    assert judge(_health(5, {MODEL_CALLS_FAILED: 5})).status == "complete"
    mixed = judge(_health(1, {AGENT_RAISED: 2, REPLIES_INVALID: 3}))
    assert mixed.status == "failed" and mixed.kind == REPLIES_INVALID  # the commonest cause


def test_checkpoints_that_fell_back_fail_the_run() -> None:
    verdict = judge(_health(10, {}, checkpoints=(7, 4)))
    assert verdict.status == "failed" and verdict.kind == CHECKPOINTS_FAILED
    assert judge(_health(10, {}, checkpoints=(8, 4))).status == "complete"


def test_a_cap_names_itself_not_a_model_failure() -> None:
    health = _health(12, {})
    health.harness_stop = f"{cap_kind('policy turns 40')}: cap reached: policy turns 40"
    verdict = judge(health)
    assert verdict.kind == TURN_CAP and "model call" not in str(verdict.cause)
    assert cap_kind("--max-time 5") == "time cap"
    assert cap_kind("--max-tokens-total 9") == "token cap"
    # a money cap is named as one (it was "call cap", on the board too)
    assert cap_kind("--max-cost 0.01") == cap_kind("--max-total-cost 5") == "cost cap"
    assert cap_kind("--max-calls 5") == "call cap"


def test_decision_failed_reads_the_last_call() -> None:
    assert decision_failed(None) is None
    assert decision_failed("act() raised ValueError: x") == AGENT_RAISED
    calls = [{"parse_error": "cut off"}, {"error": "HTTP 500"}]
    assert decision_failed("no reply", calls) == MODEL_CALLS_FAILED
    assert decision_failed("no reply", calls[:1]) == REPLIES_INVALID


class GarbageAgent:
    """Answers every action with NaN: no usable decision at all."""

    name = "garbage"

    def params(self) -> dict[str, Any]:
        return {}

    def reset(self, seed: int) -> None:
        pass

    def act(self, observation: Any) -> dict[str, Any]:
        return {"type": "stop", "confidence": float("nan")}

    def forecast(self, snapshot: Any) -> dict[str, Any]:
        from labreplay.suites.campaign.agents import REFERENCE_AGENTS

        return dict(REFERENCE_AGENTS["no-evidence"]().forecast(snapshot))


def test_a_campaign_agent_returning_garbage_is_failed_and_unranked(
    compiled_campaign: Callable[..., Any], tmp_path: Path
) -> None:
    specs = compiled_campaign(record="precursor-genome", seed=0)[1]
    short = [s for s in specs if s.body["assignment"]["id"] == "short-1"]
    (result,) = labreplay.run("campaign", short, GarbageAgent, tmp_path / "g.sqlite")
    assert result["status"] == "failed" and result["cause_kind"] == REPLIES_INVALID
    with Store(tmp_path / "g.sqlite", readonly=True) as store:
        (run,) = store.runs()  # the controls are not run for an agent that could not act
        assert run.status == "failed" and run.summary["cause_kind"] == REPLIES_INVALID
        assert run.summary["policy_failures"] == {REPLIES_INVALID: run.summary["policy_calls"]}
        from labreplay.suites.campaign.leaderboard import leaderboard

        board = leaderboard(store)
    assert not any(r["system"].startswith("garbage") for r in board["rows"])


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("garbage", ["nan", "inf", "none", "object", "raises"])
def test_garbage_answers_are_recorded_alike_in_process_and_isolated(
    question_file: Path, tmp_path: Path, garbage: str
) -> None:
    value = {
        "nan": "{'option': math.nan}",
        "inf": "{'option': math.inf}",
        "none": "None",
        "object": "object()",
        "raises": "(_ for _ in ()).throw(ValueError('boom'))",
    }[garbage]
    (tmp_path / "garbage_agent.py").write_text(
        "import math\n\nclass Garbage:\n    name = 'garbage-answers'\n"
        "    def params(self):\n        return {}\n"
        f"    def answer(self, view):\n        return {value}\n",
        encoding="utf-8",
    )
    records = []
    for mode in ([], ["--isolate"]):
        store = tmp_path / f"{garbage}{len(mode)}.sqlite"
        proc = _cli(
            tmp_path,
            "conditions", "run", "--questions", str(question_file), "--limit", "5",
            "--agent", "garbage_agent:Garbage", "--store", str(store), *mode,
        )  # fmt: skip
        # every answer failed: a failed run, one line, exit 1, no traceback
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr and "could not act" in proc.stderr
        with Store(store, readonly=True) as db:
            (run,) = db.runs()
            assert run.status == "failed"
            records.append(
                # the answers (the header says how the agent ran: it differs by design)
                [
                    json.dumps(e["payload"], sort_keys=True)
                    for e in db.events(run.run_id)
                    if e["kind"] != "header"
                ]
            )
    assert records[0] == records[1]
    assert all("0x" not in r for r in records[0])


def test_a_failed_run_is_removed_redone_and_verify_says_what_was_superseded(
    compiled_campaign: Callable[..., Any], tmp_path: Path
) -> None:
    from labreplay.cli.main import run as cli
    from labreplay.store.verify import verify_store

    specs = compiled_campaign(record="precursor-genome", seed=0)[1]
    short = [s for s in specs if s.body["assignment"]["id"] == "short-2"]
    path = tmp_path / "r.sqlite"
    labreplay.run("campaign", short, GarbageAgent, path)
    labreplay.run("campaign", short, "bayes", path, controls=("no-evidence",))
    before = path.read_bytes()
    # a selector that matches nothing, or none at all: one line, exit 2, nothing changed
    assert cli(["store", "remove", "--store", str(path), "--agent", "nobody"]) == 2
    assert cli(["store", "remove", "--store", str(path)]) == 2
    assert path.read_bytes() == before
    assert cli(["store", "remove", "--store", str(path), "--status", "failed", "--json"]) == 0
    with Store(path, readonly=True) as store:
        assert {r.agent for r in store.runs()} == {"bayes"}  # the failed run alone went
        report = verify_store(store)
    assert report.ok and [r["agent"] for r in report.superseded] == ["garbage"]
    assert report.superseded[0]["status"] == "failed"
    # removing the adaptive run takes the controls that hang from it
    assert cli(["store", "remove", "--store", str(path), "--agent", "bayes"]) == 0
    with Store(path, readonly=True) as store:
        assert store.runs() == [] and len(verify_store(store).superseded) == 3
    again = labreplay.run("campaign", short, "bayes", path, controls=("no-evidence",))
    assert again[0]["status"] == "complete"


def test_an_llm_run_whose_every_policy_reply_is_cut_off_is_failed_and_unranked(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    """The reasoning-model case: every action reply cut off at the token limit (no JSON),
    every forecast answered. Not every model call failed, yet the agent never acted: failed,
    exit 1, unranked, cause `replies invalid` (it was complete and ranked #1)."""
    from labreplay.testing.fault_server import SeenRequest, StubReply, StubServer, ok
    from labreplay.testing.schema_server import SchemaAnswerer

    answerer = SchemaAnswerer()

    def respond(request: SeenRequest, n: int) -> StubReply:
        schema = json.dumps((request.body or {}).get("response_format") or {})
        if "forecasts" in schema:
            return answerer(request, n)
        return ok('{"type": "select_exp', finish_reason="length")

    specs = campaign_specs_source  # `campaign compile` at its defaults, once per test run
    store = tmp_path / "llm.sqlite"
    with StubServer(respond, model="stub") as server:
        proc = _cli(
            tmp_path,
            "campaign", "run", "--specs", str(specs), "--only", "short-1", "--store",
            str(store), "--agent", "openai:stub", "--base-url", server.base_url,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "replies invalid" in proc.stderr, proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()
        assert run.status == "failed" and run.summary["cause_kind"] == REPLIES_INVALID
        assert run.summary["checkpoints"] >= 1 and run.summary["checkpoint_failures"] == 0
    board = _cli(tmp_path, "campaign", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0 and json.loads(board.stdout)["rows"] == []


def test_a_campaign_whose_endpoint_hangs_from_the_first_call_stops_failed(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    """The time cap fires during the pre-campaign forecast: the branch is stored failed with
    the cap named (its curve starts at a fallback s_0), one line, exit 1, no traceback."""
    from labreplay.testing.fault_server import StubServer, hung

    specs = campaign_specs_source  # `campaign compile` at its defaults, once per test run
    store = tmp_path / "hung.sqlite"
    with StubServer(lambda _r, _n: hung(), model="stub") as server:
        proc = _cli(
            tmp_path,
            "campaign", "run", "--specs", str(specs), "--only", "short-1", "--store",
            str(store), "--agent", "openai:stub", "--base-url", server.base_url,
            "--max-time", "2",
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "time cap" in proc.stderr, proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()
        assert run.status == "failed" and run.summary["cause_kind"] == "time cap"
        assert run.summary["checkpoint_failures"] == 1
