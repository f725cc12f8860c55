"""Configsearch campaigns on the shared store: one run per (task, models, problem, method, seed).

Every evaluation and every search step is appended as a hash-chained event; the final answer and
the comparison with the exhaustive truth go to the scores table. An exhaustive sweep resumes from
its stored events. Searches follow the shared rules of `runtime.recorder.open_run`: a finished
search run is returned from the store, a failed one is reset and redone, and an unfinished one
is recomputed (cheaply, from the pipeline cache) and checked event by event against its stored
prefix. A search is one method name (bo | random | exhaustive) or any `labreplay.Optimizer`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypedDict, cast

import numpy as np

from labreplay.errors import SpecError, StoreError
from labreplay.sdk import (
    HEADER_KIND,
    HeaderPayload,
    Recorder,
    RunHeader,
    header_payload,
    open_recorder,
    open_run,
    sha256_json,
)
from labreplay.sdk.agents import Optimizer, sandbox_of
from labreplay.sdk.engine import EnvironmentSpec, Executor, Store
from labreplay.sdk.events import JsonObject
from labreplay.suites.configsearch.cache import CacheStats
from labreplay.suites.configsearch.events import EvaluationPayload
from labreplay.suites.configsearch.models import PropertyModel, build_model
from labreplay.suites.configsearch.optimizers import surrogate_identity
from labreplay.suites.configsearch.pipeline import Evaluation, Evaluator, PipelineSettings
from labreplay.suites.configsearch.search import (
    COST_ALPHA,
    SearchResult,
    Step,
    candidates,
    landscape,
    search,
)
from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config, ConfigSpace, paper_space
from labreplay.suites.configsearch.targets import (
    MIN_TEST_POINTS,
    costs,
    standard_error,
    sweep_summary,
    target_metrics,
)

SUITE = "configsearch"
PROTOCOL = "automatbench-ood"
PROTOCOL_VERSION = 1


class RunProtocol(TypedDict):
    """`ConfigSearch.protocol`: what makes two runs comparable besides budget and seed."""

    n_total: int
    n_ood: int
    s_max: int
    space: str
    space_size: int


class Advances(Protocol):
    """A progress display: `advance(n)` after n more configurations are done."""

    def advance(self, n: int) -> None: ...


# a search's run id, result and run summary (what the scores table and the CLI read)
SearchOutcome = tuple[str, SearchResult, dict[str, object]]


class ConfigSearch:
    """One task on the real data, its configuration space, a store and the pipeline cache."""

    def __init__(
        self,
        data_dir: Path,
        task: str,
        store: Store | None,
        settings: PipelineSettings | None = None,
        space: ConfigSpace | None = None,
        cache_dir: Path | None = None,
        stats: CacheStats | None = None,
        n_jobs: int = 1,
        min_test_points: int = MIN_TEST_POINTS,
        allow_modified_data: bool = False,
    ) -> None:
        self.store = store
        # C_min (targets.py): searches and targets use configurations with n*s >= this only
        self.min_test_points = int(min_test_points)
        self.space = space or paper_space()
        self.n_jobs = n_jobs
        # a worker's copy (store=None) only computes: the driver refused or marked modified
        # data, and the copy finds the same files, so it builds the same spec hash
        self.evaluator = Evaluator(
            data_dir, task, settings, cache_dir, stats, n_jobs, allow_modified_data or store is None
        )
        self.task = task
        points = self.space.points()
        self.infeasible = {c: r for c in points if (r := self.evaluator.infeasible_reason(c))}
        self.feasible = [c for c in points if c not in self.infeasible]
        self.environment = EnvironmentSpec(
            SUITE,
            PROTOCOL,
            str(PROTOCOL_VERSION),
            task,
            {
                "pipeline": self.evaluator.provenance(),
                "space": self.space.to_json(),
                "space_size": len(points),
                "feasible": len(self.feasible),
                "infeasible_r": sorted({c.r for c in self.infeasible}),
            },
        )
        self.spec = {**self.environment.header(), **self.environment.body}
        self.spec_hash = self.environment.spec_hash
        # A worker's copy (store=None) only computes; the driver's copy stores.
        if store is not None:
            store.put_spec(SUITE, PROTOCOL, task, self.spec_hash, self.environment.to_file_text())
        self.data_dir, self.cache_dir = data_dir, cache_dir
        self._models: dict[str, PropertyModel] = {}
        self._memo: dict[tuple[str, Config], Evaluation] = {}

    @property
    def _db(self) -> Store:
        if self.store is None:
            raise StoreError("this ConfigSearch computes only (a worker's copy has no store)")
        return self.store

    @property
    def stats(self) -> CacheStats:
        return self.evaluator.stats

    def model(self, name: str) -> PropertyModel:
        if name not in self._models:
            self._models[name] = build_model(
                name, self.evaluator.definition.structure_based, self.n_jobs
            )
        return self._models[name]

    def evaluate(self, model: str, config: Config, chain: Recorder | None = None) -> Evaluation:
        key = (model, config)
        if key not in self._memo:
            self._memo[key] = self.evaluator.evaluate(self.model(model), config)
        result = self._memo[key]
        if chain is not None:
            chain.append("evaluation", result.to_json())
        return result

    def protocol(self) -> RunProtocol:
        """What makes two runs comparable besides budget and seed (the report's grouping key)."""
        settings = self.evaluator.settings
        return {
            "n_total": settings.n_total,
            "n_ood": settings.n_ood,
            "s_max": settings.s_max,
            "space": sha256_json(self.space.to_json())[:12],
            "space_size": len(self.feasible),
        }

    def _header(
        self,
        models: Sequence[str],
        problem: str,
        method: str,
        seed: int,
        params: Mapping[str, object],
    ) -> RunHeader:
        return RunHeader(
            self.environment,
            f"{problem}/{method}",
            method,
            {
                "task": self.task,
                "models": list(models),
                # every setting that changes a model's results (its cache key): a sweep of
                # changed settings is a different run, never a resumed or reused one
                "model_params": {m: self.model(m).params() for m in models},
                "problem": problem,
                **self.protocol(),
                **params,
            },
            seed,
            extra_provenance={
                "data": self.evaluator.provenance()["files"],
                # the versions the fits ran with (a reference file carries them on)
                "libraries": library_versions(),
            },
        )

    def _header_payload(self, header: RunHeader) -> HeaderPayload:
        """The header event of a run opened under `header` (`labreplay.runtime.header`): a
        user optimiser's isolation is the one its parameters record; its sandbox is filled in
        where the optimiser runs (`search_events`)."""
        optimizer = header.agent_params.get("optimizer")
        isolation = optimizer.get("isolation") if isinstance(optimizer, dict) else None
        return header_payload(
            agent=header.agent,
            agent_params=header.agent_params,
            isolation=str(isolation or "in-process"),
            sandbox="none",
            model=header.model,
            seed=header.seed,
            branch=header.branch,
            spec_hash=self.spec_hash,
            protocol=self.environment.protocol,
        )

    def _open(
        self,
        models: Sequence[str],
        problem: str,
        method: str,
        seed: int,
        params: Mapping[str, object],
    ) -> Recorder:
        # batch=1: every evaluation is minutes of model fitting, so each is stored at once.
        return open_recorder(self._db, self._header(models, problem, method, seed, params), batch=1)

    def training_sets(self) -> list[tuple[float, int]]:
        """The (r, n) training sets of the feasible space, in sweep order: the units of work."""
        return list(dict.fromkeys((c.r, c.n) for c in self.feasible))

    def evaluate_training_set(self, model: str, r: float, n: int) -> list[Evaluation]:
        """Every feasible (r, n, s) of one (r, n) from its n fold fits: one distributable unit
        (the fits land in the pipeline cache, so no worker refits what another fitted)."""
        s_values = tuple(c.s for c in self.feasible if (c.r, c.n) == (r, n))
        results = self.evaluator.evaluate_training_sets(self.model(model), r, n, s_values)
        for result in results:
            self._memo[(model, result.config)] = result
        return results

    # ------------------------------------------------------------------ exhaustive sweep
    def sweep(
        self, model: str, progress: Advances | None = None, executor: Executor | None = None
    ) -> tuple[str, dict[tuple[str, Config], float]]:
        """Every configuration of the space for one model; resumable from the store. With an
        executor, one unit per (r, n) training set (`execute.sweep_on`)."""
        chain = self._open([model], "sweep", "exhaustive", self.evaluator.settings.seed, {})
        run_id = chain.run_id
        done = self._maes(chain.resume())
        if not chain.events:
            header = self._header([model], "sweep", "exhaustive", self.evaluator.settings.seed, {})
            chain.append(HEADER_KIND, self._header_payload(header))
            for config, reason in sorted(self.infeasible.items()):
                chain.append("infeasible", {"config": config.to_json(), "reason": reason})
        if executor is not None:
            from labreplay.suites.configsearch.execute import sweep_on

            sweep_on(self, model, chain, done, executor, progress)
        for r, n in self.training_sets():
            group = [c for c in self.feasible if (c.r, c.n) == (r, n)]
            if any((model, c) not in done for c in group):
                self.evaluate_training_set(model, r, n)
            for config in group:
                if (model, config) not in done:
                    done[(model, config)] = self.evaluate(model, config, chain).mae
                if progress is not None and executor is None:
                    progress.advance(1)
        payloads = self._payloads(self._db.events(run_id))
        landscape_ = sweep_summary([payloads[(model, c)] for c in self.feasible])
        summary = {
            **landscape_,
            "infeasible": len(self.infeasible),
            "min_mae": landscape_["mae"]["min"],
            "max_mae": landscape_["mae"]["max"],
            "max_min_ratio": landscape_["mae"]["max_min_ratio"],
            "cache": self.stats.as_dict(),
        }
        chain.finish(
            "complete",
            summary,
            {
                "min_mae": landscape_["mae"]["min"],
                "max_mae": landscape_["mae"]["max"],
                "max_min_ratio": landscape_["mae"]["max_min_ratio"],
                "max_min_ratio_without_degenerate": landscape_["mae_without_degenerate_folds"][
                    "max_min_ratio"
                ],
                "short_folds": landscape_["short_folds"],
            },
        )
        return run_id, done

    def _stored_maes(self, run_id: str) -> dict[tuple[str, Config], float]:
        return self._maes(self._db.events(run_id))

    @staticmethod
    def _payloads(
        events: Sequence[Mapping[str, object]],
    ) -> dict[tuple[str, Config], EvaluationPayload]:
        out = {}
        for e in events:
            if e["kind"] == "evaluation":
                # the kind names the payload's type (events.PAYLOADS); the chain vouches for it
                p = cast(EvaluationPayload, e["payload"])
                c = p["config"]
                out[(p["model"], Config(float(c["r"]), int(c["n"]), int(c["s"])))] = p
        return out

    @classmethod
    def _maes(cls, events: Sequence[Mapping[str, object]]) -> dict[tuple[str, Config], float]:
        return {k: float(p["mae"]) for k, p in cls._payloads(events).items()}

    def _sweep_of(self, params: Mapping[str, object], model: str) -> bool:
        """A stored sweep is this model's truth only with today's settings (a sweep recorded
        before settings were stored, or with others, is not)."""
        model_params = params.get("model_params", {})
        recorded = model_params.get(model) if isinstance(model_params, Mapping) else None
        return params.get("models") == [model] and recorded == self.model(model).params()

    def truth_table(self, models: Sequence[str]) -> dict[tuple[str, Config], float] | None:
        """m(o, c) over the whole feasible space from stored sweeps, or None if incomplete."""
        table: dict[tuple[str, Config], float] = {}
        for model in models:
            runs = self._db.runs(
                suite=SUITE, spec_hash=self.spec_hash, branch="sweep/exhaustive", status="complete"
            )
            runs = [r for r in runs if self._sweep_of(r.agent_params, model)]
            if not runs:
                return None
            table.update(self._stored_maes(runs[0].run_id))
        if any((m, c) not in table for m in models for c in self.feasible):
            return None
        return table

    # ------------------------------------------------------------------ searches
    def ground_truth(self, models: Sequence[str], gt: str) -> tuple[dict[str, float], int]:
        if gt == "reference":
            ref = Config(*REFERENCE_CONFIG)
            # the reference need not lie in the searched space, but must be feasible here
            reason = self.evaluator.infeasible_reason(ref)
            if reason is not None:
                raise SpecError(f"reference configuration {ref.label()} is infeasible: {reason}")
            return {m: self.evaluate(m, ref).mae for m in models}, len(models)
        if gt == "mean":
            table = self.truth_table(models)
            if table is None:
                raise SpecError("gt 'mean' needs finished sweeps of every model (run sweep first)")
            return (
                {m: float(np.mean([table[(m, c)] for c in self.feasible])) for m in models},
                len(models) * len(self.feasible),
            )
        raise SpecError(f"unknown ground truth {gt!r}; use 'reference' or 'mean'")

    def run(
        self,
        models: Sequence[str],
        problem: str,
        method: object,
        budget: int = 12,
        init: int = 4,
        seed: int = 42,
        gt: str = "reference",
        cost_alpha: float = COST_ALPHA,
    ) -> SearchOutcome:
        """One search, stored; through the shared driver like every other run path. `method`
        is a built-in method's name or an optimiser (object, factory, MODULE:ATTR, a resolved
        agent; see `execute.run_searches`)."""
        from labreplay.suites.configsearch.execute import run_searches

        (done,) = run_searches(
            self, models, problem, method, budget, init, [seed], gt, None, cost_alpha
        )
        return done

    def open_search(
        self,
        models: Sequence[str],
        problem: str,
        method: str,
        budget: int,
        init: int,
        seed: int,
        gt: str,
        cost_alpha: float = COST_ALPHA,
        optimizer: JsonObject | None = None,
    ) -> tuple[Recorder, SearchOutcome | None]:
        """The search run's recorder, or its stored result if it is complete (resume and the
        failed-run reset are `open_run`'s). A complete run whose sweep arrived later gets its
        summary recomputed, never served stale. `optimizer`: a user optimiser's name, params
        and ref (recorded; `method` is then its name)."""
        header = self.search_header(
            models, problem, method, budget, init, seed, gt, cost_alpha, optimizer
        )
        chain, status = open_run(self._db, header, batch=1)
        if status == "complete":
            info = self._db.run(chain.run_id)
            result = self._result_from_events(chain.run_id, problem, method)
            summary = info.summary or {}
            if "steps_to_target" not in summary and self.truth_table(models) is not None:
                result.gt_evaluations = int(summary.get("gt_evaluations", 0))
                summary = self._summarise(result, list(models), result.ground_truth)
            return chain, (chain.run_id, result, summary)
        return chain, None

    def search_header(
        self,
        models: Sequence[str],
        problem: str,
        method: str,
        budget: int,
        init: int,
        seed: int,
        gt: str,
        cost_alpha: float = COST_ALPHA,
        optimizer: JsonObject | None = None,
    ) -> RunHeader:
        """The runs row of one search (its key and parameters)."""
        params: dict[str, object] = {
            "budget": budget,
            "init": init,
            "gt": gt if problem == "closest" else None,
            "cost_alpha": cost_alpha if method == "bo" else None,
            "initial_design": "maximin",
            "min_test_points": self.min_test_points,
            # the surrogate is part of the method (METRICS): a run names it, and runs under
            # another surrogate or library version are other runs, never merged
            "surrogate": surrogate_identity("botorch") if method == "bo" else None,
        }
        if optimizer is not None:
            params["optimizer"] = optimizer
        return self._header(list(models), problem, method, seed, params)

    def search_header_payload(
        self,
        models: Sequence[str],
        problem: str,
        method: str,
        budget: int,
        init: int,
        seed: int,
        gt: str,
        cost_alpha: float = COST_ALPHA,
        optimizer: JsonObject | None = None,
    ) -> HeaderPayload:
        """The header event of the search `search_header(...)` opens."""
        return self._header_payload(
            self.search_header(
                models, problem, method, budget, init, seed, gt, cost_alpha, optimizer
            )
        )

    def search_events(
        self,
        models: Sequence[str],
        problem: str,
        method: str,
        budget: int,
        init: int,
        seed: int,
        gt: str,
        truth: dict[str, float],
        gt_cost: int,
        cost_alpha: float = COST_ALPHA,
        header: HeaderPayload | None = None,
        *,
        optimizer: Optimizer | None = None,
    ) -> tuple[list[dict[str, object]], SearchResult]:
        """Run one search without a store: its events (chained to the spec) and result.
        `optimizer` (a user's) replaces `method`'s built-in one, with the same budget, initial
        design and scoring. `header`: the run's header event, put at seq 0 with the sandbox
        the optimiser runs in."""
        models = list(models)
        chain = Recorder(self.spec_hash)
        if header is not None:
            bound = header.copy()
            bound["sandbox"] = sandbox_of(optimizer)
            chain.append(HEADER_KIND, bound)
        if problem == "closest":
            chain.append("ground_truth", {"gt": gt, "values": truth, "evaluations": gt_cost})

        def evaluate(model: str, config: Config) -> float:
            return self.evaluate(model, config, chain).mae

        def on_step(step: Step) -> None:
            chain.append("step", step.to_json())

        result = search(
            problem=problem,
            method=method,
            space=self.space,
            feasible=self.feasible,
            models=models,
            evaluate=evaluate,
            budget=budget,
            init=init,
            seed=seed,
            ground_truth=truth,
            on_step=on_step,
            cost_alpha=cost_alpha if method == "bo" else 0.0,
            min_test_points=self.min_test_points,
            optimizer=optimizer,
        )
        result.gt_evaluations = gt_cost
        return chain.events, result

    def finish_search(
        self, chain: Recorder, result: SearchResult, models: Sequence[str], truth: dict[str, float]
    ) -> SearchOutcome:
        summary = self._summarise(result, list(models), truth)
        chain.finish(
            "complete",
            summary,
            {
                k: v
                for k, v in summary.items()
                if isinstance(v, int | float) and not isinstance(v, bool)
            },
        )
        return chain.run_id, result, summary

    def _result_from_events(self, run_id: str, problem: str, method: str) -> SearchResult:
        from labreplay.suites.configsearch.search import Candidate

        result = SearchResult(problem, method)
        for e in self._db.events(run_id):
            p = e["payload"]
            if e["kind"] == "ground_truth":
                result.ground_truth = dict(p["values"])
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

    def _summarise(
        self, result: SearchResult, models: list[str], truth: dict[str, float]
    ) -> dict[str, object]:
        cands = candidates(result.problem, self.feasible, models, self.min_test_points)
        used = [(m, s.candidate.config) for s in result.valid_steps if s.candidate for m in s.maes]
        if result.problem == "closest" and result.gt_evaluations:
            used += [(m, Config(*REFERENCE_CONFIG)) for m in models]
        exhaustive = [
            (m, cand.config) for cand in cands for m in ([cand.model] if cand.model else models)
        ]
        overheads = [s.overhead_s for s in result.steps if s.phase == "bo"]
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
            "bo_overhead_max_s": max(overheads) if overheads else None,
            "bo_overhead_mean_s": float(np.mean(overheads)) if overheads else None,
        }
        summary["min_test_points"] = self.min_test_points
        summary["invalid_steps"] = result.invalid_steps
        table = self.truth_table(models)
        if table is not None:
            se = self.truth_se(models)
            ref = Config(*REFERENCE_CONFIG)
            gt_se = {m: se.get((m, ref)) for m in models} if result.problem == "closest" else None
            land = landscape(
                result.problem, table, models, self.feasible, truth, self.min_test_points, se, gt_se
            )
            summary.update(target_metrics(land, result.trace(), cumulative, init))
            summary["chance_uniform"] = land.chance(len(result.steps))
            summary["target_warnings"] = land.warnings(len(result.steps))
        return summary

    def truth_se(self, models: Sequence[str]) -> dict[tuple[str, Config], float | None]:
        """SE(c) = abs_error_sd / sqrt(n_test) of every stored sweep evaluation."""
        out: dict[tuple[str, Config], float | None] = {}
        runs = self._db.runs(
            suite=SUITE, spec_hash=self.spec_hash, branch="sweep/exhaustive", status="complete"
        )
        for run in runs:
            if not any(self._sweep_of(run.agent_params, m) for m in models):
                continue
            for key, p in self._payloads(self._db.events(run.run_id)).items():
                out.setdefault(key, standard_error(p.get("abs_error_sd"), int(p["n_test"])))
        return out


FITTING_LIBRARIES = ("numpy", "scipy", "scikit-learn", "torch", "botorch", "gpytorch", "pandas")


def library_versions() -> dict[str, str | None]:
    """Installed versions of the libraries a fit or a search depends on (None: not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in FITTING_LIBRARIES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out
