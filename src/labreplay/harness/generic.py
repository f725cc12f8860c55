"""Serve any suite's run over MCP: the generic harness bridge.

A suite that declares its agent contract (`labreplay.suite.DeclaresContract`) gets `serve`
with no code of its own beyond a command: the run is the suite's ordinary `Suite.run` (so its
events, scores and failure rules are those of an in-process run) in a worker thread, with a
`BridgeAgent` that forwards every method the contract declares. The harness sees two tools:

- `next_call()`: the pending call, `{"method": NAME, "payload": {...}, "index": N}`, or
  `{"done": true, "runs": [...]}` (or `{"done": true, "failure": "..."}`) once the run ends;
- `reply(value)`: the method's return value as the Python agent would return it; answers
  with the next pending call (or done).

Whatever the harness replies is passed on unchanged, so a malformed reply is the suite's
invalid action, recorded and counted as in-process.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labreplay.agents.resolve import contract_members
from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import LabreplayError
from labreplay.harness.bridge import BridgeAgent, Channel, Request, start_worker
from labreplay.harness.mcp_server import ToolDef, build_server, serve
from labreplay.store.sqlite import Store
from labreplay.suite import DeclaresContract, get_suite

WAIT_S = 600.0
_LIFECYCLE = ("params", "reset")  # answered by the bridge itself, never by the harness


class SuiteRunSession:
    """One run of `specs` by a harness through a channel (the server's state)."""

    def __init__(
        self,
        suite: str,
        specs: Sequence[EnvironmentSpec],
        store: Path,
        agent_name: str,
        seed: int,
        # (Any: passed on as `Suite.run`'s keyword options, `executor` among them)
        options: Mapping[str, Any] | None = None,
    ) -> None:
        target = get_suite(suite)
        if not isinstance(target, DeclaresContract):
            raise LabreplayError(
                f"suite {suite!r} does not declare its agent contract (`agent_contract`); "
                "it cannot be served generically"
            )
        if not agent_name.strip():
            raise LabreplayError("--agent-name: value '' must name the harness")
        _, methods = contract_members(target.agent_contract)
        self.methods = tuple(m for m in methods if m not in _LIFECYCLE)
        self.suite, self.specs, self.store = target, list(specs), store
        self.agent_name, self.seed, self.options = agent_name, seed, dict(options or {})
        self.channel = Channel()
        self._lock = threading.Lock()
        self._thread = start_worker(self.channel, self._work)

    def _work(self) -> dict[str, object]:
        with Store(self.store) as db:
            agent = BridgeAgent(
                self.channel,
                self.agent_name,
                {},
                {"suite": self.suite.name},
                db,
                methods=self.methods,
            )
            runs = self.suite.run(self.specs, agent, db, seed=self.seed, **self.options)
        return {"runs": [{"run_id": r.get("run_id"), "cached": r.get("cached")} for r in runs]}

    def _view(self, request: Request | None) -> dict[str, object]:
        if request is None:
            if self.channel.failure is not None:
                return {"done": True, "failure": self.channel.failure}
            return {"done": True, **(self.channel.finished or {})}
        return {"method": request.kind, "payload": request.payload, "index": request.index}

    def call(self, tool: str, arguments: Mapping[str, object] | None) -> dict[str, object]:
        with self._lock:  # a harness's parallel tool calls are served in turn
            if tool == "next_call":
                return self._view(self.channel.current(WAIT_S))
            if tool == "reply":
                if self.channel.current(WAIT_S) is None:
                    return {"error": "no call is pending", **self._view(None)}
                value = (arguments or {}).get("value")
                return self._view(self.channel.reply(value, WAIT_S))
            return {"error": f"unknown tool {tool!r}; use next_call or reply"}


def tool_defs(methods: Sequence[str]) -> list[ToolDef]:
    return [
        ToolDef(
            "next_call",
            "The pending call of the run to your agent (method: one of "
            f"{', '.join(methods)}; payload), or done.",
            {"type": "object", "properties": {}, "additionalProperties": False},
        ),
        ToolDef(
            "reply",
            "Answer the pending call with `value` (what the method returns); returns the next.",
            {"type": "object", "properties": {"value": {}}, "required": ["value"]},
        ),
    ]


def serve_suite_run(
    suite: str,
    spec: EnvironmentSpec,
    store: str | Path,
    agent_name: str,
    seed: int,
    transport: str = "stdio",
    **options: Any,
) -> None:
    """Serve one run of `suite` on `spec` to a harness over MCP (stdio by default)."""
    session = SuiteRunSession(suite, [spec], Path(store), agent_name, seed, options)
    instructions = (
        f"labreplay {suite} server. Loop: next_call(), then reply(value) with what the "
        "agent method named in `method` returns for `payload`, until done."
    )
    server = build_server(
        f"labreplay-{suite}", instructions, tool_defs(session.methods), session.call
    )
    serve(server, transport)


__all__ = ["SuiteRunSession", "serve_suite_run", "tool_defs"]
