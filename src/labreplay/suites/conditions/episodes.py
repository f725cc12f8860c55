"""The conditions suite as the runner plays it: one episode per question-file spec (or per
`--limit` subset), whose events are the agent's answers in question order.

`play` answers what the stored answers leave (a resumed run continues after its last stored
batch) and `score` is the pure function of the answers and the spec's question file that the
runner and `store verify` share.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal

from labreplay.errors import AgentError, DataError, SpecError
from labreplay.sdk import HEADER_KIND, sha256_file
from labreplay.sdk.agents import (
    AgentNonJSON,
    AnswersInBatches,
    CapReached,
    ResolvedAgent,
    ResponseCache,
    call_failures,
    drain_calls,
    json_problem,
    raised_message,
)
from labreplay.sdk.engine import (
    AGENT_RAISED,
    MODEL_CALLS_FAILED,
    REPLIES_INVALID,
    EnvironmentSpec,
    RunHealth,
    Verdict,
    run_verdict,
)
from labreplay.sdk.episodes import Episode, Event, EventSink, Scored
from labreplay.sdk.events import JsonObject
from labreplay.suites.conditions.agents import QuestionAgent, reference_agent
from labreplay.suites.conditions.events import AnswerPayload, conditions_events
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import (
    Question,
    QuestionView,
    agent_view,
    load_questions,
)
from labreplay.suites.conditions.scoring import AnswerKey, answer_key, score_answer
from labreplay.suites.conditions.summary import headline, summarise

BATCH = 500  # questions asked at once (an LLM agent keeps several in flight)


def _answers(agent: QuestionAgent, views: Sequence[QuestionView]) -> Iterator[JsonObject]:
    """Raw answers in question order. Agents that can answer many at once (LLM agents with a
    concurrency bound) get a batch at a time; an agent's own failure on a question is recorded
    as that question's (wrong) answer."""
    for start in range(0, len(views), BATCH):
        chunk = views[start : start + BATCH]
        if isinstance(agent, AnswersInBatches):
            try:
                yield from agent.answer_many(chunk)
                continue
            except (AgentError, CapReached):  # a cap ends the run: never a wrong answer
                raise
            except Exception:  # fall back to one at a time to find the failing question
                pass
        for view in chunk:
            yield _guarded_answer(agent, view)


def _guarded_answer(agent: QuestionAgent, view: QuestionView) -> JsonObject:
    """One raw answer; an exception or a value that is not a JSON object becomes
    `{"error": ...}` worded exactly as an isolated agent's (`labreplay.agents.isolated`), so
    the stored run is the same in-process and isolated."""
    try:
        value = agent.answer(dict(view))
    except (AgentError, CapReached):
        raise
    except AgentNonJSON as exc:
        return {"error": exc.message}
    except Exception as exc:
        return {"error": raised_message("answer", exc)}
    problem = json_problem("answer", value)
    if problem is not None:
        return {"error": problem}
    if not isinstance(value, dict):
        return {"error": f"answer() returned {type(value).__name__}, not a JSON object"}
    return value


def answer_payload(question: Question, key: AnswerKey, raw: JsonObject) -> AnswerPayload:
    """One answer event: the raw answer, its parsed form and its per-question scores."""
    view = agent_view(question)
    if not isinstance(raw, Mapping):  # e.g. a batch answerer's garbage: recorded, not a crash
        raw = {"error": f"answer() returned {type(raw).__name__}, not a JSON object"}
    parsed = normalise_answer(raw, view) if "error" not in raw else {"invalid": raw["error"]}
    return {
        "question_id": question["id"],
        "raw": raw,
        "answer": parsed,
        "result": score_answer(key, parsed),
    }


def _health(
    events: Sequence[Mapping[str, object]], calls: Sequence[Mapping[str, object]]
) -> RunHealth:
    """Each answer is one policy call; it failed when the agent gave no usable answer."""
    failed_calls = {str(c["error"]) for c in calls if c.get("error")}
    health = RunHealth()
    for event in conditions_events(events):
        if event["kind"] != "answer":
            continue
        raw = event["payload"].get("raw")
        error = raw.get("error") if isinstance(raw, Mapping) else None
        if not error:
            health.policy(None)
        elif "() raised " in str(error):
            health.policy(AGENT_RAISED, error)
        elif str(error) in failed_calls or any(str(error) in f for f in failed_calls):
            health.policy(MODEL_CALLS_FAILED, error)
        else:
            health.policy(REPLIES_INVALID, error)
    return health


def answers_verdict(
    events: Sequence[Mapping[str, object]], calls: Sequence[Mapping[str, object]]
) -> Verdict:
    """The one failed-run rule, as the runner applies it, for a conditions run."""
    return run_verdict(_health(events, calls), calls)


@lru_cache(maxsize=4)
def _questions(path: str, sha256: str) -> tuple[Question, ...]:
    found = sha256_file(Path(path))
    if found != sha256:
        raise DataError(f"question file {path}: sha256 {found[:16]}... is not the run's {sha256}")
    return tuple(load_questions(Path(path)))


def spec_questions(spec: EnvironmentSpec) -> tuple[Question, ...]:
    """The questions of `spec`'s attached question file (checked against its sha256)."""
    sha256 = str(spec.body.get("sha256", ""))
    where = spec.attached_files.get(sha256)
    if where is None:
        raise SpecError(f"spec {spec.spec_id}: its question file is not attached")
    return _questions(str(Path(where).resolve()), sha256)


def _chosen(spec: EnvironmentSpec, episode: Episode) -> list[Question]:
    questions = spec_questions(spec)
    if episode.scope is None:
        return list(questions)
    wanted = set(episode.scope)
    return [q for q in questions if q["id"] in wanted]


def build_agent(
    spec: EnvironmentSpec,
    agent: ResolvedAgent,
    seed: int,
    options: Mapping[str, object],
    cache: ResponseCache | None,
) -> QuestionAgent:
    """The agent that answers `spec`: a reference agent built from the whole question file,
    the LLM agent on `options["model"]` answering from `cache`, or the user's agent."""
    if agent.builtin == "llm":
        from labreplay.suites.conditions.llm_agent import conditions_agent

        llm_options = options.get("llm")
        built = conditions_agent(
            model=str(options.get("model") or agent.label),
            seed=seed,
            **dict(llm_options if isinstance(llm_options, Mapping) else {}),
        )
        built.bind_store(cache)
        return built
    if agent.builtin is not None:
        return reference_agent(agent.builtin, spec_questions(spec), seed)
    made: QuestionAgent = agent.make()  # an isolated agent: its own child process
    return made


class ConditionsEpisodes:
    """`labreplay.sdk.episodes.EpisodeSuite` for question files."""

    name = "conditions"
    resume: Literal["continue", "replay"] = "continue"

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        scope = options.get("scope")
        return [
            Episode(
                provenance={"question_file_sha256": spec.body["sha256"]},
                scope=tuple(str(i) for i in scope) if isinstance(scope, list | tuple) else None,
            )
        ]

    def agent_for(
        self,
        spec: EnvironmentSpec,
        agent: ResolvedAgent,
        seed: int,
        options: Mapping[str, object],
        cache: ResponseCache | None,
    ) -> QuestionAgent:
        return build_agent(spec, agent, seed, options, cache)

    def play(
        self, spec: EnvironmentSpec, episode: Episode, agent: QuestionAgent, sink: EventSink
    ) -> None:
        header = sink.header()
        if header is not None:
            sink.emit(HEADER_KIND, header)
        done = {
            e["payload"]["question_id"]
            for e in conditions_events(sink.stored)
            if e["kind"] == "answer"
        }
        if done:
            sink.advance(len(done))
        todo = [q for q in _chosen(spec, episode) if q["id"] not in done]
        for start in range(0, len(todo), BATCH):
            chunk = todo[start : start + BATCH]
            raws = list(_answers(agent, [agent_view(q) for q in chunk]))
            for question, raw in zip(chunk, raws, strict=True):
                sink.emit("answer", answer_payload(question, answer_key(question), raw))
            sink.calls(drain_calls(agent))
            sink.advance(len(chunk))

    def score(
        self,
        spec: EnvironmentSpec,
        episode: Episode,
        events: Sequence[Event],
        calls: Sequence[Mapping[str, object]],
        seed: int,
    ) -> Scored:
        by_id = {q["id"]: q for q in _chosen(spec, episode)}
        answers = [e["payload"] for e in conditions_events(events) if e["kind"] == "answer"]
        keys = [answer_key(by_id[str(a["question_id"])]) for a in answers]
        results = [score_answer(k, a["answer"]) for k, a in zip(keys, answers, strict=True)]
        summary = summarise(keys, results, seed)
        flat: dict[str, float | None] = dict(headline(summary))
        extra: dict[str, object] = {}
        health: RunHealth = _health(events, calls)
        if calls:
            flat["failed_call_share"] = call_failures(calls)["failed_call_share"]
            extra["invalid_answers"] = sum(1 for a in answers if "invalid" in (a["answer"] or {}))
        return {
            "scores": {**flat, "summary": None},
            "details": {"summary": summary},
            "summary": {**flat, **extra},
            "health": health,
        }


EPISODES = ConditionsEpisodes()

__all__ = [
    "BATCH",
    "EPISODES",
    "ConditionsEpisodes",
    "answer_payload",
    "answers_verdict",
    "build_agent",
    "spec_questions",
]
