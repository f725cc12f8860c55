"""Conditions runs on any executor: one `Unit` per batch of questions for the shared driver.

A unit answers and scores its batch wherever it runs (in-process, a thread, a Dask worker); the
worker reads the question file itself (its sha256 is checked on arrival, so a worker never
answers a different file) and rebuilds the agent from its name. The driver appends the returned
answer events to the run's one recorder in question order, so the stored run is identical
whatever the executor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import NotRequired, TypedDict

from labreplay.errors import AgentError, DataError, RunFailedError
from labreplay.sdk import Recorder, sha256_file
from labreplay.sdk.agents import (
    AgentUnavailable,
    CallRecord,
    CapReached,
    ResolvedAgent,
    ResponseCache,
    close_agent,
    drain_calls,
    resolve_agent,
    resolve_isolated,
)
from labreplay.sdk.engine import Executor, Store, Unit, run_units
from labreplay.suites.conditions.agents import QuestionAgent, reference_agent
from labreplay.suites.conditions.events import AnswerPayload
from labreplay.suites.conditions.questions import Question, agent_view, load_questions
from labreplay.suites.conditions.runner import (
    BATCH,
    _answers,
    answer_payload,
    answered,
    finish_question_run,
    open_question_run,
)
from labreplay.suites.conditions.scoring import answer_key

QUESTION_CONTRACT = "labreplay.agents.contracts:QuestionAgent"


class BatchResult(TypedDict):
    """What `answer_batch` returns: a batch's answer payloads in order and its model calls
    (and, when a run cap stopped it, the cap: no payloads then)."""

    payloads: list[AnswerPayload]
    calls: list[CallRecord]
    cap: NotRequired[str]


@lru_cache(maxsize=4)
def _questions(path: str, sha256: str) -> tuple[Question, ...]:
    found = sha256_file(Path(path))
    if found != sha256:
        raise DataError(f"question file {path}: sha256 {found[:16]}... is not the run's {sha256}")
    return tuple(load_questions(Path(path)))


@lru_cache(maxsize=4)
def _reference(path: str, sha256: str, name: str, seed: int) -> QuestionAgent:
    return reference_agent(name, _questions(path, sha256), seed)


def build_agent(
    name: str,
    questions: Sequence[Question],
    seed: int,
    model: str | None = None,
    cache: ResponseCache | None = None,
    options: Mapping[str, object] | None = None,
) -> QuestionAgent:
    """`random`, `ranker` or `llm` (with `model` and the LLM `options` of
    `make_question_agent`), LLM agents answering from `cache`."""
    if name == "llm":
        from labreplay.suites.conditions.llm_agent import conditions_agent

        agent = conditions_agent(model=model, seed=seed, **dict(options or {}))
        agent.bind_store(cache)
        return agent
    return reference_agent(name, questions, seed)


BUILTIN_AGENTS = ("random", "ranker", "exclusion", "precedent_ranker", "llm")


def resolve_question_agent(
    agent: object,
    questions: Sequence[Question],
    seed: int,
    model: str | None = None,
    options: Mapping[str, object] | None = None,
    *,
    isolate: bool = False,
    agent_timeout_s: float | None = None,
) -> ResolvedAgent:
    """Any conditions agent: `random`, `ranker`, `llm` (with `model`), an object or factory
    implementing `QuestionAgent`, a registered name or `MODULE:ATTR`; checked against the
    contract before anything runs (one AgentError line otherwise). `isolate=True` serves an
    importable agent from a child process that receives only question views, each answer
    due within `agent_timeout_s` (60 s) or the run is recorded failed."""
    if isolate:
        if isinstance(agent, str) and agent in BUILTIN_AGENTS:
            raise AgentError(
                f"agent {agent!r}: --isolate runs your Python agents (MODULE:ATTR or a "
                "registered name); the reference agents need no isolation"
            )
        return resolve_isolated(agent, QUESTION_CONTRACT, agent_timeout_s)
    if isinstance(agent, str) and agent in BUILTIN_AGENTS:
        built = build_agent(agent, questions, seed, model, None, options)
        # An LLM agent is labelled with its model as given: its batches are rebuilt from it.
        label = model if agent == "llm" and model else agent
        return ResolvedAgent(label, lambda: built, built.name, built.params(), None, agent, built)
    return resolve_agent(agent, QuestionAgent, also_known=BUILTIN_AGENTS)


def _same(agent: QuestionAgent) -> QuestionAgent:
    return agent


def _agent_for_batch(
    source: str | Callable[[], QuestionAgent],
    path: str,
    sha256: str,
    model: str | None,
    seed: int,
    cache: ResponseCache | None,
    options: Mapping[str, object] | None = None,
) -> QuestionAgent:
    if isinstance(source, str) and source == "llm":
        return build_agent(source, _questions(path, sha256), seed, model, cache, options)
    if isinstance(source, str) and source in BUILTIN_AGENTS:
        return _reference(path, sha256, source, seed)
    if isinstance(source, str):  # MODULE:ATTR or a registered name, rebuilt where it runs
        rebuilt: QuestionAgent = resolve_agent(source, QuestionAgent).make()  # checked there
        return rebuilt
    return source()


def answer_batch(
    path: str,
    sha256: str,
    name: str | Callable[[], QuestionAgent],
    model: str | None,
    seed: int,
    ids: Sequence[str],
    cache: ResponseCache | None = None,
    *,
    options: Mapping[str, object] | None = None,
) -> BatchResult:
    """The work unit: answer events (payloads) of `ids`, in order, and the model calls made
    (and, when a run cap stopped it, the cap: no payloads then, every call accounted)."""
    questions = _questions(path, sha256)
    agent = _agent_for_batch(name, path, sha256, model, seed, cache, options)
    by_id = {q["id"]: q for q in questions}
    chosen = [by_id[i] for i in ids]
    try:
        raws = list(_answers(agent, [agent_view(q) for q in chosen]))
    except CapReached as reached:
        cap = f"{reached.cap} ({reached.detail})"
        return {"payloads": [], "calls": drain_calls(agent), "cap": cap}
    payloads = [answer_payload(q, answer_key(q), raw) for q, raw in zip(chosen, raws, strict=True)]
    return {"payloads": payloads, "calls": drain_calls(agent)}


def _record(
    recorder: Recorder,
    progress: Callable[[int], None] | None,
    capped: dict[str, str],
    store: Store,
    value: BatchResult,
) -> int:
    if value.get("cap"):
        capped.setdefault("cap", str(value["cap"]))
    for payload in value["payloads"]:
        recorder.append("answer", payload)
    recorder.log_calls(value["calls"])
    recorder.flush()
    if progress:
        progress(len(value["payloads"]))
    return len(value["payloads"])


def run_questions(
    store: Store,
    questions_path: Path,
    name: object,
    seed: int,
    model: str | None = None,
    executor: Executor | None = None,
    progress: Callable[[int], None] | None = None,
    batch: int = BATCH,
    options: Mapping[str, object] | None = None,
    ids: Sequence[str] | None = None,
) -> dict[str, object]:
    """Answer a question file (or the questions `ids` of it: a `--limit` subset, its own run)
    with agent `name` (anything `resolve_question_agent` takes, or its result) on `executor`
    (default in-process), `batch` questions per unit; resumes. With run caps
    (`options["caps"]`) the run is one unit, so one meter sees every call."""
    questions = load_questions(questions_path)
    if ids is not None:
        wanted = set(ids)
        questions = [q for q in questions if q["id"] in wanted]
    sha256 = sha256_file(questions_path)
    path = str(questions_path.resolve())
    resolved = (
        name
        if isinstance(name, ResolvedAgent)
        else resolve_question_agent(name, questions, seed, model, options)
    )
    isolated = resolved.probe is None and resolved.builtin is None  # served by a child
    probe = resolved.probe if resolved.probe is not None else resolved.make()
    try:
        return _run_with(
            store, questions_path, questions, resolved, probe, isolated, seed, model,
            executor, progress, batch, options, ids, path, sha256,
        )  # fmt: skip
    finally:  # an isolated agent's child process never outlives its run
        if isolated:
            close_agent(probe)


def _run_with(
    store: Store,
    questions_path: Path,
    questions: list[Question],
    resolved: ResolvedAgent,
    probe: QuestionAgent,
    isolated: bool,
    seed: int,
    model: str | None,
    executor: Executor | None,
    progress: Callable[[int], None] | None,
    batch: int,
    options: Mapping[str, object] | None,
    ids: Sequence[str] | None,
    path: str,
    sha256: str,
) -> dict[str, object]:
    # One agent answers the whole run: in-process and on threads the checked probe itself,
    # on other executors a rebuild from its name or reference (or a pickled copy); an
    # isolated one is always its one child process.
    source: str | Callable[[], QuestionAgent] = (
        resolved.builtin or resolved.ref or partial(_same, probe)
    )
    if isolated:
        source = partial(_same, probe)
    if resolved.builtin is not None and source != "llm":
        probe = _reference(path, sha256, resolved.builtin, seed)  # the one its batches use
    recorder, finished = open_question_run(
        store, questions_path, questions, probe, seed, subset=ids is not None
    )
    if finished is not None:
        return finished
    done = answered(recorder)
    todo = [q["id"] for q in questions if q["id"] not in done]
    if progress and done:
        progress(len(done))
    if options and options.get("caps") is not None:
        batch = max(1, len(todo))
    capped: dict[str, str] = {}
    work = partial(answer_batch, options=dict(options or {})) if source == "llm" else answer_batch
    units = [
        Unit(
            f"{recorder.run_id}:{todo[i]}:{len(todo[i : i + batch])}",
            partial(work, path, sha256, source, model, seed, todo[i : i + batch]),
            partial(_record, recorder, progress, capped),
            uses_llm=source == "llm",
        )
        for i in range(0, len(todo), batch)
    ]
    try:
        run_units("conditions", units, store, executor)
    except AgentUnavailable as exc:  # the agent stopped answering: failed with the cause
        recorder.finish("failed", {"cause": str(exc)})
        raise RunFailedError(
            f"run {recorder.run_id}: {exc} (stored as failed, not ranked)"
        ) from None
    return finish_question_run(recorder, questions, seed, capped.get("cap"))


__all__ = [
    "BUILTIN_AGENTS",
    "answer_batch",
    "build_agent",
    "resolve_question_agent",
    "run_questions",
]
