"""`inspect eval labreplay/conditions -T questions=FILE --model PROVIDER/MODEL`.

One sample per question of a labreplay question file: the input is our chemist prompt
(`render_prompt` of the agent view: never an answer or a score), the solver is a plain
generation (any inspect solver or agent can replace it), and the scorer reads the completion
with our parser and scores it with our relative score (the same `score_answer` as
`labreplay conditions run`). `precedents` selects the precedent twins: `both` (default),
`with` or `without`. `labreplay import inspect-log LOG --store S` stores the log as a
conditions run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import TaskState, generate

from labreplay.errors import LabreplayError
from labreplay.sdk.agents import allow_mockllm_offline
from labreplay.sdk.events import JsonObject
from labreplay.suites.conditions.events import AnswerResult
from labreplay.suites.conditions.prompts import parse_answer, render_prompt
from labreplay.suites.conditions.questions import Question, agent_view, load_questions
from labreplay.suites.conditions.scoring import answer_key, score_answer

PRECEDENTS = {"both": None, "with": "with_precedents", "without": "no_precedents"}


def _selected(questions_path: str, precedents: str) -> list[Question]:
    if precedents not in PRECEDENTS:
        raise LabreplayError(
            f"-T precedents must be one of {', '.join(PRECEDENTS)}, got {precedents!r}"
        )
    wanted = PRECEDENTS[precedents]
    return [
        q
        for q in load_questions(Path(questions_path))
        if wanted is None or q["meta"].get("variant", "no_precedents") == wanted
    ]


class ReadAndScored(TypedDict):
    answer: JsonObject  # parsed: {"option": i}, {"choices": {...}} or {"invalid": reason}
    result: AnswerResult


def read_and_score(question: Question, completion: str) -> ReadAndScored:
    """Our parser on a completion, then our per-question result (as `conditions run`)."""
    view = agent_view(question)
    parsed = parse_answer(completion, view)
    return {"answer": parsed, "result": score_answer(answer_key(question), parsed)}


@scorer(metrics=[mean()])
def relative_score(questions: str, precedents: str = "both") -> Scorer:
    """Relative score of the option chosen (its utility over the table's best; 0 when the
    reply cannot be read, FIB: 0 without a Hit)."""
    by_id = {q["id"]: q for q in _selected(questions, precedents)}

    async def score(state: TaskState, target: Target) -> Score:
        question = by_id[str(state.sample_id)]
        read = read_and_score(question, state.output.completion)
        value = read["result"].get("score")
        return Score(
            value=float(value) if value is not None else 0.0,
            answer=state.output.completion,
            metadata=dict(read),
        )

    return score


@task
def conditions(questions: str, precedents: str = "both") -> Task:
    allow_mockllm_offline()  # `--model mockllm/model` runs without tiktoken's download
    chosen = _selected(questions, precedents)
    samples = [
        Sample(
            id=q["id"],
            input=render_prompt(agent_view(q)),
            metadata={"question_type": q["question_type"]},
        )
        for q in chosen
    ]
    return Task(
        dataset=MemoryDataset(samples, name=Path(questions).name),
        solver=generate(),  # the prompt asks for `Answer: <number>` (or a JSON object)
        scorer=relative_score(questions, precedents),
        metadata={"labreplay_suite": "conditions", "questions": str(Path(questions).resolve())},
    )
