"""The conditions door: resolving an agent and running question files through the core
runner. `labreplay.run("conditions", ...)` (through the suite) and `conditions run` (the CLI)
call these two functions with the same options and defaults."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.errors import SpecError

if TYPE_CHECKING:
    from labreplay.sdk.agents import ResolvedAgent
    from labreplay.sdk.engine import EnvironmentSpec, Executor, Store
    from labreplay.sdk.options import LlmOptions
    from labreplay.suites.conditions.agents import QuestionAgent
    from labreplay.suites.conditions.options import ConditionsRunOptions
    from labreplay.suites.conditions.questions import Question


def resolve_conditions_agent(agent: Any, **options: Any) -> Any:
    """Options: those of `run` (`ConditionsRunOptions` and `LlmOptions`)."""
    from labreplay.suites.conditions.options import parse_run_options

    seed = int(options.pop("seed", 0))
    run_options, llm = parse_run_options(options)
    questions = Path(run_options.questions) if run_options.questions is not None else None
    return _resolve(agent, run_options, llm, seed, questions)


# The agents resolved by name here; any other agent is the user's (checked by the contract).
BUILTIN_AGENTS = ("random", "ranker", "usual_winner", "exclusion", "precedent_ranker", "llm")


def _resolve(
    agent: object, run_options: ConditionsRunOptions, llm: LlmOptions, seed: int, path: Path | None
) -> ResolvedAgent | str:
    """`agent` resolved for the questions of `path` (None: none yet): a reference agent, `llm`
    or `openai:MODEL`, or the user's agent (an object or factory implementing `QuestionAgent`, a
    registered name, `MODULE:ATTR`), checked against the contract before anything runs.
    `isolate` serves an importable agent from a child process that receives only question
    views, each answer due within `agent_timeout_s` or the run is recorded failed."""
    from labreplay.errors import AgentError
    from labreplay.sdk.agents import ResolvedAgent, is_llm_agent, resolve_agent, resolve_isolated
    from labreplay.suites.conditions.agents import QuestionAgent, reference_agent
    from labreplay.suites.conditions.questions import load_questions

    named = agent if isinstance(agent, str) else None
    model = named if is_llm_agent(named) else run_options.model
    builtin = "llm" if is_llm_agent(named) else named if named in BUILTIN_AGENTS else None
    if run_options.isolate:
        if builtin is not None:
            raise AgentError(
                f"agent {builtin!r}: --isolate runs your Python agents (MODULE:ATTR or a "
                "registered name); the reference agents need no isolation"
            )
        contract = "labreplay.agents.contracts:QuestionAgent"
        return resolve_isolated(agent, contract, run_options.agent_timeout_s)
    if builtin is None:
        return resolve_agent(agent, QuestionAgent, also_known=BUILTIN_AGENTS)
    if path is None:
        # a reference agent is built from the questions: `run` resolves it once it has
        # found the spec's question file (attached, or in the store)
        return named or builtin  # the name as given
    built: QuestionAgent
    if builtin == "llm":
        from labreplay.suites.conditions.llm_agent import conditions_agent

        built = conditions_agent(model=model, seed=seed, **dict(run_options.agent_kwargs(llm)))
    else:
        chosen = _chosen(load_questions(path), run_options.limit, seed)
        built = reference_agent(builtin, chosen, seed)
    # An LLM agent is labelled with its model as given: its batches are rebuilt from it.
    label = model if builtin == "llm" and model else builtin
    return ResolvedAgent(label, lambda: built, built.name, built.params(), None, builtin, built)


def run_conditions(
    specs: Sequence[EnvironmentSpec],
    agent: object,
    store: Store,
    *,
    seed: int = 0,
    executor: Executor | None = None,
    **options: object,
) -> list[dict[str, object]]:
    """Options: those of `ConditionsRunOptions` (questions: the question file each spec was
    compiled into) and `LlmOptions`; the CLI's `conditions run` flags are generated from the
    same classes and it calls this with the same defaults."""
    from labreplay.sdk.agents import ResolvedAgent, is_llm_agent
    from labreplay.sdk.engine import raise_failed, run_suite
    from labreplay.suites.conditions.attachments import question_file_of
    from labreplay.suites.conditions.episodes import EPISODES
    from labreplay.suites.conditions.options import parse_run_options
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    run_options, llm = parse_run_options(options)
    agent_kwargs = run_options.agent_kwargs(llm)
    model = run_options.model
    if isinstance(agent, str) and is_llm_agent(agent):  # is_llm_agent: str only
        model = agent
    elif model is None and isinstance(agent, ResolvedAgent) and agent.builtin == "llm":
        # `labreplay.run` resolved `openai:MODEL` before calling here (the CLI passes
        # `model`): the model is its label, as `resolve_question_agent` made it
        model = agent.label
    if run_options.questions is not None:
        path = Path(run_options.questions)
        found = question_spec(path, load_questions(path)).spec_hash
        for spec in specs:
            if spec.spec_hash != found:
                raise SpecError(f"{path} does not match spec {spec.spec_hash[:16]}... (modified?)")
    else:  # each spec finds its own file before anything is recorded
        with ExitStack() as files:
            for spec in specs:
                files.enter_context(question_file_of(spec, store))
    summaries = []
    for spec in specs:
        with ExitStack() as files:
            if run_options.questions is None:
                path = files.enter_context(question_file_of(spec, store))
            questions = load_questions(path)
            resolved = agent
            if not isinstance(agent, ResolvedAgent):
                resolved = _resolve(agent, run_options, llm, seed, path)
            assert isinstance(resolved, ResolvedAgent)
            chosen = _chosen(questions, run_options.limit, seed)
            subset = run_options.limit is not None
            summaries += run_suite(
                EPISODES,
                [question_spec(path, chosen, subset)],
                resolved,
                store,
                seed=seed,
                options={
                    "model": model,
                    "llm": agent_kwargs,
                    "scope": [str(q["id"]) for q in chosen] if subset else None,
                },
                executor=executor,
                progress=run_options.progress,
            )
            raise_failed(summaries)
    return summaries


def run_agent(
    store: Store,
    questions_path: Path,
    questions: Sequence[Question],
    agent: QuestionAgent,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, object]:
    """Answer every question of `questions_path` with the agent object `agent` (resuming a
    partial run), score, store; return the summary: `labreplay.run` with one spec."""
    from labreplay.suites.conditions.runner import question_spec

    spec = question_spec(questions_path, questions)
    (result,) = run_conditions(
        [spec], agent, store, seed=seed, questions=questions_path, progress=progress
    )
    return result


def _chosen(questions: Sequence[Question], limit: int | None, seed: int) -> list[Question]:
    """`limit`: the first N questions in an order seeded by `seed` (as the CLI's --limit)."""
    from labreplay.sdk import first_in_seeded_order

    chosen: list[Question] = first_in_seeded_order(list(questions), limit, seed, "conditions")
    return chosen


__all__ = ["resolve_conditions_agent", "run_agent", "run_conditions"]
