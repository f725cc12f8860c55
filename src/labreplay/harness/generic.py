"""`serve`: any suite's run played by a harness over MCP, through the one run path.

A session is `labreplay.run(suite, specs, agent, store, seed=..., **options)` itself (the
suite's `run`, the core runner, the suite's options class and its defaults: what `run` plays
from the CLI or the API, `serve` plays) in a worker thread, the agent a `BridgeAgent` that
forwards each method of the suite's declared contract (`DeclaresContract`) to the harness. A
harness that replies like a Python agent records what that agent records in-process; only the
agent's name (the declared harness name), its params (`interface: "mcp"`, the declared model)
and `agent_isolation: "mcp"` differ.

The tools are a *view* of the session (`HarnessView`). The default, `CallView`, serves every
suite the same two tools:

- `next_call()`: the pending call, `{"method": NAME, "payload": {...}, "index": N}`, or
  `{"done": true, ...}` once the run ends;
- `reply(value)`: the method's return value as the Python agent would return it; answers
  with the next pending call (or done).

A suite may add its own view over the same session (campaign and conditions keep their
`observe` / `act` / typed tools). Each MCP session plays its own run (`SessionSlots`: slot 1
as `--agent-name`, a concurrent session k as `NAME-k`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from labreplay.agents.resolve import contract_members
from labreplay.api import run
from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import LabreplayError
from labreplay.harness.bridge import ISOLATION, BridgeAgent, Channel, Request, start_worker
from labreplay.harness.mcp_server import ToolDef, build_server, require_mcp, serve
from labreplay.harness.sessions import SessionSlots
from labreplay.store.sqlite import Store
from labreplay.suite import ChecksOptions, DeclaresContract, Suite, default_seed, get_suite

Summary = Callable[[Sequence[Mapping[str, object]]], dict[str, object]]
WAIT_S = 600.0  # a run that does not answer a tool call within this is reported, not awaited
_LIFECYCLE = ("params", "reset")  # answered by the bridge itself, never by the harness


def served_methods(suite: Suite) -> tuple[str, ...]:
    """The contract methods a harness answers (refused for a suite that declares none)."""
    if not isinstance(suite, DeclaresContract):
        raise LabreplayError(
            f"suite {suite.name!r} does not declare its agent contract (`agent_contract`); "
            "it cannot be served"
        )
    _, methods = contract_members(suite.agent_contract)
    return tuple(m for m in methods if m not in _LIFECYCLE)


class ServedRun:
    """One harness's run of `specs`: the worker plays it, a view's tools drive it."""

    def __init__(
        self,
        suite: str,
        specs: Sequence[EnvironmentSpec],
        store: Path,
        agent_name: str,
        seed: int,
        model: str | None,
        options: Mapping[str, object],
        interface: str = ISOLATION,
    ) -> None:
        if not agent_name.strip():
            raise LabreplayError("--agent-name: value '' must name the harness")
        self.suite, self.specs, self.store = suite, list(specs), store
        self.methods = served_methods(get_suite(suite))
        self.agent_name, self.seed, self.model = agent_name, seed, model
        # how the harness reached the run (`mcp`, `inspect`): its params and its isolation
        self.interface = interface
        self.params = {"interface": interface, **({"model": model} if model else {})}
        self.options = dict(options)
        self.results: list[Mapping[str, object]] = []
        self.channel = Channel()
        self.lock = threading.Lock()  # a harness's parallel tool calls are served in turn
        self._thread = start_worker(self.channel, self._work)

    def _bridge(self) -> BridgeAgent:
        return BridgeAgent(
            self.channel, self.agent_name, self.params, self.model, self.methods, self.interface
        )

    def _work(self) -> dict[str, object]:
        with Store(self.store) as db:
            # the Python API's door: its checks, the suite's options and defaults, the runner
            results = run(
                self.suite,
                self.specs,
                self._bridge,
                db,
                seed=self.seed,
                executor=None,
                **self.options,
            )
        self.results = list(results)
        return {}

    # ------------------------------------------------------------------ for views
    def pending(self) -> Request | None:
        """The call waiting for the harness (None: the run is over, or did not answer)."""
        return self.channel.current(WAIT_S)

    def answer(self, value: object) -> tuple[Request | None, Request | None]:
        """(the call `value` answered, the next one); (None, None) when none was pending."""
        answered = self.channel.current(WAIT_S)
        if answered is None:
            return None, None
        return answered, self.channel.reply(value, WAIT_S)

    def done(self, summary: Summary) -> dict[str, object]:
        """The reply once no call is pending: `summary(results)` (never an evaluator field)."""
        if self.channel.finished is None:
            return {"error": "the run did not answer in time", "expected": "call again"}
        if self.channel.failure is not None:
            return {"done": True, "error": f"the run stopped: {self.channel.failure}"}
        return {"done": True, **summary(self.results)}


class HarnessView(Protocol):
    """The tools a harness sees of a `ServedRun`."""

    instructions: str

    def tools(self) -> list[ToolDef]: ...

    def call(self, run: ServedRun, tool: str, args: dict[str, object]) -> dict[str, object]: ...


class CallView:
    """Every suite's tools: `next_call()` and `reply(value)`."""

    def __init__(self, suite: str, methods: Sequence[str]) -> None:
        self.methods = tuple(methods)
        self.instructions = (
            f"labreplay {suite} server. Loop: next_call(), then reply(value) with what the "
            "agent method named in `method` returns for `payload`, until done."
        )

    def tools(self) -> list[ToolDef]:
        return [
            ToolDef(
                "next_call",
                "The pending call of the run to your agent (method: one of "
                f"{', '.join(self.methods)}; payload), or done.",
                {"type": "object", "properties": {}, "additionalProperties": False},
            ),
            ToolDef(
                "reply",
                "Answer the pending call with `value` (what the method returns); returns the next.",
                {"type": "object", "properties": {"value": {}}, "required": ["value"]},
            ),
        ]

    @staticmethod
    def _view(run: ServedRun, request: Request | None) -> dict[str, object]:
        if request is None:
            return run.done(lambda results: {"runs": [_run_of(r) for r in results]})
        return {"method": request.kind, "payload": request.payload, "index": request.index}

    def call(self, run: ServedRun, tool: str, args: dict[str, object]) -> dict[str, object]:
        if tool == "next_call":
            return self._view(run, run.pending())
        if tool == "reply":
            answered, nxt = run.answer(args.get("value"))
            if answered is None:
                return {"error": "no call is pending", **self._view(run, None)}
            return self._view(run, nxt)
        return {"error": f"unknown tool {tool!r}", "expected": ["next_call", "reply"]}


def _run_of(result: Mapping[str, object]) -> dict[str, object]:
    return {k: result[k] for k in ("run_id", "branch", "status", "cached") if k in result}


def serve_suite_run(
    suite: str,
    specs: Sequence[EnvironmentSpec],
    store: str | Path,
    agent_name: str,
    seed: int | None = None,
    *,
    model: str | None = None,
    view: HarnessView | None = None,
    transport: str = "stdio",
    port: int = 8765,
    **options: object,
) -> None:
    """Serve `suite`'s run of `specs` over MCP (stdio by default) with `options`, the
    suite's run options (those of `labreplay.run`, refused there as here before serving)."""
    require_mcp()
    target = get_suite(suite)
    methods = served_methods(target)
    seed = default_seed(target) if seed is None else seed
    if isinstance(target, ChecksOptions):
        target.check_options(**options)
    shown = view if view is not None else CallView(suite, methods)

    def session(name: str) -> Callable[[str, Mapping[str, object] | None], dict[str, object]]:
        served = ServedRun(suite, specs, Path(store), name, seed, model, options)

        def call(tool: str, arguments: Mapping[str, object] | None) -> dict[str, object]:
            with served.lock:
                return shown.call(served, tool, dict(arguments or {}))

        return call

    # slot 1 plays as the declared name (a lone harness; resume after a restart) and starts
    # now; a concurrent session as NAME-k, so two sessions never write the same runs
    first = session(agent_name)
    slots = SessionSlots(lambda slot: first if slot == 1 else session(f"{agent_name}-{slot}"))
    server = build_server(f"labreplay-{suite}", shown.instructions, shown.tools(), slots)
    serve(server, transport, port=port)


__all__ = ["CallView", "HarnessView", "ServedRun", "serve_suite_run", "served_methods"]
