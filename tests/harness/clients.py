"""Scripted MCP clients (official `mcp` client over stdio) for the harness tests."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client


def serve_args(suite: str, *args: str) -> list[str]:
    return ["-m", "labreplay.cli.main", suite, "serve", *args]


async def drive(
    args: Sequence[str],
    env: Mapping[str, str],
    make_policy: Callable[[], Any],
    junk: Sequence[tuple[str, dict[str, Any]]] = (),
    max_calls: int | None = None,
    seed: int = 0,
    override: Callable[[dict[str, Any]], tuple[str, dict[str, Any]] | None] | None = None,
) -> dict[str, Any]:
    """Play a served campaign over stdio with a Python policy through observe/act (see `play`)."""
    server = StdioServerParameters(command=sys.executable, args=list(args), env=dict(env))
    async with stdio_client(server) as (read, write), ClientSession(read, write) as mcp:
        return await play(mcp, make_policy, junk, max_calls, seed, override)


async def drive_http(
    url: str, make_policy: Callable[[], Any], max_calls: int | None = None
) -> dict[str, Any]:
    """The same over streamable HTTP (the server keeps the session between connections)."""
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as mcp:
        return await play(mcp, make_policy, max_calls=max_calls)


async def play(
    mcp: ClientSession,
    make_policy: Callable[[], Any],
    junk: Sequence[tuple[str, dict[str, Any]]] = (),
    max_calls: int | None = None,
    seed: int = 0,
    override: Callable[[dict[str, Any]], tuple[str, dict[str, Any]] | None] | None = None,
) -> dict[str, Any]:
    """`junk` tool calls are sent first and `override(seen)` may replace a reply (their replies
    kept); stop after `max_calls` acts (a disconnect). Returns every tool result text, the junk
    replies and the final observe() (or None)."""
    texts: list[str] = []
    replies: list[dict[str, Any]] = []
    await mcp.initialize()
    tools = await mcp.list_tools()
    texts.append(json.dumps([t.model_dump(mode="json") for t in tools.tools]))

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await mcp.call_tool(name, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        texts.append(text)
        value: dict[str, Any] = json.loads(text)
        return value

    for name, arguments in junk:
        replies.append(await call(name, arguments))
    session, policy, acts = None, make_policy(), 0
    while True:
        seen = await call("observe", {})
        if seen.get("done"):
            return {"texts": texts, "junk": replies, "final": seen}
        if max_calls is not None and acts >= max_calls:
            return {"texts": texts, "junk": replies, "final": None}
        if seen["session"] != session:
            session, policy = seen["session"], make_policy()
            policy.reset(seed)
        instead = override(seen) if override is not None else None
        if instead is not None:  # a scripted misbehaviour in place of the policy's reply
            replies.append(await call(*instead))
            acts += 1
            continue
        respond = policy.forecast if seen["kind"] == "panel_checkpoint" else policy.act
        await call("act", {"reply": respond(seen)})
        acts += 1


class FirstOffered:
    """A deterministic policy that is a pure function of what it is shown (no memory), so a
    fresh instance after a reconnect acts exactly as the one that went away would have."""

    name = "first-offered"

    def params(self) -> dict[str, Any]:
        return {}

    def reset(self, seed: int) -> None:
        return None

    @staticmethod
    def _forecast(n: int) -> dict[str, Any]:
        p = 0.4 + 0.05 * (n % 8)
        rest = (1.0 - p) / 3
        return {
            "p_valid": round(p, 3),
            "categories": {
                "completely_reacted": p,
                "transformed": rest,
                "partially_reacted": rest,
                "unreacted": rest,
            },
        }

    def act(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        variants = {
            v["properties"]["type"]["const"]: v["properties"]
            for v in observation["action_schema"]["oneOf"]
        }
        state = observation["state"]
        eid = state["open_experiment"]
        if "select_experiment" in variants:
            return {
                "type": "select_experiment",
                "experiment_id": variants["select_experiment"]["experiment_id"]["enum"][0],
            }
        seen = len(state["experiments"][eid]["revealed"]) if eid else 0
        if "inspect_evidence" in variants and observation["phase"] == "investigate" and seen < 2:
            kind = variants["inspect_evidence"]["kind"]["enum"][0]
            return {"type": "inspect_evidence", "experiment_id": eid, "kind": kind}
        if "close_experiment" in variants:
            claims = dict.fromkeys(variants["close_experiment"]["claims"]["required"], 0.5)
            return {"type": "close_experiment", "experiment_id": eid, "claims": claims}
        if "submit_forecast" in variants:
            return {"type": "submit_forecast", "experiment_id": eid, **self._forecast(seen)}
        return {"type": "stop"}

    def forecast(self, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        n = len(snapshot["state"]["closed"])
        return {
            "forecasts": [
                {"experiment_id": q["experiment_id"], **self._forecast(n)}
                for q in snapshot["panel"]
            ]
        }


def played_digest(events: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of a run's played events (kind and payload), its `header` event aside: the
    header names the agent and its interface, which differ between a harness and in-process
    by design; everything the run played must not."""
    import hashlib

    played = [[e["kind"], e["payload"]] for e in events if e["kind"] != "header"]
    return hashlib.sha256(json.dumps(played, sort_keys=True).encode()).hexdigest()
