"""`labreplay conditions serve`: any harness answers a question file through MCP tools.

The server runs the ordinary in-process path (`run_agent`: every question in file order,
answers recorded, scored and stored, resumable) in a worker thread with a `BridgeAgent` as the
question agent, so the stored run is the one a Python agent giving the same answers records.

Tools (JSON results; never an answer key or a score):
- `observe()`: the pending question (`kind: "question"`, the Python question view's keys) or
  `{"done": true, ...}`;
- `act(reply)`: the raw answer as a Python agent returns it: `{"option": i}` (0-based) for
  multiple choice, `{"choices": {key: i}}` for fill-in-the-blank, or `{"text": reply}` (read by
  our parser, 1-based numbers as in the prompt); the result shows how it was read;
- `answer_option`, `answer_choices`, `answer_text`: the same with typed arguments.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from labreplay.sdk.harness import BridgeAgent, Channel, Request, ToolDef, start_worker
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import view_of

WAIT_S = 600.0
INTERFACE = "mcp"
INSTRUCTIONS = (
    "labreplay conditions server. Loop: observe() shows a question (multiple choice: answer "
    "with the 0-based option index; fill-in-the-blank: one 0-based candidate index per varying "
    "key), then act(reply) or a typed answer tool, until observe() returns done."
)

TYPED: dict[str, tuple[str, dict[str, object]]] = {
    "answer_option": (
        "Answer a multiple-choice question with the 0-based index of the chosen option.",
        {"option": {"type": "integer", "minimum": 0}},
    ),
    "answer_choices": (
        "Answer a fill-in-the-blank question: per varying key, a 0-based candidate index.",
        {"choices": {"type": "object", "additionalProperties": {"type": "integer"}}},
    ),
    "answer_text": (
        "Answer in free text (parsed like an LLM reply; numbers are 1-based as in the prompt).",
        {"text": {"type": "string"}},
    ),
}


def tool_defs() -> list[ToolDef]:
    tools = [
        ToolDef("observe", "The pending question, or done.", {"type": "object", "properties": {}}),
        ToolDef(
            "act",
            "Submit the raw answer to the pending question.",
            {
                "type": "object",
                "properties": {"reply": {"description": "{option} | {choices} | {text}"}},
                "required": ["reply"],
            },
        ),
    ]
    for name, (text, props) in TYPED.items():
        schema = {
            "type": "object",
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        }
        tools.append(ToolDef(name, text, schema))
    return tools


class QuestionSession:
    """One harness session over a question file: the worker runs it; tools drive it."""

    def __init__(
        self,
        questions_path: str | Path,
        store_path: str | Path,
        agent_name: str,
        seed: int = 0,
        model: str | None = None,
        interface: str = INTERFACE,
    ) -> None:
        from labreplay.suites.conditions.questions import load_questions

        self.questions_path = Path(questions_path)
        self.questions = load_questions(self.questions_path)  # bad file: exit 2 before serving
        self.store_path = Path(store_path)
        self.agent_name = agent_name
        self.seed = seed
        self.model = model
        self.params = {"interface": interface, **({"model": model} if model else {})}
        self.interface = interface
        self.channel = Channel()
        self.answered = 0
        self.summary: dict[str, object] | None = None
        self._lock = threading.Lock()
        self._thread = start_worker(self.channel, self._work)

    def _work(self) -> dict[str, object]:
        from labreplay.sdk.engine import Store
        from labreplay.suites.conditions.runner import run_agent

        with Store(self.store_path) as db:
            session = {"questions": self.questions_path.name, "seed": self.seed}
            agent = BridgeAgent(
                self.channel, self.agent_name, self.params, session, db, self.model, self.interface
            )
            agent.reset(self.seed)
            result = run_agent(db, self.questions_path, self.questions, agent, self.seed)
        return {"run_id": result["run_id"], "questions": len(self.questions)}

    # ------------------------------------------------------------------ tools
    def _view(self, request: Request | None) -> dict[str, object]:
        if request is None:
            if self.channel.finished is None:
                return {"error": "the run did not answer in time", "expected": "observe()"}
            reply: dict[str, object] = {"done": True, **self.channel.finished}
            if self.channel.failure:
                reply["error"] = f"the run stopped: {self.channel.failure}"
            return reply
        return {
            "kind": "question",
            **request.payload,
            "session": {"questions": self.questions_path.name, "call": request.index},
        }

    def act(self, reply: object) -> dict[str, object]:
        answered = self.channel.current(WAIT_S)
        if answered is None:
            return {**self._view(None), "expected": "nothing: every question is answered"}
        parsed = normalise_answer(reply, view_of(answered.payload))
        nxt = self.channel.reply(reply, WAIT_S)
        view = self._view(nxt)
        result: dict[str, object] = {
            "recorded": True,
            "question_id": answered.payload.get("id"),
            "read_as": parsed,
            "next": "done" if view.get("done") else view.get("kind", "error"),
        }
        if "invalid" in parsed:
            result["expected"] = (
                '{"option": i} (multiple choice, 0-based), {"choices": {key: i}} '
                '(fill-in-the-blank) or {"text": "..."}; recorded as an invalid answer'
            )
        if "error" in view:
            result["error"] = view["error"]
        return result

    def call(self, tool: str, arguments: Mapping[str, object] | None) -> dict[str, object]:
        with self._lock:
            args = dict(arguments or {})
            if tool == "observe":
                return self._view(self.channel.current(WAIT_S))
            if tool == "act":
                return self.act(args.get("reply", {"invalid_call": "act without 'reply'"}))
            if tool in TYPED:
                return self.act(args)
            return {"error": f"unknown tool {tool!r}", "expected": ["observe", "act", *TYPED]}


def serve_questions(
    questions_path: str | Path,
    store_path: str | Path,
    agent_name: str,
    seed: int = 0,
    transport: str = "stdio",
    port: int = 8765,
    model: str | None = None,
) -> None:
    """Serve the question file over MCP; each MCP session answers it as its own run (slot 1
    as `agent_name`, a concurrent session k as `NAME-k`: `labreplay.sdk.harness.SessionSlots`)."""
    from labreplay.sdk.harness import SessionSlots, build_server, require_mcp, serve

    require_mcp()

    # the first session is built now: a bad question file is refused before serving
    first = QuestionSession(questions_path, store_path, agent_name, seed, model)

    def session_of(slot: int) -> Callable[[str, Mapping[str, object] | None], dict[str, object]]:
        name = f"{agent_name}-{slot}"
        return (
            first.call
            if slot == 1
            else QuestionSession(questions_path, store_path, name, seed, model).call
        )

    slots = SessionSlots(session_of)
    server = build_server("labreplay-conditions", INSTRUCTIONS, tool_defs(), slots)
    serve(server, transport, port=port)


__all__ = ["QuestionSession", "serve_questions", "tool_defs"]
