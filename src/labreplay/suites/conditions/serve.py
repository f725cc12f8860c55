"""The conditions tools of `labreplay conditions serve`: a view of the one served run.

`conditions serve` is the generic `serve` (`labreplay.sdk.harness.serve_suite_run`): the run
is `labreplay.run("conditions", ...)` with the options and defaults of `conditions run` (every
question in file order, answers recorded, scored and stored, resumable), its agent a bridge,
so the stored run is the one a Python agent giving the same answers records.

Tools (JSON results; never an answer key or a score):
- `observe()`: the pending question (`kind: "question"`, the Python question view's keys) or
  `{"done": true, ...}`;
- `act(reply)`: the raw answer as a Python agent returns it: `{"option": i}` (0-based) for
  multiple choice, `{"choices": {key: i}}` for fill-in-the-blank, or `{"text": reply}` (read by
  our parser, 1-based numbers as in the prompt); the result shows how it was read;
- `answer_option`, `answer_choices`, `answer_text`: the same with typed arguments.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from labreplay.sdk.harness import Request, ServedRun, ToolDef
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import view_of

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


class QuestionView:
    """The conditions tools over a `ServedRun` (`labreplay.sdk.harness.HarnessView`)."""

    instructions = INSTRUCTIONS

    def __init__(self, file_name: str, n_questions: int) -> None:
        self.file_name, self.n_questions = file_name, n_questions

    def tools(self) -> list[ToolDef]:
        return tool_defs()

    def _done(self, results: Sequence[Mapping[str, object]]) -> dict[str, object]:
        return {"run_id": results[0]["run_id"], "questions": self.n_questions}

    def _view(self, run: ServedRun, request: Request | None) -> dict[str, object]:
        if request is None:
            return run.done(self._done)
        return {
            "kind": "question",
            **request.payload,
            "session": {"questions": self.file_name, "call": request.index},
        }

    def act(self, run: ServedRun, reply: object) -> dict[str, object]:
        pending = run.pending()
        if pending is None:
            return {**self._view(run, None), "expected": "nothing: every question is answered"}
        parsed = normalise_answer(reply, view_of(pending.payload))
        _, nxt = run.answer(reply)
        view = self._view(run, nxt)
        result: dict[str, object] = {
            "recorded": True,
            "question_id": pending.payload.get("id"),
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

    def call(self, run: ServedRun, tool: str, args: dict[str, object]) -> dict[str, object]:
        if tool == "observe":
            return self._view(run, run.pending())
        if tool == "act":
            return self.act(run, args.get("reply", {"invalid_call": "act without 'reply'"}))
        if tool in TYPED:
            return self.act(run, args)
        return {"error": f"unknown tool {tool!r}", "expected": ["observe", "act", *TYPED]}


__all__ = ["QuestionView", "tool_defs"]
