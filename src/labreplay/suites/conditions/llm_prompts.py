"""What the conditions LLM agent sends: the chemist prompt around a question the suite has
already rendered to text, the JSON answer schema of a question view, and the reading of a
validated reply back into the suite's 0-based answer form.
"""

from __future__ import annotations

from collections.abc import Mapping

from labreplay.sdk import canonical_json
from labreplay.sdk.agents import JsonReply
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.questions import QuestionView

# Unchanged from the shared prompt module this came from, so response-cache keys still match.
PROMPT_VERSION = "lr-llm-prompts-2"

QUESTION_POLICY = (
    "You are a chemist choosing reaction conditions from recorded screening results. Read the "
    "question, use only the information it gives, and answer with exactly one JSON object that "
    "satisfies the response schema, and nothing else."
)


def question_messages(
    prompt: str, response_schema: Mapping[str, JsonValue]
) -> list[dict[str, str]]:
    """The chat messages for one question already rendered to text by its suite."""
    user = "\n".join(
        [
            prompt,
            "",
            "ANSWER FORMAT (this replaces any answer format asked for above): one JSON object "
            "matching this JSON Schema, numbers as in the lists above:",
            canonical_json(response_schema),
        ]
    )
    return [{"role": "system", "content": QUESTION_POLICY}, {"role": "user", "content": user}]


def question_schema(view: QuestionView) -> JsonObject:
    """The JSON answer schema of a conditions question view (1-based numbers, as prompted)."""
    if view.get("question_type") == "fib_all":
        candidates = view.get("candidates", {})
        keys = list(view.get("varying_keys", []))
        props: dict[str, JsonValue] = {
            k: {"type": "integer", "minimum": 1, "maximum": max(1, len(candidates.get(k, [])))}
            for k in keys
        }
        return {
            "type": "object",
            "properties": props,
            "required": [*keys],
            "additionalProperties": False,
        }
    n_options = max(1, len(view.get("options", [])))
    return {
        "type": "object",
        "properties": {"answer": {"type": "integer", "minimum": 1, "maximum": n_options}},
        "required": ["answer"],
        "additionalProperties": False,
    }


def question_answer(view: QuestionView, reply: JsonReply) -> JsonObject:
    """A validated reply in the suite's 0-based answer form, or {"error", "raw"} on failure."""
    if reply.value is None:
        return {"error": reply.error or "no reply", "raw": reply.text or ""}
    if view.get("question_type") == "fib_all":
        return {"choices": {k: int(v) - 1 for k, v in reply.value.items()}}
    return {"option": int(reply.value["answer"]) - 1}
