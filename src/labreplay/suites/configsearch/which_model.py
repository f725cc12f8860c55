"""Which model is best over the space (formal Algorithm 1), replayed on two recorded references
of one task, as METRICS.md's fourth round declares it.

Two problems, kept apart because they answer different questions:
- **The verdict** comes from a *paired random design*: T configurations drawn uniformly without
  replacement from C_min (both models evaluated at each), the paired difference
  first - second with its 95% t interval, "tied" when it contains 0. A uniform sample makes the
  mean an unbiased estimate of M(first) - M(second) over C_min; a guided search's picks would
  not be (it chooses where the difference is extreme). The draw depends on the seed and the
  sorted configurations only, never on the model order, so swapping the models mirrors the
  difference and its interval and names the same model. The truth (every C_min configuration)
  has a 95% interval clustered by (r, n) block: a block's configurations share their fits and
  most test points, so they are not independent (issue 49).
- **The largest difference** is a search problem of its own: BO (and random search beside it)
  maximise |m(first, c) - m(second, c)|, symmetric in the models; a search hits when it finds a
  top-5% |difference| configuration (k = ceil(0.05 |C_min|), as the best-model target).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Literal, TypedDict

import numpy as np

from labreplay.sdk import make_rng
from labreplay.suites.configsearch.optimizers import (
    SurrogateIdentity,
    require_surrogate,
    surrogate_identity,
)
from labreplay.suites.configsearch.references import Reference, _search_tables, unscorable
from labreplay.suites.configsearch.search import Answer, Step, which_model_answer
from labreplay.suites.configsearch.space import Config
from labreplay.suites.configsearch.targets import MIN_TEST_POINTS

DESIGN = (
    "paired random design: T configurations drawn uniformly without replacement from C_min, "
    "both models at each; 95% t interval of the paired difference, tied when it contains 0"
)
LOCATOR_METHODS = ("bo", "random")


class MethodFound(TypedDict):
    hits: int
    mean_found: float


class DifferenceSearch(TypedDict):
    """`_largest_difference`: BO and random search locating the largest |difference|."""

    objective: str
    largest: float
    target: float
    on_target: int
    bo: SurrogateIdentity
    methods: dict[str, MethodFound]


class PairedRandom(TypedDict):
    tied: int
    named: dict[str, int]
    agrees_with_truth: int


class WhichModelRow(TypedDict):
    """`compare_which_model`'s row of a task whose two references share C_min configurations."""

    task: str
    problem: str
    scored: Literal[True]
    models: list[str]
    min_test_points: int
    configurations: int
    truth: Answer
    truth_full: Answer
    seeds: int
    budget: int
    init: int
    design: str
    methods: dict[str, PairedRandom]
    largest_difference: DifferenceSearch | None


class UnscoredWhichModel(TypedDict):
    """`compare_which_model`'s row of a task with no C_min configuration, and why."""

    task: str
    problem: str
    models: list[str]
    scored: Literal[False]
    reason: str
    configurations: int
    seeds: int
    budget: int
    init: int


# `_search_tables`' arguments for one locator search: references, method, budget, init,
# C_min, surrogate, seed
LocatorArgs = tuple[dict[str, Reference], str, int, int, int, str, int]


def _steps(refs: dict[str, Reference], configs: Sequence[Config], phase: str) -> list[Step]:
    return [
        Step(i, phase, None, {m: ref.maes[c] for m, ref in refs.items()}, 0.0, 0.0, None, 0.0)
        for i, c in enumerate(configs, 1)
    ]


def _answer(
    refs: dict[str, Reference], configs: Sequence[Config], order: Sequence[str], by_block: bool
) -> Answer:
    steps = _with_candidates(_steps(refs, configs, "exhaustive"), configs)
    return which_model_answer(steps, order, by_block)


def _with_candidates(steps: list[Step], configs: Sequence[Config]) -> list[Step]:
    from labreplay.suites.configsearch.search import Candidate

    for step, config in zip(steps, configs, strict=True):
        step.candidate = Candidate(config, None)
    return steps


def paired_random_sample(cmin: Sequence[Config], size: int, seed: int) -> list[Config]:
    """`size` configurations of the sorted C_min, uniformly without replacement, from a stream
    keyed by the seed alone (the same draw whatever the model order)."""
    ordered = sorted(cmin)
    rng = make_rng(seed, "configsearch", "which-model", "paired-random-design")
    picks = rng.choice(len(ordered), size=min(size, len(ordered)), replace=False)
    return [ordered[int(i)] for i in picks]


def compare_which_model(
    first: Reference,
    second: Reference,
    seeds: Sequence[int],
    budget: int,
    init: int,
    min_test_points: int = MIN_TEST_POINTS,
    surrogate: str = "botorch",
    pool: Executor | None = None,
    locate: bool = True,
) -> WhichModelRow | UnscoredWhichModel:
    """The truth over every C_min configuration, the paired random design's verdict per seed and
    (`locate`) the largest-difference search (BO vs random) per seed; differences read
    first - second."""
    require_surrogate(surrogate)
    order = [first.model, second.model]
    refs = {first.model: first, second.model: second}
    common = sorted(set(first.admissible()) & set(second.admissible()))
    cmin = [c for c in common if c.n * c.s >= min_test_points]
    if not cmin:
        why = unscorable(first, "which-model", min_test_points) or unscorable(
            second, "which-model", min_test_points
        )
        return {
            "task": first.task, "problem": "which-model", "models": order, "scored": False,
            "reason": why or f"no configuration both references hold has n*s >= "
            f"{min_test_points}", "configurations": 0, "seeds": len(seeds),
            "budget": budget, "init": init,
        }  # fmt: skip
    # the truth: every configuration, clustered by (r, n) block (they share fits and test
    # points); a seed's uniform draw of T rarely holds two of one block
    truth = _answer(refs, cmin, order, by_block=True)
    verdicts = [
        _answer(refs, paired_random_sample(cmin, budget, s), order, False)["verdict"] for s in seeds
    ]
    return {
        "task": first.task,
        "problem": "which-model",
        "scored": True,
        "models": order,
        "min_test_points": min_test_points,
        "configurations": len(cmin),
        "truth": truth,
        # beside it, the full-space reading (configurations below C_min included)
        "truth_full": _answer(refs, common, order, by_block=True),
        "seeds": len(seeds),
        "budget": budget,
        "init": init,
        "design": DESIGN,
        "methods": {
            "paired random": {
                "tied": verdicts.count("tied"),
                "named": {m: verdicts.count(m) for m in order},
                "agrees_with_truth": verdicts.count(truth["verdict"]),
            }
        },
        "largest_difference": _largest_difference(
            refs, cmin, seeds, budget, init, min_test_points, surrogate, pool
        )
        if locate
        else None,
    }


def _largest_difference(
    refs: dict[str, Reference],
    cmin: Sequence[Config],
    seeds: Sequence[int],
    budget: int,
    init: int,
    min_test_points: int,
    surrogate: str,
    pool: Executor | None,
) -> DifferenceSearch:
    """Where the models differ most: the target is a top-5% |difference| configuration."""
    a, b = sorted(refs)
    gaps = sorted((abs(refs[a].maes[c] - refs[b].maes[c]) for c in cmin), reverse=True)
    k = max(1, math.ceil(0.05 * len(gaps)))
    threshold = gaps[k - 1]
    args: list[LocatorArgs] = [
        (refs, m, budget, init, min_test_points, surrogate, s)
        for m in LOCATOR_METHODS
        for s in seeds
    ]
    found = list((pool.map if pool is not None else map)(_largest_found, args))
    methods: dict[str, MethodFound] = {}
    for j, method in enumerate(LOCATOR_METHODS):
        mine = found[j * len(seeds) : (j + 1) * len(seeds)]
        methods[method] = {
            "hits": sum(1 for g in mine if g >= threshold),
            "mean_found": float(np.mean(mine)),
        }
    return {
        "objective": "|m(first, c) - m(second, c)|, maximised (symmetric in the models)",
        "largest": gaps[0],
        "target": threshold,
        "on_target": sum(1 for g in gaps if g >= threshold),
        "bo": surrogate_identity(surrogate),
        "methods": methods,
    }


def _largest_found(args: LocatorArgs) -> float:
    refs, method, budget, init, min_test_points, surrogate, seed = args
    result = _search_tables(
        refs, "which-model", method, budget, init, seed, min_test_points, surrogate
    )
    return float(max(s.objective for s in result.valid_steps if s.objective is not None))
