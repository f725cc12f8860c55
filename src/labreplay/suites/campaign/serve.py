"""`labreplay campaign serve`: any harness plays the campaigns through MCP tools.

The server runs the ordinary in-process path (`run_assignment`: the adaptive branch, then each
matched control from the same pre-campaign forecast) in a worker thread, with a
`BridgeAgent` as the policy: the harness's tool calls are the agent's `act` / `forecast`
answers. Events, hash chain, checkpoints, controls, scores and provenance are therefore those
of an in-process run; only the agent's name (the declared harness name) and
`agent_isolation: "mcp"` differ. A deterministic policy played through the tools has the same
trajectory hashes and adaptive AUC as in-process.

Tools (every result is one JSON object; none ever holds an evaluator field):
- `observe()`: the pending observation (`kind: "observation"`, the Python observation's keys),
  the panel checkpoint snapshot (`kind: "panel_checkpoint"`) or `{"done": true, ...}`;
  `session` names the assignment and branch (a new branch is a fresh session).
- `act(reply)`: the action (or, at a checkpoint, the panel forecast) as the Python agent
  would return it; returns the result and what comes next.
- typed tools, one per action kind, plus `submit_panel_forecast`: the same as `act` with the
  action built from the arguments (for LLM harnesses that call tools).
Whatever a harness sends goes to the environment unchanged: malformed arguments and calls out
of order are invalid actions (or checkpoint fallbacks), recorded and counted, and the reply
says what was expected.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

from labreplay.sdk.agents import CampaignAgent
from labreplay.sdk.engine import EnvironmentSpec, Store, run_key
from labreplay.sdk.harness import BridgeAgent, Channel, Request, ToolDef, start_worker
from labreplay.suites.campaign.actions import PHASE_ACTIONS, action_schema
from labreplay.suites.campaign.branches import BRANCHES, random_replicate
from labreplay.suites.campaign.env import panel_schema
from labreplay.suites.campaign.json_values import json_list, json_object
from labreplay.suites.campaign.runner import run_assignment

WAIT_S = 600.0  # a run that does not answer a tool call within this is reported, not awaited
INTERFACE = "mcp"

INSTRUCTIONS = (
    "labreplay campaign server. Loop: observe(), then act(reply) (or the typed tool of the "
    "action you choose) until observe() returns done. An observation lists the legal actions "
    "in action_schema; a panel_checkpoint asks for submit_panel_forecast (or act with "
    '{"forecasts": [...]}). Each new session (assignment/branch) is a fresh start: carry no '
    "memory from an earlier session."
)


def _action_variants() -> dict[str, dict[str, object]]:
    """Argument schema of each action kind (the action schema minus `type`)."""
    out: dict[str, dict[str, object]] = {}
    for phase in PHASE_ACTIONS:
        schema = action_schema(phase, ["<experiment_id>"], "<experiment_id>")
        for variant in json_list(schema["oneOf"]):
            props = dict(json_object(json_object(variant)["properties"]))
            name = str(json_object(props.pop("type"))["const"])
            props = {
                k: ({"type": "string"} if k == "experiment_id" else v) for k, v in props.items()
            }
            out[name] = {
                "type": "object",
                "properties": props,
                "required": list(props),
                "additionalProperties": False,
            }
    return out


def panel_tool_schema() -> dict[str, object]:
    """The panel forecast tool's schema: any experiment id (the env checks the panel's)."""
    return panel_schema()


ACTION_TOOLS = _action_variants()
_DESCRIPTIONS = {
    "select_experiment": "Open an available candidate experiment (reveals nothing).",
    "submit_forecast": "Forecast the open experiment: P(valid) and a category distribution.",
    "inspect_evidence": "Buy one recorded evidence item of the open experiment (one kind).",
    "request_review": "Buy the expert review of the open experiment, stating your expectation.",
    "close_experiment": "Close the open experiment with per-claim support probabilities.",
    "stop": "End the campaign.",
}


def tool_defs() -> list[ToolDef]:
    reply_schema = {
        "type": "object",
        "properties": {
            "reply": {
                "description": "the action (an object satisfying the observation's "
                'action_schema) or, at a panel checkpoint, {"forecasts": [...]}'
            }
        },
        "required": ["reply"],
    }
    tools = [
        ToolDef(
            "observe",
            "The current observation, panel checkpoint, or done.",
            {"type": "object", "properties": {}},
        ),
        ToolDef("act", "Submit the reply to what observe() showed.", reply_schema),
    ]
    tools += [ToolDef(n, _DESCRIPTIONS[n], s) for n, s in ACTION_TOOLS.items()]
    tools.append(
        ToolDef(
            "submit_panel_forecast",
            "Answer a panel checkpoint: one forecast per held-out query.",
            panel_tool_schema(),
        )
    )
    return tools


class CampaignSession:
    """One harness session over a list of specs: the worker runs them; tools drive it."""

    def __init__(
        self,
        specs: Sequence[EnvironmentSpec],
        store_path: str | Path,
        agent_name: str,
        seed: int = 0,
        controls: tuple[str, ...] = ("random", "no-evidence"),
        model: str | None = None,
        interface: str = INTERFACE,
    ) -> None:
        self.specs = list(specs)
        self.store_path = Path(store_path)
        self.agent_name = agent_name
        self.seed = seed
        # the order the runner plays them: the random replicates, then no-evidence
        # (the ordering of `execute.run_assignments`, then `runner._branches`)
        ordered = tuple(
            dict.fromkeys(c for c in (*BRANCHES[1:], *sorted(controls)) if c in controls)
        )
        replicates = tuple(c for c in ordered if random_replicate(c) is not None)
        self.controls = (*replicates, *(c for c in ordered if c not in replicates))
        self.model = model
        self.params = {"interface": interface, **({"model": model} if model else {})}
        self.interface = interface
        self.channel = Channel()
        self.played: list[dict[str, object]] = []
        self.started: list[dict[str, str]] = []  # (assignment, branch) in the order run
        self._lock = threading.Lock()  # a harness's parallel tool calls are served in turn
        self._thread = start_worker(self.channel, self._work)

    # ------------------------------------------------------------------ worker
    def _work(self) -> dict[str, object]:
        with Store(self.store_path) as db:
            for spec in self.specs:
                assignment = str(spec.body["assignment"]["id"])

                def make(
                    spec: EnvironmentSpec = spec, assignment: str = assignment
                ) -> CampaignAgent:
                    branch = self._next_branch(db, spec)
                    if branch is not None and self.started[-1:] != [
                        {"assignment": assignment, "branch": branch}
                    ]:
                        self.started.append({"assignment": assignment, "branch": branch})
                    session = {
                        "assignment": assignment,
                        "spec_hash": spec.spec_hash,
                        "branch": branch,
                    }
                    # the bridge forwards whatever the remote agent replies; the runner checks
                    # every reply (a bad one is an invalid action, recorded), as in-process
                    return cast(
                        "CampaignAgent",
                        BridgeAgent(
                            self.channel,
                            self.agent_name,
                            self.params,
                            session,
                            db,
                            self.model,
                            self.interface,
                        ),
                    )

                summary = run_assignment(spec, make, db, self.seed, self.controls)
                self.played.append(
                    {
                        "assignment": assignment,
                        "status": summary["status"],
                        "branches": list(summary["branches"]),
                    }
                )
        return {"played": self.played}

    def _next_branch(self, db: Store, spec: EnvironmentSpec) -> str | None:
        """The branch a fresh agent is built for: the runner plays the branches in order
        (adaptive, then each control) and a branch's run is complete before the next one's
        agent is built, so it is the first whose run is not complete (None: all are; such an
        agent only reads back, as does the probe the driver builds for name and params)."""
        status = {r.run_id: r.status for r in db.runs(suite="campaign")}
        for branch in ("adaptive", *self.controls):
            run_id = run_key(
                spec.spec_hash, self.agent_name, self.params, self.seed, branch, self.interface
            )
            if status.get(run_id) != "complete":
                return branch
        return None

    # ------------------------------------------------------------------ tools
    def done_reply(self) -> dict[str, object]:
        reply: dict[str, object] = {"done": True, "played": list(self.played)}
        if self.channel.failure:
            reply["error"] = f"the run stopped: {self.channel.failure}"
        return reply

    def _view(self, request: Request | None) -> dict[str, object]:
        if request is None:
            if self.channel.finished is None:
                return {"error": "the run did not answer in time", "expected": "observe()"}
            return self.done_reply()
        session = {k: request.context.get(k) for k in ("assignment", "branch")}
        if request.kind == "forecast":
            return {**request.payload, "session": session}
        return {"kind": "observation", **request.payload, "session": session}

    def observe(self) -> dict[str, object]:
        return self._view(self.channel.current(WAIT_S))

    def act(self, reply: object) -> dict[str, object]:
        answered = self.channel.current(WAIT_S)
        if answered is None:
            return {**self._view(None), "expected": "nothing: every session is over"}
        nxt = self.channel.reply(reply, WAIT_S)
        result = _result_of(answered, reply, nxt)
        view = self._view(nxt)
        result["next"] = "done" if view.get("done") else view.get("kind", "error")
        if nxt is not None:
            result["session"] = view["session"]
            result["new_session"] = nxt.context.get("branch") != answered.context.get(
                "branch"
            ) or nxt.context.get("assignment") != answered.context.get("assignment")
        elif "error" in view:
            result["error"] = view["error"]
        return result

    def call(self, tool: str, arguments: Mapping[str, object] | None) -> dict[str, object]:
        with self._lock:
            return self._call(tool, arguments)

    def _call(self, tool: str, arguments: Mapping[str, object] | None) -> dict[str, object]:
        args = dict(arguments or {})
        if tool == "observe":
            return self.observe()
        if tool == "act":
            if "reply" not in args:
                # recorded like any malformed action: the reply names what was expected
                return self.act({"invalid_call": "act without 'reply'", **args})
            return self.act(args["reply"])
        if tool in ACTION_TOOLS:
            return self.act({**args, "type": tool})
        if tool == "submit_panel_forecast":
            return self.act(args)
        return {
            "error": f"unknown tool {tool!r}",
            "expected": ["observe", "act", *ACTION_TOOLS, "submit_panel_forecast"],
        }


def _result_of(answered: Request, reply: object, nxt: Request | None) -> dict[str, object]:
    """What the harness learns about its reply: exactly what the next observation shows."""
    same = nxt is not None and nxt.context == answered.context
    if answered.kind == "forecast":
        ok = isinstance(reply, Mapping) and isinstance(reply.get("forecasts"), list)
        result: dict[str, object] = {
            "accepted": ok,
            "reason": "checkpoint recorded" if ok else "a panel checkpoint was due",
        }
        if not ok:
            result["expected"] = (
                'submit_panel_forecast / act with {"forecasts": [{"experiment_id", "p_valid", '
                '"categories"}, ...]}; every query fell back to its previous forecast'
            )
        return result
    if same and nxt is not None and nxt.kind == "act":
        last = nxt.payload.get("last_result") or {}
        result = dict(last)
        if last.get("accepted") is False:
            result["expected"] = [
                v["properties"]["type"]["const"] for v in nxt.payload["action_schema"]["oneOf"]
            ]
        return result
    if same and nxt is not None and nxt.kind == "forecast":
        # only an accepted close makes a panel checkpoint due
        return {"accepted": True, "reason": "ok"}
    return {"accepted": None, "reason": "the branch ended after this action"}


def serve_campaign(
    spec_dir: str | Path,
    store_path: str | Path,
    agent_name: str,
    only: str | None = None,
    seed: int = 0,
    controls: tuple[str, ...] = ("random", "no-evidence"),
    transport: str = "stdio",
    port: int = 8765,
    model: str | None = None,
) -> None:
    """Serve the specs of `spec_dir` over MCP until the harness disconnects (stdio) or the
    server is stopped (http). Each MCP session plays its own campaign
    (`labreplay.sdk.harness.SessionSlots`): a second session neither sees nor acts on the
    first's, and a session that ended leaves its campaign to the next one to connect."""
    from labreplay.sdk.harness import SessionSlots, build_server, require_mcp, serve
    from labreplay.suites.campaign.api import load_specs, select_specs

    require_mcp()
    specs = select_specs(load_specs(spec_dir), only)

    # slot 1 plays as the declared name (a lone harness, and resume after a restart), built
    # now as before; a concurrent session as NAME-k, so two sessions never write the same runs
    first = CampaignSession(specs, store_path, agent_name, seed, controls, model)

    def campaign_of(
        slot: int,
    ) -> Callable[[str, Mapping[str, object] | None], dict[str, object]]:
        if slot == 1:
            return first.call
        return CampaignSession(
            specs, store_path, f"{agent_name}-{slot}", seed, controls, model
        ).call

    slots = SessionSlots(campaign_of)
    server = build_server("labreplay-campaign", INSTRUCTIONS, tool_defs(), slots)
    serve(server, transport, port=port)


__all__ = ["ACTION_TOOLS", "CampaignSession", "serve_campaign", "tool_defs"]
