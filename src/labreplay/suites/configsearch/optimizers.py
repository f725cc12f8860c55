"""The configsearch agent contract: an ask/tell optimiser, and BO, random and exhaustive search as
three implementations of it.

An optimiser has a `name`, `params()` (JSON, recorded with every run), `suggest(history)` that
returns the next configuration to evaluate (a mapping with r, n, s, and `model` when the problem
searches (model, configuration) pairs), and `observe(result)` that receives each evaluated
`Observation` (the shared initial design's points included). The driver (`search.search`) owns
the budget, the shared seeded initial design and the scoring, so a user's optimiser is measured
exactly as BO and random search are. A suggestion that names no candidate, repeats one, or
raises is recorded as an invalid step (the budget step is spent, nothing is evaluated): an
agent's bad action is data, never a crash.

BO needs botorch (the `bo` extra): SingleTaskGP with its default kernel and log expected
improvement. There is no silent fallback: `surrogate="sklearn-gp"` (scikit-learn's GP, Matern
2.5 + white noise, closed-form EI) is a different, declared method whose runs never share a row
with botorch's. Both record their surrogate, acquisition, kernel and library versions.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Protocol, runtime_checkable

import numpy as np

from labreplay.errors import SpecError
from labreplay.sdk import derive_seed, make_rng

SURROGATES = ("botorch", "sklearn-gp")


@dataclass(frozen=True)
class Observation:
    """One evaluated step: the candidate, each model's MAE there and the problem's objective."""

    step: int
    config: dict[str, Any]  # {"r", "n", "s"}
    model: str | None
    maes: dict[str, float]
    objective: float

    def key(self) -> tuple[float, int, int, str | None]:
        return candidate_key(self.config, self.model)


@dataclass(frozen=True)
class History:
    """What an optimiser sees when asked: the problem, every candidate (dicts with r, n, s and,
    for best-model, model) with its numeric encoding `features` (rows aligned with
    `candidates`, each axis scaled to [0, 1], one-hot models), the observations so far, and the
    run's budget and seed."""

    problem: str
    direction: str  # "min" | "max": the objective to minimise or maximise
    models: tuple[str, ...]
    candidates: tuple[dict[str, Any], ...]
    features: np.ndarray
    observations: tuple[Observation, ...]
    budget: int
    seed: int

    def untried(self) -> list[int]:
        """Indices of the candidates not evaluated yet."""
        seen = {o.key() for o in self.observations}
        return [i for i, c in enumerate(self.candidates) if _key(c) not in seen]

    def index_of(self) -> dict[tuple[float, int, int, str | None], int]:
        return {_key(c): i for i, c in enumerate(self.candidates)}


def candidate_key(
    config: Mapping[str, Any], model: str | None
) -> tuple[float, int, int, str | None]:
    return (round(float(config["r"]), 9), int(config["n"]), int(config["s"]), model)


def _key(candidate: Mapping[str, Any]) -> tuple[float, int, int, str | None]:
    model = candidate.get("model")
    return candidate_key(candidate, None if model is None else str(model))


@runtime_checkable
class Optimizer(Protocol):
    """The configsearch agent contract (ask/tell)."""

    name: str

    def params(self) -> dict[str, Any]:
        """JSON parameters that identify the optimiser (recorded with every run)."""
        ...

    def suggest(self, history: History) -> Mapping[str, Any]:
        """The next configuration: {"r", "n", "s"} (+ "model" on best-model)."""
        ...

    def observe(self, result: Observation) -> None:
        """One evaluated step (initial design included)."""
        ...


def _versions(*packages: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def botorch_available() -> bool:
    try:
        import botorch.fit
        import botorch.models  # noqa: F401
    except ImportError:
        return False
    return True


def surrogate_identity(surrogate: str) -> dict[str, Any]:
    """Surrogate, acquisition, kernel and library versions of a BO method."""
    if surrogate == "botorch":
        return {
            "surrogate": "botorch",
            "model": "SingleTaskGP (Standardize outcome transform, fitted by fit_gpytorch_mll)",
            "kernel": "RBFKernel, ARD, dim-scaled LogNormal lengthscale prior (botorch default)",
            "acquisition": "LogExpectedImprovement (analytic)",
            "versions": _versions("botorch", "gpytorch", "torch"),
        }
    if surrogate == "sklearn-gp":
        return {
            "surrogate": "sklearn-gp",
            "model": "GaussianProcessRegressor (normalize_y)",
            "kernel": "ConstantKernel * Matern(nu=2.5) + WhiteKernel(1e-3)",
            "acquisition": "ExpectedImprovement (closed form), log taken",
            "versions": _versions("scikit-learn", "scipy"),
        }
    raise SpecError(f"unknown surrogate {surrogate!r}; known: {', '.join(SURROGATES)}")


def require_surrogate(surrogate: str) -> None:
    """BO with botorch needs botorch installed: no silent fallback to another surrogate."""
    if surrogate not in SURROGATES:
        raise SpecError(f"unknown surrogate {surrogate!r}; known: {', '.join(SURROGATES)}")
    if surrogate == "botorch" and not botorch_available():
        raise SpecError(
            "BO needs botorch (pip install 'labreplay[bo]'); a scikit-learn GP is a different "
            "method: declare it with --surrogate sklearn-gp"
        )


def log_expected_improvement(
    x_obs: np.ndarray, y_obs: np.ndarray, x_cand: np.ndarray, seed: int, surrogate: str
) -> np.ndarray:
    """log EI (maximisation of y) of each candidate under the declared surrogate."""
    if surrogate == "sklearn-gp":
        ei = _sklearn_ei(x_obs, y_obs, x_cand, seed)
        return np.asarray(np.log(np.maximum(ei, 1e-300)), dtype=float)
    import gpytorch
    import torch
    from botorch.acquisition.analytic import LogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Standardize
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    train_x = torch.tensor(x_obs, dtype=torch.float64)
    train_y = torch.tensor(y_obs, dtype=torch.float64).reshape(-1, 1)
    gp = SingleTaskGP(train_x, train_y, outcome_transform=Standardize(m=1))
    # gpytorch's debug checks validate inputs on every likelihood call of the fit (~20% of
    # the time on these 3-12-point fits); they never change a value
    with warnings.catch_warnings(), gpytorch.settings.debug(False):
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        acquisition = LogExpectedImprovement(gp, best_f=train_y.max())
        with torch.no_grad():
            values = acquisition(torch.tensor(x_cand, dtype=torch.float64).unsqueeze(1))
    return np.asarray(values.numpy(), dtype=float)


def _sklearn_ei(x_obs: np.ndarray, y_obs: np.ndarray, x_cand: np.ndarray, seed: int) -> np.ndarray:
    from scipy.stats import norm
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    kernel = ConstantKernel() * Matern(nu=2.5) + WhiteKernel(1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=seed).fit(x_obs, y_obs)
    mu, sigma = gp.predict(x_cand, return_std=True)
    sigma = np.maximum(sigma, 1e-12)
    z = (mu - y_obs.max()) / sigma
    return np.asarray((mu - y_obs.max()) * norm.cdf(z) + sigma * norm.pdf(z))


class BayesianOptimizer:
    """GP-based BO: log EI, optionally minus cost_alpha * log(1 + new fits / median n) (a
    candidate whose (model, r, n) training set is already fitted costs no fits)."""

    def __init__(self, surrogate: str = "botorch", cost_alpha: float = 0.0) -> None:
        require_surrogate(surrogate)
        self.surrogate = surrogate
        self.cost_alpha = float(cost_alpha)
        self.name = "bo" if surrogate == "botorch" else f"bo-{surrogate}"
        self.last_acquisition: float | None = None

    def params(self) -> dict[str, Any]:
        identity = surrogate_identity(self.surrogate)
        return {
            "surrogate": identity["surrogate"],
            "acquisition": identity["acquisition"],
            "kernel": identity["kernel"],
            "cost_alpha": self.cost_alpha,
        }

    def observe(self, result: Observation) -> None:
        return None

    def suggest(self, history: History) -> Mapping[str, Any]:
        index = history.index_of()
        seen = [index[o.key()] for o in history.observations if o.key() in index]
        free = np.array(history.untried())
        sign = 1.0 if history.direction == "max" else -1.0  # the GP maximises sign * objective
        y = sign * np.array([o.objective for o in history.observations if o.key() in index])
        seed = derive_seed(history.seed, "configsearch", "gp", str(len(history.observations)))
        x = history.features
        log_ei = log_expected_improvement(x[seen], y, x[free], seed, self.surrogate)
        if self.cost_alpha:
            fitted = {
                (m, round(float(o.config["r"]), 9), int(o.config["n"]))
                for o in history.observations
                for m in o.maes
            }
            n_ref = float(np.median([int(c["n"]) for c in history.candidates]))
            cost = np.array(
                [_new_fits(history.candidates[int(f)], history.models, fitted) for f in free],
                dtype=float,
            )
            log_ei = log_ei - self.cost_alpha * np.log1p(cost / n_ref)
        j = int(np.argmax(log_ei))  # first maximum: ties go to the earlier candidate
        self.last_acquisition = float(log_ei[j])
        return history.candidates[int(free[j])]


def _new_fits(
    candidate: Mapping[str, Any], models: Sequence[str], fitted: set[tuple[str, float, int]]
) -> int:
    names = [str(candidate["model"])] if candidate.get("model") else list(models)
    r, n = round(float(candidate["r"]), 9), int(candidate["n"])
    return sum(n for m in names if (m, r, n) not in fitted)


class RandomSearch:
    """Uniform random search: a seeded permutation of the candidates, untried ones in order."""

    name = "random"

    def params(self) -> dict[str, Any]:
        return {}

    def observe(self, result: Observation) -> None:
        return None

    def suggest(self, history: History) -> Mapping[str, Any]:
        order = make_rng(history.seed, "configsearch", "search-order", history.problem).permutation(
            len(history.candidates)
        )
        free = set(history.untried())
        return history.candidates[next(int(i) for i in order if int(i) in free)]


class ExhaustiveSearch:
    """Every candidate in order (the sweep as an optimiser)."""

    name = "exhaustive"

    def params(self) -> dict[str, Any]:
        return {}

    def observe(self, result: Observation) -> None:
        return None

    def suggest(self, history: History) -> Mapping[str, Any]:
        return history.candidates[history.untried()[0]]


def builtin_optimizer(method: str, surrogate: str = "botorch", cost_alpha: float = 0.0) -> Any:
    if method == "bo":
        return BayesianOptimizer(surrogate, cost_alpha)
    if method == "random":
        return RandomSearch()
    if method == "exhaustive":
        return ExhaustiveSearch()
    raise SpecError(f"unknown method {method!r}; known: bo, random, exhaustive")


def check_optimizer(agent: object, label: str) -> None:
    """Refuse an object that lacks the contract, naming the agent and the missing part."""
    for attr in ("name", "params", "suggest", "observe"):
        if not hasattr(agent, attr):
            raise SpecError(f"agent {label}: has no {attr!r} (the optimiser contract needs "
                            "name, params(), suggest(history), observe(result))")  # fmt: skip
    for attr in ("params", "suggest", "observe"):
        if not callable(getattr(agent, attr)):
            raise SpecError(f"agent {label}: {attr!r} is not callable")
    if not isinstance(agent.name, str) or not agent.name:  # type: ignore[attr-defined]
        raise SpecError(f"agent {label}: name must be a non-empty string")


OptimizerFactory = Any  # a zero-argument callable returning an Optimizer


def resolve_optimizer(spec: str) -> tuple[OptimizerFactory, str]:
    """`MODULE:ATTR` (importable from PYTHONPATH or the working directory) -> (factory, label).
    ATTR may be a class or zero-argument factory (a fresh optimiser per seed) or an instance
    (reused). Refused with one line naming the agent and what is wrong, before any work."""
    import importlib
    import os
    import sys

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SpecError(f"agent {spec!r}: expected MODULE:ATTR (e.g. mypkg.opt:MyOptimizer)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise SpecError(
            f"agent {spec}: module {module_name!r} does not import ({type(exc).__name__}: "
            f"{_first_line(exc)})"
        ) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise SpecError(f"agent {spec}: module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if hasattr(target, "suggest") and not isinstance(target, type):
        instance = target
        check_optimizer(instance, spec)
        _check_params(instance, spec)
        return (lambda: instance), spec
    if not callable(target):
        raise SpecError(f"agent {spec}: {attr!r} is neither an optimiser, a class nor a factory")
    try:
        probe = target()
    except Exception as exc:
        raise SpecError(
            f"agent {spec}: constructing it failed ({type(exc).__name__}: {_first_line(exc)})"
        ) from None
    check_optimizer(probe, spec)
    _check_params(probe, spec)
    return target, spec


def _check_params(agent: Any, label: str) -> None:
    import json

    try:
        json.dumps(agent.params(), sort_keys=True)
    except Exception as exc:
        raise SpecError(
            f"agent {label}: params() must return JSON ({type(exc).__name__}: {_first_line(exc)})"
        ) from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0][:200] if lines else ""
