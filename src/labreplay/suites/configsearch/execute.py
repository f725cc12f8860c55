"""Configsearch on any executor, through the shared driver (`labreplay.execute.driver`).

Sweep: one unit per (r, n) training set evaluates every s of it, so each fold fit is made by
exactly one worker (fits are cached by model, r and n); the t-SNE embedding each r needs is
computed first, one unit per r, so two workers never embed the same sample. Search: one unit
per seed (a search is sequential). Workers rebuild the evaluator from the data directory and
share the on-disk pipeline cache when they share a filesystem; the driver appends the returned
evaluations and steps to the run's recorder in the in-process order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache, partial
from pathlib import Path

from labreplay.sdk import HeaderPayload, Recorder
from labreplay.sdk.agents import (
    AgentUnavailable,
    Optimizer,
    ResolvedAgent,
    ResponseCache,
    close_agent,
    isolation_of,
)
from labreplay.sdk.engine import Executor, Store, Unit, run_units
from labreplay.sdk.events import JsonObject
from labreplay.suites.configsearch.events import EvaluationPayload
from labreplay.suites.configsearch.pipeline import PipelineSettings
from labreplay.suites.configsearch.runner import Advances, ConfigSearch, SearchOutcome
from labreplay.suites.configsearch.search import COST_ALPHA, SearchResult
from labreplay.suites.configsearch.space import Config, ConfigSpace
from labreplay.suites.configsearch.targets import MIN_TEST_POINTS

OPTIMIZER_CONTRACT = "labreplay.agents.contracts:Optimizer"

# `ConfigSearch.search_events`'s positional arguments: models, problem, method, budget, init,
# seed, gt, truth, gt_cost, cost_alpha, header
SearchArgs = tuple[
    list[str], str, str, int, int, int, str, dict[str, float], int, float, HeaderPayload
]


@lru_cache(maxsize=2)
def _worker_copy(
    data_dir: str,
    task: str,
    settings: PipelineSettings,
    space: ConfigSpace,
    cache_dir: str,
    min_test_points: int = MIN_TEST_POINTS,
) -> ConfigSearch:
    return ConfigSearch(
        Path(data_dir), task, None, settings, space, Path(cache_dir),
        min_test_points=min_test_points,
    )  # fmt: skip


def _setup(campaign: ConfigSearch) -> tuple[str, str, PipelineSettings, ConfigSpace, str, int]:
    return (
        str(campaign.data_dir),
        campaign.task,
        campaign.evaluator.settings,
        campaign.space,
        str(campaign.evaluator.root),
        campaign.min_test_points,
    )


def embed_unit(
    setup: tuple[str, str, PipelineSettings, ConfigSpace, str, int],
    r: float,
    cache: ResponseCache | None = None,
) -> float:
    _worker_copy(*setup).evaluator.embedding(r)
    return r


def sweep_unit(
    setup: tuple[str, str, PipelineSettings, ConfigSpace, str, int],
    model: str,
    configs: Sequence[tuple[float, int, int]],
    cache: ResponseCache | None = None,
) -> list[EvaluationPayload]:
    """Evaluations (as stored) of `model` on `configs`, which share one training set."""
    copy = _worker_copy(*setup)
    return [copy.evaluate(model, Config(*c)).to_json() for c in configs]


def _keep(store: Store, value: float) -> float:
    return value


def _append_evaluations(
    chain: Recorder,
    done: dict[tuple[str, Config], float],
    model: str,
    progress: Advances | None,
    store: Store,
    evaluations: list[EvaluationPayload],
) -> int:
    for payload in evaluations:
        chain.append("evaluation", payload)
        c = payload["config"]
        done[(model, Config(float(c["r"]), int(c["n"]), int(c["s"])))] = float(payload["mae"])
        if progress is not None:
            progress.advance(1)
    return len(evaluations)


def sweep_on(
    campaign: ConfigSearch,
    model: str,
    chain: Recorder,
    done: dict[tuple[str, Config], float],
    executor: Executor,
    progress: Advances | None = None,
) -> None:
    """Evaluate every feasible configuration not yet in `done` on `executor`, appending the
    evaluations to `chain` in the space's order."""
    if progress is not None:
        progress.advance(sum(1 for c in campaign.feasible if (model, c) in done))
    groups: dict[tuple[float, int], list[Config]] = {}
    for config in campaign.feasible:  # r, n, s order: each (r, n) group is contiguous
        if (model, config) not in done:
            groups.setdefault((config.r, config.n), []).append(config)
    if not groups:
        return
    setup = _setup(campaign)
    run_id = chain.run_id
    rs = sorted({r for r, _ in groups})
    run_units(
        "configsearch",
        [Unit(f"{run_id}:embed:{r}", partial(embed_unit, setup, r), _keep) for r in rs],
        campaign._db,
        executor,
    )
    units = [
        Unit(
            f"{run_id}:fit:{r}:{n}",
            partial(sweep_unit, setup, model, [(c.r, c.n, c.s) for c in configs]),
            partial(_append_evaluations, chain, done, model, progress),
        )
        for (r, n), configs in groups.items()
    ]
    run_units("configsearch", units, campaign._db, executor)


def search_unit(
    setup: tuple[str, str, PipelineSettings, ConfigSpace, str, int],
    args: SearchArgs,
    source: str | Callable[[], Optimizer] | None = None,
    cache: ResponseCache | None = None,
) -> tuple[list[dict[str, object]], SearchResult]:
    """One search on a worker; `source` rebuilds a user's optimiser there (its MODULE:ATTR
    reference, or its factory), None for a built-in method."""
    if source is None:
        return _worker_copy(*setup).search_events(*args)
    try:
        with _built(source) as optimizer:
            return _worker_copy(*setup).search_events(*args, optimizer=optimizer)
    except AgentUnavailable as exc:
        return [], _failed_result(args, str(exc))


def _failed_result(args: SearchArgs, cause: str) -> SearchResult:
    """The search of an optimiser that stopped answering: recorded failed with the cause."""
    result = SearchResult(args[1], args[2])
    result.failure = cause
    return result


@contextmanager
def _built(source: str | Callable[[], Optimizer]) -> Iterator[Optimizer]:
    """A fresh optimiser for one search, closed after it (an isolated one's child process
    never outlives its search)."""
    from labreplay.sdk.agents import build_from_ref

    optimizer = build_from_ref(source) if isinstance(source, str) else source()
    try:
        yield optimizer
    finally:
        close_agent(optimizer)


def resolve_optimizer_agent(
    agent: object, isolate: bool = False, agent_timeout_s: float | None = None
) -> str | ResolvedAgent:
    """A built-in method's name (bo | random | exhaustive) as it is, or any optimiser (object,
    factory, registered name, MODULE:ATTR) checked against `labreplay.Optimizer` before any
    store is opened. `isolate=True` serves an importable optimiser from a child process, each
    call answered within `agent_timeout_s` or the run is recorded failed."""
    from labreplay.sdk.agents import resolve_agent, resolve_isolated
    from labreplay.suites.configsearch.search import METHODS

    if isinstance(agent, ResolvedAgent):
        return agent
    if isinstance(agent, str) and agent in METHODS and not isolate:
        return agent
    if isolate:
        return resolve_isolated(agent, OPTIMIZER_CONTRACT, agent_timeout_s)
    return resolve_agent(agent, Optimizer, also_known=tuple(METHODS))


def run_searches(
    campaign: ConfigSearch,
    models: Sequence[str],
    problem: str,
    method: object,
    budget: int,
    init: int,
    seeds: Sequence[int],
    gt: str,
    executor: Executor | None = None,
    cost_alpha: float = COST_ALPHA,
) -> list[SearchOutcome]:
    """One search per seed, on `executor`; each stored exactly as `ConfigSearch.run` would.
    `method`: a built-in method's name, or any optimiser `resolve_optimizer_agent` takes (or
    its result): it gets the same candidates, initial design, budget and scoring, and its
    runs are keyed by its name and params."""
    models = list(models)
    agent = resolve_optimizer_agent(method)
    user: JsonObject | None = None
    source: str | Callable[[], Optimizer] | None = None
    name = agent.name if isinstance(agent, ResolvedAgent) else agent
    if isinstance(agent, ResolvedAgent):
        user = {"name": agent.name, "params": agent.params, "isolation": _isolation(agent)}
        # a worker rebuilds it from its reference when it has one, else from the factory
        source = agent.ref if agent.ref is not None and agent.probe is not None else agent.make
    truth, gt_cost = campaign.ground_truth(models, gt) if problem == "closest" else ({}, 0)
    setup = _setup(campaign)
    units = []
    for seed in seeds:
        chain, finished = campaign.open_search(
            models, problem, name, budget, init, seed, gt, cost_alpha, user
        )

        def stored(store: Store, finished: SearchOutcome | None = finished) -> SearchOutcome | None:
            return finished

        def persist(
            store: Store,
            value: tuple[Sequence[Mapping[str, object]], SearchResult],
            chain: Recorder = chain,
        ) -> SearchOutcome:
            events, result = value
            chain.log_calls(result.model_calls)  # a failed run's calls are accounted too
            if result.failure is not None:
                return _finish_failed(chain, result)
            chain.take(events)
            return campaign.finish_search(chain, result, models, truth)

        header = campaign.search_header_payload(
            models, problem, name, budget, init, seed, gt, cost_alpha, user
        )
        args: SearchArgs = (
            models,
            problem,
            name,
            budget,
            init,
            seed,
            gt,
            truth,
            gt_cost,
            cost_alpha,
            header,
        )

        def here(store: Store, chain: Recorder = chain, args: SearchArgs = args) -> SearchOutcome:
            # in-process: this campaign's own evaluator and caches, no worker copy
            if source is None:
                events, result = campaign.search_events(*args)
            else:
                try:
                    with _built(agent.make if isinstance(agent, ResolvedAgent) else source) as opt:
                        events, result = campaign.search_events(*args, optimizer=opt)
                except AgentUnavailable as exc:
                    return _finish_failed(chain, _failed_result(args, str(exc)))
                chain.log_calls(result.model_calls)  # a failed run's calls are accounted too
                if result.failure is not None:
                    return _finish_failed(chain, result)
            chain.take(events)
            return campaign.finish_search(chain, result, models, truth)

        compute = partial(search_unit, setup, args, source)
        units.append(Unit(chain.run_id, compute, persist, stored, in_place=here))
    return run_units("configsearch", units, campaign._db, executor)


def _finish_failed(chain: Recorder, result: SearchResult) -> SearchOutcome:
    """A run whose optimiser stopped answering is `failed` with the cause, never scored
    (the next run of it starts afresh: `open_run` resets failed runs)."""
    summary: dict[str, object] = {"status": "failed", "cause": result.failure}
    chain.finish("failed", summary)
    return chain.run_id, result, summary


def _isolation(agent: ResolvedAgent) -> str:
    return isolation_of(agent.probe) if agent.probe is not None else "subprocess"


__all__ = ["resolve_optimizer_agent", "run_searches", "sweep_on"]
