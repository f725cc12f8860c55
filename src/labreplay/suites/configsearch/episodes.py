"""The configsearch suite as the runner plays it (`labreplay.sdk.engine.run_suite`).

Two kinds of run, two resume rules:
- a sweep (`SweepEpisodes`, resume "continue"): the exhaustive agent evaluates every feasible
  configuration of one model; a resumed sweep keeps its stored evaluations and does the rest;
- a search (`SearchEpisodes`, resume "replay"): one run per (task, models, problem, method,
  seed); the optimiser's ask/tell loop is played into the sink, and an unfinished search is
  recomputed (cheaply, from the pipeline cache) and checked event by event against its stored
  prefix.

`score` is the pure function of a run's events that the runner (and, for a sweep, `store
verify`) applies. A search's comparison with the exhaustive truth needs the truth table of
other runs: the `SearchEpisodes` of a command carries it, read from the store before it plays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

import numpy as np

from labreplay.sdk import HEADER_KIND
from labreplay.sdk.agents import (
    Optimizer,
    ResolvedAgent,
    ResponseCache,
    close_agent,
    drain_calls,
    isolation_of,
    sandbox_of,
)
from labreplay.sdk.engine import (
    EnvironmentSpec,
    Executor,
    RunHealth,
    WorkUnit,
    play_detached,
    run_suite,
)
from labreplay.sdk.episodes import Episode, Event, EventSink, Scored
from labreplay.sdk.events import HeaderPayload, JsonObject
from labreplay.suites.configsearch.events import (
    ConfigsearchEvent,
    EvaluationPayload,
    StepPayload,
    configsearch_events,
)
from labreplay.suites.configsearch.json_numbers import as_int
from labreplay.suites.configsearch.options import COST_ALPHA, METHODS
from labreplay.suites.configsearch.runner import (
    Advances,
    ConfigSearch,
    Setup,
    library_versions,
    worker_copy,
)
from labreplay.suites.configsearch.search import (
    CallsAModel,
    Candidate,
    SearchResult,
    Step,
    candidates,
    landscape,
    scored_trace,
    search,
    search_health,
)
from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config
from labreplay.suites.configsearch.targets import costs, sweep_summary, target_metrics

OPTIMIZER_CONTRACT = "labreplay.agents.contracts:Optimizer"
SWEEP_BRANCH = "sweep/exhaustive"

# a search's run id, result and run summary (what the scores table and the CLI read)
SearchOutcome = tuple[str, SearchResult, dict[str, object]]
Table = dict[tuple[str, Config], float]
SeTable = dict[tuple[str, Config], float | None]


# ---------------------------------------------------------------------------- the agents
class Searcher:
    """The agent of a configsearch run: its method (a built-in one, the exhaustive sweep, or a
    user's optimiser), the campaign it evaluates on, and the parameters its run is keyed by."""

    def __init__(
        self,
        name: str,
        params: Mapping[str, object],
        campaign: ConfigSearch,
        options: Mapping[str, Any],
        optimizer: Optimizer | None = None,
    ) -> None:
        self.name = name
        self._params = dict(params)
        self.campaign = campaign
        self.options = options
        self.optimizer = optimizer
        self.isolation = isolation_of(optimizer)
        self._drained = 0

    @property
    def sandbox(self) -> str:
        return sandbox_of(self.optimizer)

    def params(self) -> dict[str, object]:
        return dict(self._params)

    def drain_calls(self) -> list[JsonObject]:
        """The model calls of an optimiser that asks a model, since the last drain."""
        found = cast(list[JsonObject], drain_calls(self.optimizer))
        if isinstance(self.optimizer, CallsAModel):
            calls = self.optimizer.model_calls()
            found += cast(list[JsonObject], calls[self._drained :])
            self._drained = len(calls)
        return found

    def close(self) -> None:
        close_agent(self.optimizer)  # an isolated optimiser's child ends with its run


def _no_optimizer() -> None:
    return None


def method_agent(method: str) -> ResolvedAgent:
    """A built-in method (or the exhaustive sweep) as the runner's agent."""
    return ResolvedAgent(method, _no_optimizer, method, {}, builtin=method)


def resolve_optimizer_agent(
    agent: object, isolate: bool = False, agent_timeout_s: float | None = None
) -> str | ResolvedAgent:
    """A built-in method's name (bo | random | exhaustive) as it is, or any optimiser (object,
    factory, registered name, MODULE:ATTR) checked against `labreplay.Optimizer` before any
    store is opened. `isolate=True` serves an importable optimiser from a child process, each
    call answered within `agent_timeout_s` or the run is recorded failed."""
    from labreplay.sdk.agents import resolve_agent, resolve_isolated

    if isinstance(agent, ResolvedAgent):
        return agent
    if isinstance(agent, str) and agent in METHODS and not isolate:
        return agent
    if isolate:
        return resolve_isolated(agent, OPTIMIZER_CONTRACT, agent_timeout_s)
    return resolve_agent(agent, Optimizer, also_known=tuple(METHODS))


# ---------------------------------------------------------------------------- sweeps
def sweep_scores(events: Sequence[Event]) -> Scored:
    """A sweep's scores and summary from its evaluation events alone (`store verify` too)."""
    payloads = [cast(EvaluationPayload, e["payload"]) for e in events if e["kind"] == "evaluation"]
    land = sweep_summary(payloads)
    mae = land["mae"]
    summary: dict[str, object] = {
        **land,
        "infeasible": sum(1 for e in events if e["kind"] == "infeasible"),
        "min_mae": mae["min"],
        "max_mae": mae["max"],
        "max_min_ratio": mae["max_min_ratio"],
    }
    scores: dict[str, float | None] = {
        "min_mae": mae["min"],
        "max_mae": mae["max"],
        "max_min_ratio": mae["max_min_ratio"],
        "max_min_ratio_without_degenerate": land["mae_without_degenerate_folds"]["max_min_ratio"],
        "short_folds": float(land["short_folds"]),
    }
    return {"scores": scores, "details": {}, "summary": summary, "health": RunHealth()}


class SweepEpisodes:
    """`labreplay.sdk.episodes.EpisodeSuite` of exhaustive sweeps (options: setup, model)."""

    name = "configsearch"
    resume: Literal["continue", "replay"] = "continue"

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        return [Episode(SWEEP_BRANCH, provenance=_provenance(spec))]

    def agent_for(
        self,
        spec: EnvironmentSpec,
        agent: ResolvedAgent,
        seed: int,
        options: Mapping[str, object],
        cache: ResponseCache | None,
    ) -> Searcher:
        campaign = worker_copy(cast(Setup, options["setup"]))
        model = str(options["model"])
        return Searcher("exhaustive", campaign.run_params([model], "sweep", {}), campaign, options)

    def play(
        self, spec: EnvironmentSpec, episode: Episode, agent: Searcher, sink: EventSink
    ) -> None:
        campaign, model = agent.campaign, str(agent.options["model"])
        header = sink.header()
        if header is not None:  # a fresh sweep: its header, then what cannot be evaluated
            sink.emit(HEADER_KIND, header)
            for config, reason in sorted(campaign.infeasible.items()):
                sink.emit("infeasible", {"config": config.to_json(), "reason": reason})
        done = set(ConfigSearch._maes(sink.stored))
        if done:
            sink.advance(len(done))
        for r, n in campaign.training_sets():
            group = [c for c in campaign.feasible if (c.r, c.n) == (r, n)]
            todo = [c for c in group if (model, c) not in done]
            if not todo:
                continue
            campaign.evaluate_training_set(model, r, n)  # its n fold fits serve every s
            for config in todo:
                sink.emit("evaluation", campaign.evaluate(model, config).to_json())
            sink.advance(len(todo))  # stored at once: a fit is minutes of work
        sink.facts["cache"] = campaign.stats.as_dict()

    def score(
        self,
        spec: EnvironmentSpec,
        episode: Episode,
        events: Sequence[Event],
        calls: Sequence[Mapping[str, object]],
        seed: int,
    ) -> Scored:
        return sweep_scores(events)


class Provenance(TypedDict):
    """What a configsearch run row records besides its agent (`Episode.provenance`)."""

    data: list[str] | None  # the spec's data files
    libraries: dict[str, str | None]  # None: not installed


def _provenance(spec: EnvironmentSpec) -> Provenance:
    pipeline = spec.body.get("pipeline")
    files = pipeline.get("files") if isinstance(pipeline, Mapping) else None
    # the data files and the versions the fits ran with (a reference file carries them on)
    return {"data": files, "libraries": library_versions()}


def _fit_unit(setup: Setup, model: str, r: float, n: int) -> int:
    return len(worker_copy(setup).evaluate_training_set(model, r, n))


def _embed_unit(setup: Setup, r: float) -> float:
    worker_copy(setup).evaluator.embedding(r)
    return r


def _prefit(campaign: ConfigSearch, model: str, executor: Executor) -> None:
    """Fit every training set of the space on `executor` into the shared pipeline cache (the
    t-SNE embedding each r needs first, one unit per r, so two workers never embed the same
    sample; then one unit per (r, n), so each fold fit is made by exactly one worker)."""
    setup = campaign.setup()
    groups = campaign.training_sets()
    rs = sorted({r for r, _ in groups})
    list(executor.run([WorkUnit(f"embed:{r}", _embed_unit, (setup, r)) for r in rs]))
    fits = [WorkUnit(f"fit:{r}:{n}", _fit_unit, (setup, model, r, n)) for r, n in groups]
    list(executor.run(fits))


def sweep(
    campaign: ConfigSearch,
    model: str,
    progress: Advances | None = None,
    executor: Executor | None = None,
) -> tuple[str, Table]:
    """Every configuration of the space for one model, recorded by the runner; resumable.
    With an executor, the training sets are fitted there first (one unit per (r, n))."""
    if executor is not None and executor.name != "in-process":
        _prefit(campaign, model, executor)
    (done,) = run_suite(
        SweepEpisodes(),
        [campaign.environment],
        method_agent("exhaustive"),
        campaign._db,
        seed=campaign.evaluator.settings.seed,
        options={"setup": campaign.setup(), "model": model},
        progress=progress.advance if progress is not None else None,
    )
    run_id = str(done["run_id"])
    return run_id, ConfigSearch._maes(campaign._db.events(run_id))


# ---------------------------------------------------------------------------- searches
@dataclass(frozen=True)
class Truth:
    """What a search is compared with: the feasible space and the exhaustive truth known when
    the command started (None: no finished sweep of every model yet)."""

    feasible: tuple[Config, ...]
    table: Table | None = None
    se: SeTable | None = None


def result_of(events: Sequence[Event], problem: str, method: str) -> SearchResult:
    """A search's result as its events record it."""
    result = SearchResult(problem, method)
    for e in events:
        p = cast(Mapping[str, Any], e["payload"])
        if e["kind"] == "ground_truth":
            result.ground_truth = dict(p["values"])
            result.gt_evaluations = int(p.get("evaluations", 0))
        if e["kind"] == "step":
            cand = None
            if p["config"] is not None:
                c = p["config"]
                cand = Candidate(Config(float(c["r"]), int(c["n"]), int(c["s"])), p["model"])
            result.steps.append(
                Step(
                    p["step"],
                    p["phase"],
                    cand,
                    dict(p["maes"]),
                    p["objective"],
                    p["best_so_far"],
                    p["acquisition"],
                    p.get("overhead_s", 0.0),
                    int(p.get("new_fits", 0)),
                    p.get("error"),
                )
            )
    return result


def search_summary(
    result: SearchResult, models: list[str], min_test_points: int, truth: Truth
) -> dict[str, object]:
    """A search's run summary: its answer, trace and cost, and (with the exhaustive truth) how
    close it came and how soon."""
    feasible = list(truth.feasible)
    cands = candidates(result.problem, feasible, models, min_test_points)
    used = [(m, s.candidate.config) for s in result.valid_steps if s.candidate for m in s.maes]
    if result.problem == "closest" and result.gt_evaluations:
        used += [(m, Config(*REFERENCE_CONFIG)) for m in models]
    exhaustive = [
        (m, cand.config) for cand in cands for m in ([cand.model] if cand.model else models)
    ]
    cumulative = list(np.cumsum([len(s.maes) for s in result.steps]).tolist())
    init = sum(1 for s in result.steps if s.phase == "init")
    summary: dict[str, object] = {
        "answer": result.answer(),
        "steps": len(result.steps),
        "evaluations": result.evaluations,
        "gt_evaluations": result.gt_evaluations,
        "best_objective": result.trace()[-1],
        "trace": result.trace(),
        **costs(used, exhaustive, models),
        "min_test_points": min_test_points,
        "invalid_steps": result.invalid_steps,
    }
    if truth.table is not None:
        se = truth.se or {}
        ref = Config(*REFERENCE_CONFIG)
        gt_se = {m: se.get((m, ref)) for m in models} if result.problem == "closest" else None
        land = landscape(
            result.problem, truth.table, models, feasible, result.ground_truth,
            min_test_points, se, gt_se,
        )  # fmt: skip
        summary.update(target_metrics(land, scored_trace(land, result.steps), cumulative, init))
        summary["chance_uniform"] = land.chance(len(result.steps))
        summary["target_warnings"] = land.warnings(len(result.steps))
    return summary


def _header_params(events: Sequence[Event]) -> tuple[str, JsonObject]:
    header = next(e for e in events if e["kind"] == HEADER_KIND)
    payload = cast("HeaderPayload", header["payload"])  # the kind names the payload's type
    return str(payload["agent"]), payload["agent_params"]


class SearchEpisodes:
    """`labreplay.sdk.episodes.EpisodeSuite` of searches (options: setup, models, problem,
    method, budget, init, gt, truth, gt_cost, cost_alpha)."""

    name = "configsearch"
    resume: Literal["continue", "replay"] = "replay"

    def __init__(self, truth: Truth) -> None:
        self.truth = truth

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        branch = f"{options['problem']}/{options['method']}"
        return [Episode(branch, provenance=_provenance(spec))]

    def agent_for(
        self,
        spec: EnvironmentSpec,
        agent: ResolvedAgent,
        seed: int,
        options: Mapping[str, object],
        cache: ResponseCache | None,
    ) -> Searcher:
        campaign = worker_copy(cast(Setup, options["setup"]))
        o = cast("SearchOptions", options)  # what `search_options` built
        optimizer: Optimizer | None = None
        user: JsonObject | None = None
        if agent.builtin is None:
            optimizer = agent.make()
            isolation = isolation_of(optimizer)
            user = {"name": agent.name, "params": agent.params, "isolation": isolation}
        own = campaign.search_params(
            o["problem"], agent.name, o["budget"], o["init"], o["gt"], o["cost_alpha"], user
        )
        params = campaign.run_params(o["models"], o["problem"], own)
        return Searcher(agent.name, params, campaign, options, optimizer)

    def play(
        self, spec: EnvironmentSpec, episode: Episode, agent: Searcher, sink: EventSink
    ) -> None:
        o = agent.options
        campaign, problem, method = agent.campaign, str(o["problem"]), agent.name
        header = sink.header()
        if header is not None:
            sink.emit(HEADER_KIND, header)
        if problem == "closest":
            values = {"gt": o["gt"], "values": o["truth"], "evaluations": o["gt_cost"]}
            sink.emit("ground_truth", values)

        def evaluate(model: str, config: Config) -> float:
            evaluation = campaign.evaluate(model, config)
            sink.emit("evaluation", evaluation.to_json())
            return evaluation.mae

        def on_step(step: Step) -> None:
            sink.emit("step", step.to_json())
            sink.advance(0)

        result = search(
            problem=problem, method=method, space=campaign.space, feasible=campaign.feasible,
            models=list(o["models"]), evaluate=evaluate, budget=int(o["budget"]),
            init=int(o["init"]), seed=episode.seed, ground_truth=dict(o["truth"]),
            on_step=on_step, cost_alpha=float(o["cost_alpha"]) if method == "bo" else 0.0,
            min_test_points=campaign.min_test_points, optimizer=agent.optimizer,
        )  # fmt: skip
        # wall time: kept out of the hashed trajectory, reported in the run summary
        overheads = [s.overhead_s for s in result.steps if s.phase == "bo"]
        sink.facts["bo_overhead_max_s"] = max(overheads) if overheads else None
        sink.facts["bo_overhead_mean_s"] = float(np.mean(overheads)) if overheads else None

    def score(
        self,
        spec: EnvironmentSpec,
        episode: Episode,
        events: Sequence[Event],
        calls: Sequence[Mapping[str, object]],
        seed: int,
    ) -> Scored:
        method, params = _header_params(events)
        result = result_of(events, str(params["problem"]), method)
        models = params["models"]
        assert isinstance(models, list)  # `ConfigSearch.run_params` names them
        summary = search_summary(
            result, [str(m) for m in models], as_int(params["min_test_points"]), self.truth
        )
        numbers = {
            k: float(v)
            for k, v in summary.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        steps = [cast(StepPayload, e["payload"]) for e in events if e["kind"] == "step"]
        health = search_health(cast(list[Mapping[str, object]], steps))
        return {"scores": dict(numbers), "details": {}, "summary": summary, "health": health}


def campaign_truth(campaign: ConfigSearch, models: Sequence[str]) -> Truth:
    """The truth a search of `models` is compared with, as the store holds it now."""
    table = campaign.truth_table(models)
    se = campaign.truth_se(models) if table is not None else None
    return Truth(tuple(campaign.feasible), table, se)


class SearchOptions(TypedDict):
    """`search_options`: what a search episode plays from, anywhere (picklable)."""

    setup: Setup
    models: list[str]
    problem: str
    method: str
    budget: int
    init: int
    gt: str
    truth: dict[str, float]  # the closest problem's ground truth per model (else empty)
    gt_cost: int  # the evaluations computing it cost
    cost_alpha: float


def search_options(
    campaign: ConfigSearch,
    models: Sequence[str],
    problem: str,
    method: str,
    budget: int,
    init: int,
    gt: str,
    cost_alpha: float = COST_ALPHA,
) -> SearchOptions:
    """Everything a search episode needs to play anywhere (picklable). The closest problem's
    ground truth is computed here, once for every seed."""
    models = list(models)
    candidates(problem, campaign.feasible, models, campaign.min_test_points)  # refused early
    truth, gt_cost = campaign.ground_truth(models, gt) if problem == "closest" else ({}, 0)
    return {
        "setup": campaign.setup(), "models": models, "problem": problem, "method": method,
        "budget": budget, "init": init, "gt": gt, "truth": truth, "gt_cost": gt_cost,
        "cost_alpha": cost_alpha,
    }  # fmt: skip


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
    """One search per seed (one unit of work each on `executor`), recorded by the runner.
    `method`: a built-in method's name, or any optimiser `resolve_optimizer_agent` takes (or
    its result): it gets the same candidates, initial design, budget and scoring, and its
    runs are keyed by its name and params. A finished run is read back; one finished before
    the sweeps its targets need gets its summary recomputed, never served stale."""
    models = list(models)
    resolved = resolve_optimizer_agent(method)
    agent = resolved if isinstance(resolved, ResolvedAgent) else method_agent(resolved)
    options = search_options(campaign, models, problem, agent.name, budget, init, gt, cost_alpha)
    episodes = SearchEpisodes(campaign_truth(campaign, models))
    done = run_suite(
        episodes,
        [campaign.environment],
        agent,
        campaign._db,
        seed=list(seeds),
        options=options,
        executor=executor,
    )
    out: list[SearchOutcome] = []
    for summary in done:
        run_id = str(summary["run_id"])
        events = campaign._db.events(run_id)
        result = result_of(events, problem, agent.name)
        stale = summary.get("cached") and "steps_to_target" not in summary
        if stale and summary.get("status") == "complete" and episodes.truth.table is not None:
            fresh = search_summary(result, models, campaign.min_test_points, episodes.truth)
            summary = {**summary, **fresh}
        out.append((run_id, result, summary))
    return out


def run_search(
    campaign: ConfigSearch,
    models: Sequence[str],
    problem: str,
    method: object,
    budget: int = 12,
    init: int = 4,
    seed: int = 42,
    gt: str = "reference",
    cost_alpha: float = COST_ALPHA,
) -> SearchOutcome:
    """One search, stored (`run_searches` with one seed, in-process)."""
    (done,) = run_searches(
        campaign, models, problem, method, budget, init, [seed], gt, None, cost_alpha
    )
    return done


def search_detached(
    campaign: ConfigSearch,
    models: Sequence[str],
    problem: str,
    agent: ResolvedAgent,
    budget: int,
    init: int,
    seed: int,
    gt: str = "reference",
) -> list[ConfigsearchEvent]:
    """One search played in memory, nothing written (agent checks): its events."""
    options = search_options(campaign, models, problem, agent.name, budget, init, gt)
    (played,) = play_detached(
        SearchEpisodes(Truth(tuple(campaign.feasible))),
        campaign.environment,
        agent,
        seed=seed,
        options=options,
    )
    return configsearch_events(played["events"])


__all__ = [
    "SWEEP_BRANCH",
    "SearchEpisodes",
    "SearchOutcome",
    "Searcher",
    "SweepEpisodes",
    "Truth",
    "method_agent",
    "resolve_optimizer_agent",
    "result_of",
    "run_search",
    "run_searches",
    "search_detached",
    "sweep",
    "sweep_scores",
]
