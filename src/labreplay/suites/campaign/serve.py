"""The campaign tools of `labreplay campaign serve`: a view of the one served run.

`campaign serve` is the generic `serve` (`labreplay.sdk.harness.serve_suite_run`): the run is
`labreplay.run("campaign", ...)` with the same options and defaults as `campaign run` (the
adaptive branch, then each matched control from the same pre-campaign forecast: by default
three schedule-matched random replicates and the no-evidence control), played by a bridge
agent. The generic tools `next_call` / `reply` are not offered here: these are the same
mechanism, shown as the campaign's own tools.

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

from collections.abc import Mapping, Sequence

from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.harness import Request, ServedRun, ToolDef
from labreplay.suites.campaign.actions import PHASE_ACTIONS, action_schema
from labreplay.suites.campaign.env import panel_schema
from labreplay.suites.campaign.json_values import json_list, json_object

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
            panel_schema(),  # any experiment id (the env checks the panel's)
        )
    )
    return tools


class CampaignView:
    """The campaign's tools over a `ServedRun` (`labreplay.sdk.harness.HarnessView`)."""

    instructions = INSTRUCTIONS

    def __init__(self, specs: Sequence[EnvironmentSpec]) -> None:
        self.assignments = {s.spec_hash: str(s.body["assignment"]["id"]) for s in specs}

    def tools(self) -> list[ToolDef]:
        return tool_defs()

    @staticmethod
    def _played(results: Sequence[Mapping[str, object]]) -> dict[str, object]:
        played = [
            {
                "assignment": json_object(r["assignment"])["id"],
                "status": r["status"],
                "branches": list(json_object(r["branches"])),
            }
            for r in results
        ]
        return {"played": played}

    def session_of(self, context: Mapping[str, object]) -> dict[str, object]:
        """The harness's session: the assignment and branch being played."""
        assignment = self.assignments.get(str(context.get("spec_hash")))
        return {"assignment": assignment, "branch": context.get("branch")}

    def _view(self, run: ServedRun, request: Request | None) -> dict[str, object]:
        if request is None:
            return run.done(self._played)
        session = self.session_of(request.context)
        if request.kind == "forecast":
            return {**request.payload, "session": session}
        return {"kind": "observation", **request.payload, "session": session}

    def act(self, run: ServedRun, reply: object) -> dict[str, object]:
        answered, nxt = run.answer(reply)
        if answered is None:
            return {**self._view(run, None), "expected": "nothing: every session is over"}
        result = _result_of(answered, reply, nxt)
        view = self._view(run, nxt)
        result["next"] = "done" if view.get("done") else view.get("kind", "error")
        if nxt is not None:
            result["session"] = view["session"]
            result["new_session"] = nxt.context != answered.context
        elif "error" in view:
            result["error"] = view["error"]
        return result

    def call(self, run: ServedRun, tool: str, args: dict[str, object]) -> dict[str, object]:
        if tool == "observe":
            return self._view(run, run.pending())
        if tool == "act":
            if "reply" not in args:
                # recorded like any malformed action: the reply names what was expected
                return self.act(run, {"invalid_call": "act without 'reply'", **args})
            return self.act(run, args["reply"])
        if tool in ACTION_TOOLS:
            return self.act(run, {**args, "type": tool})
        if tool == "submit_panel_forecast":
            return self.act(run, args)
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


__all__ = ["ACTION_TOOLS", "CampaignView", "tool_defs"]
