"""`labreplay conditions serve`: an MCP client answering with a deterministic question agent
stores the same run (answers, hash chain, scores) as that agent in-process; bad answers are
recorded as invalid; no answer key or score reaches a tool result."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from labreplay.store.sqlite import Store
from labreplay.suites.conditions.agents import RandomAgent
from labreplay.suites.conditions.questions import load_questions
from labreplay.suites.conditions.run import run_agent

from .clients import serve_args

pytest.importorskip("mcp")


async def _answer(args: list[str], env: dict[str, str], bad: int = 0) -> dict[str, Any]:
    server = StdioServerParameters(command=sys.executable, args=args, env=env)
    agent, texts, replies = RandomAgent(0), [], []
    async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        while True:
            text = (await mcp.call_tool("observe", {})).content[0].text  # type: ignore[union-attr]
            texts.append(text)
            seen = json.loads(text)
            if seen.get("done"):
                return {"texts": texts, "replies": replies, "final": seen}
            if bad > 0:  # a malformed answer, then the typed tool with the wrong argument
                bad -= 1
                call = ("act", {"reply": [1, 2]}) if bad % 2 else ("answer_option", {"opt": 1})
            else:
                call = ("act", {"reply": agent.answer(seen)})
            result = await mcp.call_tool(*call)
            texts.append(result.content[0].text)  # type: ignore[union-attr]
            replies.append(json.loads(texts[-1]))


def _run(store: Path) -> dict[str, Any]:
    with Store(store, readonly=True) as db:
        (run,) = db.runs(suite="conditions")
        scores = {k: v for k, v in db.scores(run.run_id).items() if k != "summary"}
        events = db.events(run.run_id)
        # the header names the agent and its interface (mcp vs in-process) by design: the
        # played events after it are what must be identical
        played = [(e["kind"], e["payload"]) for e in events if e["kind"] != "header"]
        header = next(e["payload"] for e in events if e["kind"] == "header")
        return {"played": played, "header": header, "scores": scores, "run": run}


def test_conditions_serve_records_what_in_process_records(
    question_file: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "mcp.sqlite"
    args = serve_args("conditions", "--questions", str(question_file), "--store", str(store))
    out = asyncio.run(_answer([*args, "--agent-name", "random-over-mcp"], served_env))
    n = len(load_questions(question_file))
    assert out["final"]["done"] is True and out["final"]["questions"] == n >= 10
    assert all(r["recorded"] and "invalid" not in r["read_as"] for r in out["replies"])
    local = tmp_path / "local.sqlite"
    with Store(local) as db:
        run_agent(db, question_file, load_questions(question_file), RandomAgent(0), 0)
    mcp, ref = _run(store), _run(local)
    assert mcp["played"] == ref["played"] and len(mcp["played"]) == n
    assert mcp["header"]["agent"] == "random-over-mcp" != ref["header"]["agent"]
    assert mcp["scores"] == ref["scores"] and mcp["scores"]
    assert mcp["run"].agent == "random-over-mcp"
    assert mcp["run"].agent_params["interface"] == "mcp"
    # nothing evaluator-side in any tool result: no scores, no answer keys
    shown = "\n".join(out["texts"])
    for secret in ("CANARY-", "effective_scores", "relative_score", "answer_key", "mc_all_score"):
        assert secret not in shown


def test_bad_answers_are_recorded_as_invalid(
    question_file: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "mcp.sqlite"
    args = serve_args("conditions", "--questions", str(question_file), "--store", str(store))
    out = asyncio.run(_answer(args, served_env, bad=2))
    first, second = out["replies"][:2]
    assert "invalid" in first["read_as"] and first["expected"]
    assert "invalid" in second["read_as"] and second["expected"]
    with Store(store, readonly=True) as db:
        (run,) = db.runs(suite="conditions")
        events = [e for e in db.events(run.run_id) if e["kind"] == "answer"]  # header aside
    assert [("invalid" in e["payload"]["answer"]) for e in events[:3]] == [True, True, False]
    assert run.status == "complete"
