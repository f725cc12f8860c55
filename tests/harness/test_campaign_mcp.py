"""`labreplay campaign serve`: an official MCP client over stdio playing a deterministic policy
records exactly what the same policy records in-process through `labreplay.run` at the same
defaults (every branch: three random replicates and no-evidence); bad calls are data; a
disconnected session resumes; no evaluator field ever reaches a tool result."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import free_port

import labreplay
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent, RandomAgent
from labreplay.suites.campaign.canaries import leaked, paid_canaries
from labreplay.suites.campaign.runner import run_assignment

from .clients import FirstOffered, drive, drive_http, played_digest, serve_args

pytest.importorskip("mcp")


def _stored(store: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(assignment spec id, branch) -> played events, adaptive AUC, agent, isolation, status."""
    out = {}
    with Store(store, readonly=True) as db:
        for run in db.runs(suite="campaign"):
            out[(run.spec_id, run.branch)] = {
                # the played events: the header names the agent and its interface by design
                "played": played_digest(db.events(run.run_id)),
                "auc": db.scores(run.run_id)["adaptive_auc"],
                "agent": run.agent,
                "isolation": run.provenance.get("agent_isolation"),
                "status": run.status,
                "invalid": (run.summary or {}).get("invalid_actions"),
            }
    return out


def _in_process(specs: list[Any], agent: type, store: Path) -> dict[tuple[str, str], Any]:
    """The same policy through the Python API at its defaults (the door `serve` shares)."""
    labreplay.run("campaign", specs, agent, store)
    return _stored(store)


def _same_trajectories(mcp: dict[Any, Any], local: dict[Any, Any]) -> None:
    assert set(mcp) == set(local)
    for key, row in local.items():
        assert mcp[key]["played"] == row["played"], key
        assert mcp[key]["auc"] == row["auc"], key
        assert mcp[key]["status"] == "complete"


def test_mcp_client_records_what_in_process_records(
    campaign_specs: list[Any], spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "mcp.sqlite"
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(store))
    args += ["--agent-name", "bayes-over-mcp", "--model", "none"]
    out = asyncio.run(drive(args, served_env, BayesAgent))
    assert [p["assignment"] for p in out["final"]["played"]] == ["short-1", "short-2"]
    assert set(out["final"]) == {"done", "played"}  # no score in any tool result
    mcp = _stored(store)
    _same_trajectories(mcp, _in_process(campaign_specs, BayesAgent, tmp_path / "local.sqlite"))
    assert {r["agent"] for r in mcp.values()} == {"bayes-over-mcp"}
    assert {r["isolation"] for r in mcp.values()} == {"mcp"}
    # two assignments x (adaptive, random, random-2, random-3, no-evidence): `campaign run`'s
    # defaults (was: one random replicate over MCP, three from the CLI)
    assert len(mcp) == 10


def test_mcp_serve_plays_the_random_replicates_campaign_run_plays(
    campaign_specs: list[Any], spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    """`--random-replicates 2`: the branches and trajectories of `campaign run` with the same
    option (one options class expands the controls for both)."""
    store = tmp_path / "mcp.sqlite"
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(store), "--only")
    args += ["short-1", "--agent-name", "bayes-over-mcp", "--random-replicates", "2"]
    asyncio.run(drive(args, served_env, BayesAgent))
    mcp = _stored(store)
    local_store = tmp_path / "local.sqlite"
    short = [s for s in campaign_specs if s.body["assignment"]["id"] == "short-1"]
    with Store(local_store) as db:
        run_assignment(short[0], BayesAgent, db, 0, ("random", "random-2", "no-evidence"))
    _same_trajectories(mcp, _stored(local_store))
    assert sorted(b for _, b in mcp) == ["adaptive", "no-evidence", "random", "random-2"]


def test_disconnected_session_resumes(
    campaign_specs: list[Any], spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "mcp.sqlite"
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(store), "--only")
    args += ["short-1", "--agent-name", "first-offered"]
    first = asyncio.run(drive(args, served_env, FirstOffered, max_calls=15))
    assert first["final"] is None  # the harness went away mid-assignment
    with Store(store, readonly=True) as db:
        assert [r.status for r in db.runs(suite="campaign")] == ["running"]
    again = asyncio.run(drive(args, served_env, FirstOffered))
    assert again["final"]["played"][0]["status"] == "complete"
    full = asyncio.run(drive(args, served_env, FirstOffered))  # complete: nothing left to ask
    assert len(full["texts"]) == 2  # tools/list and the one observe() that says done
    local = _in_process(campaign_specs[:1], FirstOffered, tmp_path / "local.sqlite")
    _same_trajectories(_stored(store), local)


def test_bad_calls_are_recorded_and_no_canary_leaks(
    canaried: tuple[Path, dict[str, str]], served_env: dict[str, str], tmp_path: Path
) -> None:
    spec_dir, by_item = canaried
    store = tmp_path / "mcp.sqlite"
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(store))
    junk = [
        ("act", {}),
        ("act", {"reply": "select something"}),
        ("select_experiment", {"experiment_id": 7}),
        ("submit_panel_forecast", {"forecasts": []}),
        ("inspect_evidence", {"experiment_id": "PG_x", "kind": "xrd_scan", "extra": 1}),
        ("no_such_tool", {}),
    ]
    checkpoints = {"seen": 0}

    def stop_at_first_checkpoint(seen: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        if seen["kind"] == "panel_checkpoint" and seen["session"]["branch"] == "adaptive":
            checkpoints["seen"] += 1
            if checkpoints["seen"] == 1:
                return ("stop", {})  # out of order: an action where a forecast was due
        return None

    out = asyncio.run(
        drive(args, served_env, RandomAgent, junk=junk, override=stop_at_first_checkpoint)
    )
    assert out["final"]["done"] is True and "error" not in out["final"]
    replies = out["junk"]
    for reply in replies[:5]:
        assert reply["accepted"] is False and reply["expected"], reply
    assert "must be a string" in replies[2]["reason"]
    assert "unexpected field" in replies[4]["reason"]
    assert replies[5]["error"].startswith("unknown tool")
    assert replies[6]["accepted"] is False and "forecasts" in replies[6]["expected"]
    with Store(store, readonly=True) as db:
        run = next(r for r in db.runs(suite="campaign") if r.branch == "adaptive")
        events = db.events(run.run_id)
    rejected = [e for e in events if e["kind"] == "action" and not e["payload"]["accepted"]]
    # the first call answered the pre-campaign checkpoint (all queries fell back), the next
    # four were rejected actions, and the stop sent at the next checkpoint fell back too
    assert len(rejected) == 4
    panels = [e["payload"] for e in events if e["kind"] == "checkpoint"]
    for t in (0, 1):
        assert panels[t]["fallbacks"] == len(panels[t]["forecasts"]) > 0
    # every tool result of the session, scanned for any canary the agent did not pay for
    paid: set[str] = set()
    with Store(store, readonly=True) as db:
        for r in db.runs(suite="campaign"):
            paid |= paid_canaries(db.events(r.run_id), by_item)
    shown = "\n".join(out["texts"])
    assert "CANARY-OUTCOME" not in shown
    assert leaked(shown, paid) == set()
    assert paid, "the policy bought evidence, so paid canaries must appear"
    assert any(tag in shown for tag in paid)
    json.loads(out["texts"][0])  # the tool list itself is JSON


def test_http_session_survives_a_reconnect(
    campaign_specs: list[Any], spec_dir: Path, served_env: dict[str, str], tmp_path: Path
) -> None:
    store, port = tmp_path / "mcp.sqlite", free_port()
    args = serve_args("campaign", "--specs", str(spec_dir), "--store", str(store), "--only")
    args += ["short-1", "--agent-name", "first-offered", "--transport", "http"]
    server = subprocess.Popen(
        [sys.executable, *args, "--port", str(port)],
        env=served_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        first = asyncio.run(drive_http(url, FirstOffered, max_calls=12))
        assert first["final"] is None
        again = asyncio.run(drive_http(url, FirstOffered))  # a new connection, same session
        assert again["final"]["played"][0]["status"] == "complete"
    finally:
        server.terminate()
        server.wait(timeout=30)
    local = _in_process(campaign_specs[:1], FirstOffered, tmp_path / "local.sqlite")
    _same_trajectories(_stored(store), local)
