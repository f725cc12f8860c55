"""A configsearch campaign: one task on the real data, its configuration space, the pipeline
cache, and what the store already knows of it (the truth table of its finished sweeps).

Its runs (one per task, models, problem, method and seed) are played and recorded by the core
runner (`suites/configsearch/episodes.py`); this module computes evaluations, names a run's
parameters and reads finished sweeps back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple, NotRequired, Protocol, TypedDict, cast

import numpy as np

from labreplay.errors import SpecError, StoreError
from labreplay.sdk import sha256_json
from labreplay.sdk.engine import EnvironmentSpec, Store
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.configsearch.cache import CacheStats
from labreplay.suites.configsearch.events import EvaluationPayload
from labreplay.suites.configsearch.models import PropertyModel, build_model
from labreplay.suites.configsearch.optimizers import SurrogateIdentity, surrogate_identity
from labreplay.suites.configsearch.options import COST_ALPHA
from labreplay.suites.configsearch.pipeline import Evaluation, Evaluator, PipelineSettings
from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config, ConfigSpace, paper_space
from labreplay.suites.configsearch.targets import MIN_TEST_POINTS, standard_error

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


class SearchParams(TypedDict):
    """`ConfigSearch.search_params`: a search's own parameters (`run_params` adds the rest)."""

    budget: int
    init: int
    gt: str | None  # problem closest only
    cost_alpha: float | None  # BO only
    initial_design: str
    min_test_points: int
    surrogate: SurrogateIdentity | None  # BO only
    optimizer: NotRequired[JsonObject]  # a user optimiser's name, params and isolation


class Advances(Protocol):
    """A progress display: `advance(n)` after n more configurations are done."""

    def advance(self, n: int) -> None: ...


class Setup(NamedTuple):
    """What rebuilds a campaign where an episode plays (picklable: a worker's copy)."""

    data_dir: str
    task: str
    settings: PipelineSettings
    space: ConfigSpace
    cache_dir: str
    min_test_points: int
    n_jobs: int


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
        # A worker's copy (store=None) only computes; the runner's copy stores.
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

    def evaluate(self, model: str, config: Config) -> Evaluation:
        key = (model, config)
        if key not in self._memo:
            self._memo[key] = self.evaluator.evaluate(self.model(model), config)
        return self._memo[key]

    def setup(self) -> Setup:
        return Setup(
            str(self.data_dir), self.task, self.evaluator.settings, self.space,
            str(self.evaluator.root), self.min_test_points, self.n_jobs,
        )  # fmt: skip

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

    def run_params(
        self, models: Sequence[str], problem: str, params: Mapping[str, object]
    ) -> dict[str, object]:
        """The parameters a run is keyed by, besides its method, branch and seed."""
        return {
            "task": self.task,
            "models": list(models),
            # every setting that changes a model's results (its cache key): a sweep of
            # changed settings is a different run, never a resumed or reused one
            "model_params": {m: self.model(m).params() for m in models},
            "problem": problem,
            **self.protocol(),
            **params,
        }

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

    def _sweep_of(self, params: Mapping[str, JsonValue], model: str) -> bool:
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

    def search_params(
        self,
        problem: str,
        method: str,
        budget: int,
        init: int,
        gt: str,
        cost_alpha: float = COST_ALPHA,
        optimizer: JsonObject | None = None,
    ) -> SearchParams:
        """A search's own parameters (`run_params` adds the campaign's). `optimizer`: a user
        optimiser's name, params and isolation (`method` is then its name)."""
        params: SearchParams = {
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
        return params

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


@lru_cache(maxsize=2)
def worker_copy(setup: Setup) -> ConfigSearch:
    """The campaign an episode plays on (store-less: it only computes; the driver refused or
    marked modified data, and the copy finds the same files, so it builds the same spec hash).
    Fits land in the shared pipeline cache, so copies never refit what another fitted."""
    return ConfigSearch(
        Path(setup.data_dir), setup.task, None, setup.settings, setup.space,
        Path(setup.cache_dir), n_jobs=setup.n_jobs, min_test_points=setup.min_test_points,
    )  # fmt: skip


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
