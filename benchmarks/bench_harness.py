"""Harness figures: a scripted MCP client (official `mcp` client over stdio) playing `short-1`
with every branch, against the same policy in-process.

Targets (issue 24): the whole stdio session (server start included) under 10 s; the median
per-tool-call latency is quoted next to the in-process time per policy call (one step of the
runner: observation, agent, environment, recorder), as a ratio measured side by side.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.compiler import write_specs
from labreplay.suites.campaign.runner import run_assignment

SRC = Path(__file__).resolve().parents[1] / "src"


async def _play(spec_dir: Path, store: Path) -> tuple[list[float], float]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    args = ["-m", "labreplay.cli.main", "campaign", "serve", "--specs", str(spec_dir)]
    args += ["--store", str(store), "--agent-name", "bench-over-mcp"]
    server = StdioServerParameters(command=sys.executable, args=args, env=env)
    latencies: list[float] = []
    t0 = time.perf_counter()
    async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            t = time.perf_counter()
            result = await mcp.call_tool(name, arguments)
            latencies.append(time.perf_counter() - t)
            value: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
            return value

        session, policy = None, BayesAgent()
        while True:
            seen = await call("observe", {})
            if seen.get("done"):
                break
            if seen["session"] != session:
                session, policy = seen["session"], BayesAgent()
                policy.reset(0)
            kind = seen["kind"]
            reply = policy.forecast(seen) if kind == "panel_checkpoint" else policy.act(seen)
            await call("act", {"reply": reply})
    return latencies, time.perf_counter() - t0


def _policy_calls(store: Store) -> int:
    """Agent calls of every branch: each accepted or rejected action plus each checkpoint
    the agent answered (controls get the pre-campaign forecast from the adaptive branch)."""
    n = 0
    for run in store.runs(suite="campaign"):
        events = store.events(run.run_id)
        n += sum(e["kind"] == "action" for e in events)
        n += sum(e["kind"] == "checkpoint" for e in events) - (run.branch != "adaptive")
    return n


def run(quick: bool) -> list[dict[str, Any]]:
    _, specs, index = compile_specs("precursor-genome", seed=0)
    spec = next(s for s in specs if s.body["assignment"]["id"] == "short-1")
    # the compiler's own index, cut to the one assignment played (its entries carry the id)
    entries = [a for a in index["assignments"] if a["id"] == "short-1"]
    repeats = 1 if quick else 3
    local_per_call, mcp_calls, sessions = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        spec_dir = Path(tmp) / "specs"
        write_specs(
            spec_dir,
            {**index, "assignments": entries},
            [spec],
        )
        for i in range(repeats):
            with Store(Path(tmp) / f"local{i}.sqlite") as db:
                t0 = time.perf_counter()
                run_assignment(spec, BayesAgent, db, 0)
                elapsed = time.perf_counter() - t0
                local_per_call.append(elapsed / _policy_calls(db))
            latencies, wall = asyncio.run(_play(spec_dir, Path(tmp) / f"mcp{i}.sqlite"))
            mcp_calls.extend(latencies)
            sessions.append(wall)
    per_call = statistics.median(mcp_calls)
    local = statistics.median(local_per_call)
    return [
        {
            "name": "harness: MCP stdio session, short-1, all 3 branches (server start included)",
            "median": statistics.median(sessions),
            "unit": "s",
            "ratio": None,
            "target": "< 10 s",
        },
        {
            "name": f"harness: MCP tool call (observe/act) median over {len(mcp_calls)} calls",
            "median": per_call * 1e3,
            "unit": "ms",
            "ratio": round(per_call / local, 2),
            "target": "ratio = / in-process policy call",
        },
        {
            "name": "harness: in-process policy call (runner step incl. agent), short-1",
            "median": local * 1e3,
            "unit": "ms",
            "ratio": None,
            "target": "-",
        },
    ]
