"""The conditions part of `labreplay.testing.check_agent`: firewall, answer form, determinism.

Canaries are planted in every question's private fields (meta scores, yields, sources); the
suite's `agent_view` must show none of them. Each answer must be a JSON object in the suite's
form ({"option": i} for multiple choice, {"choices": {slot: i}} for fill-in-the-blank, indices in
range) or a declared failure ({"error": reason}). A fresh agent must give the same answers with
the same seed, in any question order (the executor answers questions in batches).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence

from labreplay.sdk import canonical_json
from labreplay.sdk.testing import CANARY
from labreplay.suites.conditions.agents import QuestionAgent
from labreplay.suites.conditions.questions import Question, QuestionView, agent_view


class PlantedQuestion(Question):
    answer_canary: str  # a private field the view must not show


def plant(question: Question) -> PlantedQuestion:
    q = copy.deepcopy(question)
    tag = f"CANARY-{q['id']}"
    meta = dict(q.get("meta", {}))
    for key in list(meta):
        if key not in {"dataset", "parent_table_id"} and isinstance(meta[key], str):
            meta[key] = f"{meta[key]} {tag}"
    meta["canary"] = tag
    q["meta"] = meta
    return {**q, "answer_canary": tag}


def _form_problem(view: QuestionView, answer: object) -> str | None:
    if not isinstance(answer, Mapping):
        return f"answer is {type(answer).__name__}, not a JSON object"
    if "error" in answer:
        return None  # a declared failure is data (scored invalid)
    if view["question_type"] == "fib_all":
        choices = answer.get("choices")
        if not isinstance(choices, Mapping) or set(choices) != set(view["varying_keys"]):
            return f"fill-in answer {dict(answer)!r} does not name every slot"
        for slot, i in choices.items():
            if not isinstance(i, int) or not 0 <= i < len(view["candidates"][slot]):
                return f"fill-in choice {slot}={i!r} is out of range"
        return None
    option = answer.get("option")
    if not isinstance(option, int) or not 0 <= option < len(view["options"]):
        return f"multiple-choice answer {dict(answer)!r} is out of range"
    return None


def _fresh(make_agent: Callable[[], QuestionAgent], seed: int) -> QuestionAgent:
    agent = make_agent()
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset(seed)
    return agent


def agent_problems(
    make_agent: Callable[[], QuestionAgent], questions: Sequence[Question], seed: int
) -> list[str]:
    problems: list[str] = []
    views = []
    for q in questions:
        view = agent_view(plant(q))
        leaked = CANARY.findall(canonical_json(view))
        if leaked:
            problems.append(f"firewall: question {q['id']} shows {leaked[:2]}")
            break
        views.append(view)
    first = _fresh(make_agent, seed)
    answers = [first.answer(dict(v)) for v in views]  # a copy each, as the runner hands them
    for view, answer in zip(views, answers, strict=True):
        problem = _form_problem(view, answer)
        if problem:
            problems.append(f"form: question {view['id']}: {problem}")
            break
    second = _fresh(make_agent, seed)
    backwards = [second.answer(dict(v)) for v in reversed(views)][::-1]
    if canonical_json(backwards) != canonical_json(answers):
        problems.append("determinism: the same seed gave other answers (or depends on order)")
    return problems
