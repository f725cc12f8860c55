"""The three AutoMatBench problems and the searches over them (BO, random, exhaustive).

Problems (METRICS.md, configsearch):
  best-model    Algorithm 1: candidates are (model, configuration) pairs, each step evaluates one;
                minimise m(o, c); answer: the model with the lowest mean MAE over its evaluated c.
  discriminate  Algorithm 2: candidates are configurations, each step evaluates every model there;
                maximise R(c) = min pairwise |m(o1, c) - m(o2, c)|.
  closest       Algorithm 3: candidates are configurations other than the reference; minimise
                L(c) = mean over models |m(o, c) - gt(o)|, gt(o) = m(o, (0, 48, 10)) by default.

The budget T counts steps (one candidate each); the cost in evaluations (model x configuration)
is recorded beside it. Infeasible configurations are known before any cost is spent (the JARVIS
pool size), so they are removed from the candidate set and reported, never proposed.
BO and random search share their first T0 points (same seed, same initial dataset D, paper 6.2):
a seeded maximin design (of 256 seeded random T0-subsets, the one whose closest pair of encoded
candidates is farthest apart), so the initial points cover r, n and s instead of clumping.

Searches run over C_min only (n*s >= min_test_points, default 30; targets.py), and the closest
problem never proposes the reference's own (r, n) block (it shares the reference's fits and most
of its test points). Every method is an ask/tell optimiser (optimizers.py); `search` is the one
driver: it spends the budget, evaluates the shared initial design, asks the optimiser for the
rest and records an invalid suggestion as an invalid step.

Cost-aware acquisition (optional, declared): a candidate whose (model, r, n) training set this
run has already fitted costs no fits (only predictions), a new one costs n fits. BO maximises
log EI - alpha * log(1 + new_fits / n_ref), n_ref = the median n of the space. The default is
alpha = 0, plain log EI: the budget and the target count evaluations. Measured on the recorded
full-size RF-SCM references (`configsearch replay`, T = 8, T0 = 3, seeds 42-61, seeds on target
summed over the six tasks): best-model 34 at alpha 0 vs 35 at 0.5 (a tie), closest 50 vs 37;
band gap best-model over 60 seeds 39 at 0, 36 at 0.1, 34 at 0.25, 31 at 0.5. alpha is
recorded with every run, so a compute-bound user can trade target hits for fits knowingly.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypedDict, cast, runtime_checkable

import numpy as np

from labreplay.errors import SpecError
from labreplay.sdk import make_rng
from labreplay.sdk.agents import (
    AgentUnavailable,
    CallRecord,
    CapReached,
    Configuration,
    Optimizer,
    OptimizerHistory,
    Trial,
)
from labreplay.sdk.agents import acquisition_of as _acquisition_of
from labreplay.sdk.engine import AGENT_RAISED, REPLIES_INVALID, RunHealth
from labreplay.suites.configsearch.events import ConfigJson, StepPayload
from labreplay.suites.configsearch.optimizers import (
    BUILTIN_OPTIMIZERS,
    builtin_optimizer,
    candidate_key,
    key_of,
    make_history,
    make_trial,
)
from labreplay.suites.configsearch.options import COST_ALPHA, METHODS, PROBLEMS
from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config, ConfigSpace
from labreplay.suites.configsearch.targets import (
    MIN_TEST_POINTS,
    Landscape,
    LandscapeNotes,
    block_shrunk,
    in_reference_block,
    reliable,
)

MAXIMIN_TRIES = 256
# What an optimiser's call may raise that ends the run instead of spending one invalid step.
RUN_ENDING = (AgentUnavailable, CapReached)


@runtime_checkable
class CallsAModel(Protocol):
    """Declared by an optimiser that asks a model (the LLM optimiser): its calls are the run's
    (a search in which every call failed is a failed run, as in every suite)."""

    def model_calls(self) -> list[CallRecord]: ...


# evaluate(model, config) -> MAE; the runner wraps the Evaluator, the store and the cache in it
EvaluateFn = Callable[[str, Config], float]


class BestPair(TypedDict):
    config: ConfigJson
    model: str | None
    mae: float | None


class LargestDifference(TypedDict):
    config: ConfigJson
    abs_difference: float


class Answer(TypedDict, total=False):
    """`SearchResult.answer`, by problem (empty without a valid step): best-model names
    `best_model`, `mean_mae` and `best_pair`; which-model (`which_model_answer`) `mean_mae`,
    the paired `difference` with its interval, the `verdict`, `best_model` and the
    `largest_difference`; discriminate and closest the chosen `config`, its `objective` and
    `maes` (discriminate also their `range`)."""

    best_model: str | None
    mean_mae: dict[str, float]
    best_pair: BestPair
    config: ConfigJson
    objective: float | None
    maes: dict[str, float]
    range: float
    difference: str
    paired_difference: float
    paired_difference_ci95: list[float]
    configurations: int
    interval_blocks: int  # the (r, n) blocks a clustered interval is over (truth only)
    guided_steps_left_out: int
    verdict: str
    largest_difference: LargestDifference


@dataclass(frozen=True)
class Candidate:
    config: Config
    model: str | None  # set for best-model (one (o, c) pair), None when all models are evaluated

    def label(self) -> str:
        return self.config.label() + (f" {self.model}" if self.model else "")

    def key(self) -> tuple[float, int, int, str | None]:
        return candidate_key(self.config.to_json(), self.model)

    def to_json(self) -> Configuration:
        c = self.config
        out: Configuration = {"r": c.r, "n": c.n, "s": c.s}  # Config.to_json, as a candidate
        if self.model is not None:
            out["model"] = self.model
        return out


@dataclass
class Step:
    index: int
    phase: str  # init | bo | random | exhaustive | <agent method> | invalid
    candidate: Candidate | None  # None: an invalid suggestion (nothing evaluated)
    maes: dict[str, float]
    objective: float | None
    best_so_far: float
    acquisition: float | None
    overhead_s: float
    new_fits: int = 0
    error: str | None = None

    def to_json(self) -> StepPayload:
        return {
            "step": self.index,
            "phase": self.phase,
            "config": self.candidate.config.to_json() if self.candidate else None,
            "model": self.candidate.model if self.candidate else None,
            "error": self.error,
            "maes": self.maes,
            "objective": self.objective,
            "best_so_far": self.best_so_far,
            "acquisition": self.acquisition,
            "new_fits": self.new_fits,
            # overhead_s is wall time: kept out of the hashed trajectory (it would break
            # byte-identical replays) and reported in the run summary instead
        }


@dataclass
class SearchResult:
    problem: str
    method: str
    steps: list[Step] = field(default_factory=list)
    ground_truth: dict[str, float] = field(default_factory=dict)
    gt_evaluations: int = 0

    @property
    def evaluations(self) -> int:
        return sum(len(s.maes) for s in self.steps)

    def trace(self) -> list[float]:
        return [s.best_so_far for s in self.steps]

    @property
    def valid_steps(self) -> list[Step]:
        return [s for s in self.steps if s.candidate is not None and s.objective is not None]

    @property
    def invalid_steps(self) -> int:
        return len(self.steps) - len(self.valid_steps)

    def answer(self) -> Answer:
        """The algorithm's final estimate (line 8-9 of Algorithms 1-3)."""
        steps = self.valid_steps
        if not steps:
            return {}
        if self.problem == "best-model":
            per_model: dict[str, list[float]] = {}
            for s in steps:
                for model, mae in s.maes.items():
                    per_model.setdefault(model, []).append(mae)
            means = {m: float(np.mean(v)) for m, v in sorted(per_model.items())}
            best_step = min(steps, key=lambda s: (float(s.objective or 0.0), s.index))
            assert best_step.candidate is not None
            return {
                "best_model": min(means, key=lambda m: (means[m], m)),
                "mean_mae": means,
                "best_pair": {
                    "config": best_step.candidate.config.to_json(),
                    "model": best_step.candidate.model,
                    "mae": best_step.objective,
                },
            }
        if self.problem == "which-model":
            return which_model_answer(steps)
        pick = max if self.problem == "discriminate" else min
        chosen = pick(steps, key=lambda s: (float(s.objective or 0.0), -s.index))
        assert chosen.candidate is not None
        out: Answer = {
            "config": chosen.candidate.config.to_json(),
            "objective": chosen.objective,
            "maes": chosen.maes,
        }
        if self.problem == "discriminate":
            out["range"] = max(chosen.maes.values()) - min(chosen.maes.values())
        return out


# Steps whose configuration was chosen before any outcome was seen: the only ones a
# which-model verdict averages over (a guided step's choice depends on the differences it saw).
OUTCOME_BLIND_PHASES = ("init", "random", "exhaustive", "paired-random")


def which_model_answer(
    steps: Sequence[Step], order: Sequence[str] | None = None, by_block: bool = False
) -> Answer:
    """Formal Algorithm 1 (METRICS.md fourth round): M(o) per model over the configurations
    chosen blind to the outcomes, the paired difference order[0] - order[1] with its 95% t
    interval, and "tied" when it contains 0. Symmetric: swapping `order` mirrors the difference
    and its interval and names the same model. Guided steps (BO) only locate the largest
    |difference|, reported apart as `largest_difference`. `by_block` (every configuration of
    a table, issue 49): the configurations of one (r, n) block share their fits and test points,
    so the interval is cluster-robust over blocks (`block_half_width`), not over
    configurations."""
    models = list(order) if order is not None else sorted(steps[0].maes)
    first, second = models[0], models[1]
    blind = [s for s in steps if s.phase in OUTCOME_BLIND_PHASES]
    diffs = np.array([s.maes[first] - s.maes[second] for s in blind])
    mean = float(np.mean(diffs)) if len(diffs) else float("nan")
    lo = hi = mean
    keys = [(s.candidate.config.r, s.candidate.config.n) if s.candidate else None
            for s in blind]  # fmt: skip
    if len(diffs) > 1:
        from scipy.stats import t

        if by_block:
            half = block_half_width(diffs, keys)
        else:
            half = float(t.ppf(0.975, len(diffs) - 1) * np.std(diffs, ddof=1) / np.sqrt(len(diffs)))
        lo, hi = mean - half, mean + half
    # a NaN interval (one block) resolves nothing: tied
    tied = len(diffs) < 2 or not (lo > 0.0 or hi < 0.0)
    verdict = "tied" if tied else (first if mean < 0 else second)
    widest = max(steps, key=lambda s: (abs(s.maes[first] - s.maes[second]), -s.index))
    assert widest.candidate is not None
    return {
        "mean_mae": {m: float(np.mean([s.maes[m] for s in blind])) for m in models}
        if blind
        else {},
        "difference": f"{first} - {second}",
        "paired_difference": mean,
        "paired_difference_ci95": [lo, hi],
        "configurations": len(diffs),
        **({"interval_blocks": len(set(keys))} if by_block else {}),
        "guided_steps_left_out": len(steps) - len(blind),
        "verdict": verdict,
        "best_model": None if tied else verdict,
        "largest_difference": {
            "config": widest.candidate.config.to_json(),
            "abs_difference": abs(widest.maes[first] - widest.maes[second]),
        },
    }


def block_half_width(diffs: np.ndarray, keys: Sequence[object]) -> float:
    """95% half-width of mean(diffs) with the values clustered by `keys`: the cluster-robust
    (CR1) variance G/(G-1) * sum_g (sum of g's deviations from the mean)^2 / N^2 and a t
    quantile with G - 1 degrees of freedom (G clusters); NaN with one cluster."""
    from scipy.stats import t

    sums: dict[object, float] = {}
    for d, key in zip(diffs - float(np.mean(diffs)), keys, strict=True):
        sums[key] = sums.get(key, 0.0) + float(d)
    g = len(sums)
    if g < 2:
        return float("nan")
    var = g / (g - 1) * sum(u * u for u in sums.values()) / len(diffs) ** 2
    return float(t.ppf(0.975, g - 1) * np.sqrt(var))


def direction(problem: str) -> str:
    """which-model's search locates where |difference| is largest (a problem of its own,
    symmetric in the models); its verdict is never the optimum's nor an average over the
    configurations a guided search chose (`which_model_answer`)."""
    return "max" if problem in ("discriminate", "which-model") else "min"


def objective(problem: str, maes: dict[str, float], gt: dict[str, float]) -> float:
    if problem == "which-model":
        # |difference|: symmetric in the models (the locator of the largest difference)
        first, second = sorted(maes)[:2]
        return abs(maes[first] - maes[second])
    if problem == "best-model":
        (value,) = maes.values()
        return value
    if problem == "discriminate":
        return min(abs(maes[a] - maes[b]) for a, b in itertools.combinations(sorted(maes), 2))
    if problem == "closest":
        return float(np.mean([abs(maes[m] - gt[m]) for m in sorted(maes)]))
    raise SpecError(f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}")


def candidates(
    problem: str,
    feasible: Sequence[Config],
    models: Sequence[str],
    min_test_points: int = MIN_TEST_POINTS,
) -> list[Candidate]:
    """The searched candidates: C_min (n*s >= min_test_points) of the feasible configurations;
    closest also leaves out the reference's own (r, n) block."""
    if problem not in PROBLEMS:
        raise SpecError(f"unknown problem {problem!r}; known: {', '.join(PROBLEMS)}")
    if problem in ("discriminate", "which-model") and len(models) < 2:
        raise SpecError(f"problem {problem!r} needs at least two models (--models M1,M2)")
    if problem == "which-model" and len(models) != 2:
        raise SpecError("problem 'which-model' compares exactly two models (--models M1,M2)")
    kept = [c for c in feasible if reliable(c, min_test_points)]
    if problem == "best-model":
        return [Candidate(c, m) for m in models for c in kept]
    return [Candidate(c, None) for c in kept if problem != "closest" or not in_reference_block(c)]


def encode(space: ConfigSpace, cands: Sequence[Candidate], models: Sequence[str]) -> np.ndarray:
    x = space.encode([c.config for c in cands])
    if len(models) > 1 and cands and cands[0].model is not None:
        onehot = np.array([[1.0 if c.model == m else 0.0 for m in models] for c in cands])
        x = np.hstack([x, onehot])
    return x


def maximin_design(x: np.ndarray, size: int, seed: int, problem: str) -> list[int]:
    """Seeded maximin initial design: of MAXIMIN_TRIES random subsets, the one whose closest
    pair is farthest apart (first such subset on ties)."""
    rng = make_rng(seed, "configsearch", "initial-design", problem)
    if size <= 1 or size >= len(x):
        return [int(i) for i in rng.permutation(len(x))[:size]]
    # the same draws in the same order as one subset at a time; the distances of all subsets
    # in one array operation (the same elementwise arithmetic, so the same gaps and the same pick)
    picks = np.stack([rng.choice(len(x), size=size, replace=False) for _ in range(MAXIMIN_TRIES)])
    pts = x[picks]
    dist = np.linalg.norm(pts[:, :, None, :] - pts[:, None, :, :], axis=-1)
    rows, cols = np.triu_indices(size, 1)
    gaps = dist[:, rows, cols].min(axis=1)
    return [int(i) for i in picks[int(np.argmax(gaps))]]  # argmax: first maximum on ties


# --------------------------------------------------------------------------- the search loop


def search(
    *,
    problem: str,
    method: str,
    space: ConfigSpace,
    feasible: Sequence[Config],
    models: Sequence[str],
    evaluate: EvaluateFn,
    budget: int,
    init: int,
    seed: int,
    ground_truth: dict[str, float] | None = None,
    on_step: Callable[[Step], None] | None = None,
    cost_alpha: float = COST_ALPHA,
    min_test_points: int = MIN_TEST_POINTS,
    surrogate: str = "botorch",
    optimizer: Optimizer | None = None,
) -> SearchResult:
    """One budgeted search. `optimizer` (an ask/tell `Optimizer`) overrides `method`'s built-in
    one; it then gets the same candidates, initial design, budget and scoring."""
    if optimizer is None:
        if method not in METHODS:
            raise SpecError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
        optimizer = builtin_optimizer(method, surrogate, cost_alpha)
    if problem == "closest" and not ground_truth:
        raise SpecError("problem 'closest' needs ground-truth MAEs per model")
    cands = candidates(problem, feasible, models, min_test_points)
    if not cands:
        raise SpecError(
            f"no candidates for problem {problem}: no feasible configuration has n*s >= "
            f"{min_test_points} test points (lower --min-test-points to search this space)"
        )
    if method != "exhaustive" and not 1 <= init <= budget:
        raise SpecError(f"need 1 <= init ({init}) <= budget ({budget})")
    budget = len(cands) if method == "exhaustive" else min(budget, len(cands))
    x_all = encode(space, cands, models)
    maximise = direction(problem) == "max"
    # the maximin design is shared by BO, random search and any user optimiser
    design = maximin_design(x_all, init, seed, problem) if method != "exhaustive" else []
    index = {cand.key(): i for i, cand in enumerate(cands)}
    fitted: set[tuple[str, float, int]] = set()

    def new_fits(cand: Candidate) -> int:
        names = [cand.model] if cand.model else list(models)
        c = cand.config
        return sum(c.n for m in names if (m, c.r, c.n) not in fitted)

    result = SearchResult(problem, method, ground_truth=dict(ground_truth or {}))
    entries = [
        cast(Configuration, {**cand.to_json(), "index": i, "features": x_all[i].tolist()})
        for i, cand in enumerate(cands)
    ]
    trials: list[Trial] = []
    # the built-ins never edit their history: theirs is not copied (a user's always is)
    copy = type(optimizer) not in BUILTIN_OPTIMIZERS
    seen: set[int] = set()
    best: float | None = None
    for step_index in range(budget):
        started = time.perf_counter()
        acquisition: float | None = None
        error: str | None = None
        pick: int | None
        if step_index < len(design):
            pick, phase = design[step_index], "init"
        else:
            phase = method
            history = make_history(
                problem=problem, maximise=maximise, models=models, entries=entries, tried=seen,
                trials=trials, budget=budget, step=step_index + 1, seed=seed, copy=copy,
            )  # fmt: skip
            pick, error = _ask(optimizer, history, index, seen)
            acquisition = _acquisition_of(optimizer) if error is None else None
        overhead = time.perf_counter() - started
        if pick is None:
            last = best if best is not None else float("nan")
            step = Step(step_index + 1, "invalid", None, {}, None, last, None, overhead, 0, error)
            result.steps.append(step)
            if on_step is not None:
                on_step(step)
            continue
        cand = cands[pick]
        chosen_models = [cand.model] if cand.model else list(models)
        fits = new_fits(cand)
        fitted.update((m, cand.config.r, cand.config.n) for m in chosen_models)
        maes = {m: evaluate(m, cand.config) for m in chosen_models}
        value = objective(problem, maes, result.ground_truth)
        best = value if best is None else (max(best, value) if maximise else min(best, value))
        step = Step(step_index + 1, phase, cand, maes, value, best, acquisition, overhead, fits)
        result.steps.append(step)
        seen.add(pick)
        told = make_trial(step.index, phase, entries[pick], maes, value)
        trials.append(told)
        try:
            optimizer.observe(make_trial(step.index, phase, entries[pick], maes, value))
        except RUN_ENDING:
            raise
        except Exception as exc:  # an agent's failure is data: recorded on the step
            step.error = f"observe raised {type(exc).__name__}: {_one_line(exc)}"
        if on_step is not None:
            on_step(step)
    return result


def search_health(steps: Sequence[Mapping[str, object]]) -> RunHealth:
    """The health of a search from its step payloads, for the one failed-run rule: each
    guided step (past the initial design) is one policy call, failed when the optimiser gave
    no usable suggestion."""
    health = RunHealth()
    for step in steps:
        if step.get("phase") == "init":
            continue
        error = step.get("error")
        failed = _failed_suggestion(str(error) if error else None)
        health.policy(failed if step.get("config") is None else None, error)
    return health


def _failed_suggestion(error: str | None) -> str | None:
    """Why a guided step gave no usable suggestion (a named cause), or None. A suggestion
    already evaluated is the optimiser's own (wasted) decision, not a failure."""
    if error is None or "already evaluated" in error:
        return None
    return AGENT_RAISED if "raised" in error else REPLIES_INVALID


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def _ask(
    optimizer: Optimizer,
    history: OptimizerHistory,
    index: dict[tuple[float, int, int, str | None], int],
    seen: set[int],
) -> tuple[int | None, str | None]:
    """The optimiser's suggestion as a candidate index, or None and why it is invalid."""
    try:
        suggestion = optimizer.suggest(history)
        key = key_of(suggestion)
    except RUN_ENDING:
        raise  # an isolated optimiser that stopped answering, or a run cap: the run fails
    except Exception as exc:
        return None, f"suggest raised {type(exc).__name__}: {_one_line(exc)}"
    shown = _shown(suggestion)
    pick = index.get(key)
    if pick is None:
        return None, f"suggestion {shown} is not a candidate of this problem"
    if pick in seen:
        return None, f"suggestion {shown} was already evaluated"
    return pick, None


def _shown(suggestion: Mapping[str, object]) -> str:
    """A suggestion as an invalid step's error names it (its features left out)."""
    return repr({k: v for k, v in dict(suggestion).items() if k != "features"})


def landscape(
    problem: str,
    table: dict[tuple[str, Config], float],
    models: Sequence[str],
    feasible: Sequence[Config],
    gt: dict[str, float] | None = None,
    min_test_points: int = MIN_TEST_POINTS,
    se: dict[tuple[str, Config], float | None] | None = None,
    gt_se: dict[str, float | None] | None = None,
) -> Landscape:
    """The objective of every searched candidate of `problem` from a full table of m(o, c), with
    the SE term of the target band: SE(m*) for best-model, mean over models of SE(gt(o)) for
    closest (None when any SE is unknown: the files recorded before abs_error_sd was stored)."""
    scored = []
    for cand in candidates(problem, feasible, models, min_test_points):
        ms = [cand.model] if cand.model else list(models)
        maes = {m: table[(m, cand.config)] for m in ms}
        scored.append((objective(problem, maes, gt or {}), cand))
    if not scored:
        raise SpecError(
            f"no candidates for problem {problem}: no configuration has n*s >= {min_test_points}"
        )
    shrunk = _shrunk(scored, models, se) if problem == "best-model" else None
    if shrunk is not None:
        scored = [(shrunk[0][(str(c.model), c.config)], c) for _, c in scored]
    maximise = direction(problem) == "max"
    pick = max if maximise else min
    best_value, best_cand = pick(scored, key=lambda t: t[0])
    floor: float | None = None
    if shrunk is not None:
        floor = shrunk[1][(str(best_cand.model), best_cand.config)]
    elif problem == "best-model" and se is not None:
        floor = se.get((str(best_cand.model), best_cand.config))
    elif problem == "closest" and gt_se is not None:
        values = [gt_se.get(m) for m in models]
        known = [v for v in values if v is not None]
        floor = float(np.mean(known)) if known and len(known) == len(values) else None
    notes: LandscapeNotes = {
        "min_test_points": min_test_points,
        "below_min_test_points": sum(1 for c in feasible if not reliable(c, min_test_points)),
    }
    if problem == "closest":
        # would the optimum over all of C_min be a near-copy of the reference itself?
        block = [
            objective(problem, {m: table[(m, c)] for m in models}, gt or {})
            for c in feasible
            if reliable(c, min_test_points)
            and in_reference_block(c)
            and c != Config(*REFERENCE_CONFIG)
        ]
        notes["reference_block_excluded"] = len(block)
        notes["argopt_in_reference_block"] = bool(block) and min(block) < best_value
    if shrunk is not None:
        notes["block_tau2"] = shrunk[2]
    return Landscape(
        direction(problem),
        tuple(v for v, _ in scored),
        best_cand.label(),
        se_floor=floor,
        se_known=floor is not None,
        notes=notes,
        scores=shrunk[0] if shrunk is not None else None,
    )


Shrunk = tuple[dict[tuple[str, Config], float], dict[tuple[str, Config], float], dict[str, float]]


def _shrunk(
    scored: Sequence[tuple[float, Candidate]],
    models: Sequence[str],
    se: dict[tuple[str, Config], float | None] | None,
) -> Shrunk | None:
    """Best-model: each model's candidate MAEs shrunk toward their (r, n) blocks, their SEs and
    tau^2 per model (`targets.block_shrunk`); None where any SE is unknown."""
    if se is None:
        return None
    values: dict[tuple[str, Config], float] = {}
    ses: dict[tuple[str, Config], float] = {}
    tau2: dict[str, float] = {}
    for m in models:
        mine = {c.config: v for v, c in scored if c.model == m}
        shrunk = block_shrunk(mine, {c: se.get((m, c)) for c in mine})
        if shrunk is None:
            return None
        values |= {(m, c): v for c, v in shrunk.values.items()}
        ses |= {(m, c): v for c, v in shrunk.se.items()}
        tau2[m] = shrunk.tau2
    return values, ses, tau2


def scored_trace(land: Landscape, steps: Sequence[Step]) -> list[float]:
    """Best so far per step as the target reads it: the search's own where the landscape scores
    the raw objective; under block shrinkage the best shrunk MAE of the candidates evaluated so
    far (the search saw their raw MAEs), NaN before the first."""
    if land.scores is None:
        return [s.best_so_far for s in steps]
    best, out = float("nan"), []
    for s in steps:
        if s.candidate is not None and s.objective is not None:
            value = land.value_of(s.candidate.model, s.candidate.config, s.objective)
            best = value if math.isnan(best) else min(best, value)
        out.append(best)
    return out
