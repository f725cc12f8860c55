"""The conditions suite's LLM agent: answers condition-selection questions with a chat model.

The generic client, wire protocol and call log live in `labreplay.agents`; this module only
binds them to the suite's question rendering (`prompts.render_prompt`), so the core never
imports a suite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Unpack

from labreplay.errors import AgentError
from labreplay.sdk.agents import (
    AGENT_PREFIX,
    AsyncLLMClient,
    CallLog,
    CallRecord,
    LLMClient,
    ResponseCache,
    agent_name,
    client_options,
    is_builtin_spec,
)
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.options import BuilderKwargs
from labreplay.suites.conditions.llm_prompts import (
    PROMPT_VERSION,
    question_answer,
    question_messages,
    question_schema,
)
from labreplay.suites.conditions.prompts import render_prompt
from labreplay.suites.conditions.questions import QuestionView, view_of

QuestionRenderer = Callable[[QuestionView], str]


class LLMQuestionAgent:
    """Answers conditions-suite questions with a chat model (implements its QuestionAgent).

    The question text is the suite's own rendering (`render`); the answer is asked for as JSON
    under `question_schema`, validated and repaired like campaign actions, and returned
    0-based: {"option": i} or {"choices": {k: i}}. A failed answer is {"error": reason,
    "raw": text}, which the suite scores as invalid. `answer_many` keeps up to
    `max_concurrency` questions in flight.
    """

    def __init__(
        self,
        client: LLMClient,
        render: QuestionRenderer,
        concurrent: AsyncLLMClient | None = None,
    ) -> None:
        self.client = client
        self.concurrent = concurrent
        self.render = render
        self.name = agent_name(client)
        self.model = client.model
        self.endpoint = client.endpoint
        self._log = CallLog()

    def params(self) -> dict[str, JsonValue]:
        # No max_concurrency: how many questions are in flight does not change the answers,
        # and the params are part of the run id (a resume with another bound must find it).
        return {**self.client.params(), "prompt_version": PROMPT_VERSION}

    def bind_store(self, store: ResponseCache | None) -> None:
        self.client.cache = store
        if self.concurrent is not None:
            self.concurrent.cache = store

    def reset(self, seed: int) -> None:
        self._log.reset()
        self.client.reseed(seed)
        if self.concurrent is not None:
            self.concurrent.reseed(seed)

    def _job(self, view: QuestionView) -> tuple[list[dict[str, str]], JsonObject]:
        schema = question_schema(view)
        return question_messages(self.render(view), schema), schema

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        view = view_of(question_view)
        messages, schema = self._job(view)
        reply = self.client.complete_json(messages, schema, "answer")
        self._log.add(reply)
        return question_answer(view, reply)

    def answer_many(self, views: Sequence[Mapping[str, JsonValue]]) -> list[JsonObject]:
        """Answers in input order (and calls logged in input order), many in flight at once."""
        if self.concurrent is None:
            return [self.answer(v) for v in views]
        shown = [view_of(v) for v in views]
        replies = self.concurrent.run_many([self._job(v) for v in shown], "answer")
        self._log.add_all(replies)  # every call accounted before a cap ends the run
        return [question_answer(view, reply) for view, reply in zip(shown, replies, strict=True)]

    def drain_calls(self) -> list[CallRecord]:
        return self._log.drain()


def make_question_agent(
    agent: str,
    *,
    store: ResponseCache | None = None,
    render: QuestionRenderer | None = None,
    max_concurrency: int | None = None,
    **options: Unpack[BuilderKwargs],
) -> LLMQuestionAgent:
    """Build a question agent from `openai:MODEL` and the LLM options (`render` defaults to the
    suite's prompt)."""
    model, api_key, client = client_options(agent, store, **options)
    # One meter for both clients: the run's caps count every call, sync or concurrent.
    concurrent = AsyncLLMClient(model, api_key=api_key, max_concurrency=max_concurrency, **client)
    return LLMQuestionAgent(
        LLMClient(model, api_key=api_key, **client), render or render_prompt, concurrent
    )


def conditions_agent(model: str | None = None, seed: int = 0, **options: Any) -> LLMQuestionAgent:
    """The conditions CLI's `--agent llm --model MODEL` (endpoint from OPENAI_BASE_URL unless
    `base_url` is given). `seed` is the run seed the sampling seed is derived from."""
    if not model:
        raise AgentError(
            "--agent llm needs --model MODEL (served at OPENAI_BASE_URL, e.g. a local "
            "llama.cpp server: --model smollm2)"
        )
    # `openai:MODEL` as given; a model named by one of inspect's own providers
    # (`openai-api/local/m`) through inspect; any other name (`Qwen/Qwen2.5-7B`) as before.
    builtin = is_builtin_spec(model)
    spec = model if model.startswith(AGENT_PREFIX) or builtin else f"{AGENT_PREFIX}{model}"
    agent = make_question_agent(spec, **options)
    agent.reset(seed)
    return agent
