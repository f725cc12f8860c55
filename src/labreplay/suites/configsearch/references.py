"""Exhaustive reference tables as small files, and search replays on them.

An exhaustive sweep of one task x model is hours of model fitting; its result is 500-900
numbers. `export_references` writes each complete sweep of a store to one gzipped JSON file
(rows sorted, gzip without a timestamp, so the same sweep always gives the same bytes) with the
provenance needed to trust it: the environment spec hash, the protocol, the data files and the
command that regenerates it. `replay` runs the real search code (`search.search`) against such a
table: every evaluation is a table lookup, so BO and random search can be compared over many
seeds and every task in seconds, without fitting a model. The target metrics are the ones the
report uses (`targets.target_metrics`).

Every replay row (declared, METRICS.md fourth round): BO beside uniform random search and the
no-data heuristic smallest-ns (untried candidates in ascending n*s after the same shared initial
design, seeded ties), all at the paper's T = 12, T0 = 4 unless asked otherwise; the model fits
each search used against the exhaustive sweep of the table and against one (0, 48, 10) fit per
model; the per-seed outcomes (`per_seed`) from which `pooled.pooled` pairs BO with each reference
by (reference, seed). Degenerate test folds (DEGENERATE_RULE): a configuration with any is never
a candidate or a target; a reference with no C_min configuration left is reported, not scored.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NotRequired, TypedDict, cast

import numpy as np

from labreplay.errors import DataError
from labreplay.sdk import atomic_write_bytes, canonical_json, read_file, sha256_json
from labreplay.sdk.agents import Optimizer
from labreplay.sdk.engine import RunInfo, Store
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.sdk.scoring import paired_bootstrap_ci
from labreplay.suites.configsearch.cost import CostClaims
from labreplay.suites.configsearch.events import ConfigJson
from labreplay.suites.configsearch.json_numbers import as_float, as_int
from labreplay.suites.configsearch.optimizers import (
    OptimizerFactory,
    SurrogateIdentity,
    require_surrogate,
    surrogate_identity,
)
from labreplay.suites.configsearch.options import COST_ALPHA
from labreplay.suites.configsearch.search import (
    Answer,
    SearchResult,
    landscape,
    scored_trace,
    search,
)
from labreplay.suites.configsearch.space import REFERENCE_CONFIG, Config, ConfigSpace, SpaceDoc
from labreplay.suites.configsearch.targets import (
    MIN_TEST_POINTS,
    Landscape,
    LandscapeNotes,
    LandscapeSummary,
    TargetMetrics,
    in_reference_block,
    standard_error,
    target_metrics,
)

FORMAT = "labreplay-configsearch-reference/1"
COLUMNS = (
    "r", "n", "s", "mae", "mae_nondegenerate", "degenerate_folds", "n_test", "abs_error_sd"
)  # fmt: skip
DEGENERATE_RULE = (
    "a configuration with any degenerate test fold (its test targets all take one value that at "
    "least 5% of the sample shares, e.g. zero-gap metals) is never a target or a candidate; it "
    "stays in the landscape, counted (METRICS.md, fourth round)"
)
REGENERATE = "labreplay configsearch references --tasks {task} --models {model} --n-jobs 2"


class SliceDoc(TypedDict, total=False):
    """One r slice of an assembled reference: its spec hash, r values and sweep provenance."""

    spec_hash: str
    r: list[float]
    sweep_provenance: JsonObject


class ReferenceDoc(TypedDict, total=False):
    """A reference (or slice) file: one row per configuration in the order of `columns`
    (numbers; None where a value was not recorded), with the provenance to trust it."""

    format: str
    task: str
    model: str
    model_params: JsonValue
    spec_hash: str
    sweep_provenance: JsonObject
    protocol: JsonObject
    space: SpaceDoc
    pipeline: JsonObject
    regenerate: str
    columns: list[str]
    rows: list[list[float | None]]
    slices: list[SliceDoc]


class ReplayRow(TargetMetrics):
    """One replayed search of one seed: its target metrics, invalid steps, final answer and
    the model fits it needed."""

    seed: int
    invalid_steps: int
    answer: Answer
    fits_used: int


class Paired(TypedDict):
    """`_paired`: b vs a over the same seeds, each mean with its paired bootstrap 95% interval."""

    steps_saved_mean: float
    steps_saved_ci95: list[float]
    normalised_gain_mean: float
    normalised_gain_ci95: list[float]


class BOIdentity(SurrogateIdentity):
    cost_alpha: float


class HeuristicRow(TypedDict):
    """The no-data heuristic smallest-ns beside BO on one reference."""

    method: str
    what: str
    hits: int
    hits_in_initial_design: int
    mean_final_normalised: float
    bo_vs_heuristic: Paired
    boundary: NotRequired[str | None]


class MethodCost(TypedDict):
    mean_fits: float
    min_fits: int
    max_fits: int
    saved_vs_exhaustive: float | None
    times_single_config: float | None


class CostRow(TypedDict):
    """`_cost`: model fits per search against the exhaustive sweep and one configuration."""

    unit: str
    exhaustive_fits: int
    exhaustive_is: str
    single_config_fits: int
    single_config_is: str
    methods: dict[str, MethodCost]
    claim: NotRequired[CostClaims]


class MethodSeeds(TypedDict):
    """One method's outcome per seed (`pooled.pooled` pairs them by seed)."""

    hit: list[int]
    steps_to_target: list[int | None]
    final_normalised: list[float | None]
    fits_used: list[int]


# per seed: the seeds, then each reference method's outcomes ("smallest-ns" is no identifier)
PerSeed = TypedDict(
    "PerSeed",
    {"seeds": list[int], "bo": MethodSeeds, "random": MethodSeeds, "smallest-ns": MethodSeeds},
)


class AgentRow(TypedDict):
    """A user's optimiser beside random search and BO on the same seeds."""

    label: str | None
    hits: int
    hits_in_initial_design: int
    mean_final_normalised: float
    invalid_steps: int
    vs_random: Paired
    vs_bo: Paired
    name: NotRequired[str]
    # an LLM optimiser's (the replay command's `_mark_llm_rows`): its calls' usage, the run's
    # status (with its cause when failed) and whether it is ranked
    llm_usage: NotRequired[dict[str, object]]
    status: NotRequired[str]
    cause: NotRequired[str]
    ranked: NotRequired[bool]


class RowExtras(TypedDict, total=False):
    """What a scored row holds only when asked: traces (`keep_traces`), the closest answers in
    the reference block (problem closest) and a user's optimiser (`agent`)."""

    normalised_traces: dict[str, list[list[float | None]]]
    closest_answers_in_reference_block: int
    agent: AgentRow


class ScoredRow(LandscapeSummary, RowExtras):
    """`compare`'s row for a reference with a target: the landscape, the hits and paired
    differences of BO, random search and the heuristic, the cost and the per-seed outcomes."""

    reference: str
    task: str
    model: str
    problem: str
    scored: Literal[True]
    targets_in_space: int
    uniform_chance_within: float
    random_chance_within: float
    warnings: list[str]
    seeds: int
    budget: int
    init: int
    within: int
    bo: BOIdentity
    bo_hits: int
    random_hits: int
    bo_hits_in_initial_design: int
    bo_mean_final_normalised: float
    random_mean_final_normalised: float
    steps_saved_mean: float
    steps_saved_ci95: list[float]
    normalised_gain_mean: float
    normalised_gain_ci95: list[float]
    bo_better: bool
    bo_better_normalised: bool
    heuristic: HeuristicRow
    cost: CostRow
    per_seed: PerSeed


class UnscoredRow(LandscapeNotes):
    """`compare`'s row for a reference no search can be measured on, and why (`reason`)."""

    reference: str
    task: str
    model: str
    problem: str
    scored: Literal[False]
    reason: str
    candidates: int
    seeds: int
    budget: int
    init: int
    warnings: list[str]


CompareRow = ScoredRow | UnscoredRow


@dataclass(frozen=True)
class Reference:
    """m(o, c) of one model over every feasible configuration of one task, with each
    configuration's pooled test-set size and the SD of its absolute errors (None in the files
    recorded before abs_error_sd was stored: flagged as `se_known` False, never invented)."""

    task: str
    model: str
    protocol: JsonObject
    space: ConfigSpace
    maes: dict[Config, float]
    n_test: dict[Config, int] = field(default_factory=dict)
    abs_error_sd: dict[Config, float | None] = field(default_factory=dict)
    # folds per configuration whose test targets all take one point-mass value (pipeline.py);
    # empty for files recorded without the column (then nothing can be excluded: flagged)
    degenerate_folds: dict[Config, int] = field(default_factory=dict)
    exclude_degenerate: bool = True  # DEGENERATE_RULE; False: the raw reading (--keep-degenerate)

    @property
    def label(self) -> str:
        return f"{self.task} x {self.model}"

    @property
    def degenerate_known(self) -> bool:
        return bool(self.degenerate_folds)

    def degenerate(self, config: Config) -> bool:
        return self.degenerate_folds.get(config, 0) > 0

    def admissible(self) -> list[Config]:
        """The configurations searches and targets may use (before C_min): every one, less the
        degenerate ones under DEGENERATE_RULE. The excluded stay in the table (landscape,
        heat maps, claims, cost of the exhaustive sweep)."""
        if not self.exclude_degenerate:
            return sorted(self.maes)
        return sorted(c for c in self.maes if not self.degenerate(c))

    @property
    def se_known(self) -> bool:
        return bool(self.abs_error_sd) and all(v is not None for v in self.abs_error_sd.values())

    def se(self, config: Config) -> float | None:
        n_test = self.n_test.get(config, config.n * config.s)
        return standard_error(self.abs_error_sd.get(config), n_test)


def _space(doc: SpaceDoc) -> ConfigSpace:
    return ConfigSpace(
        tuple(float(v) for v in doc["r"]),
        tuple(int(v) for v in doc["n"]),
        tuple(int(v) for v in doc["s"]),
        tuple((int(a), int(b)) for a, b in doc["s_cap"]),
    )


def export_references(
    store: Store | None, out_dir: Path, slice_files: Sequence[Path] = ()
) -> list[Path]:
    """One file per task x model from the store's complete exhaustive sweeps; returns the paths
    written. Sweeps of the same task, model, protocol and pipeline over disjoint r values
    (`configsearch references --r-values ...`, one slice per session) are assembled into one
    file, each slice's spec hash and r values kept as provenance; overlapping slices are refused.
    `slice_files` are slices exported earlier (by another session, from another store, and
    committed): they join the store's sweeps of the same group, so a sweep longer than a session
    needs no store kept between sessions."""
    docs = [_slice_doc(path) for path in slice_files]
    if store is not None:
        runs = store.runs(suite="configsearch", branch="sweep/exhaustive", status="complete")
        docs += [_sweep_doc(store, run) for run in runs]
    groups: dict[str, list[ReferenceDoc]] = {}
    for doc in docs:
        key = canonical_json(
            [doc["task"], doc["model"], {k: v for k, v in doc["protocol"].items()
             if k not in ("space", "space_size")}, doc["pipeline"],
             {k: v for k, v in doc["space"].items() if k != "r"}, doc.get("model_params")]
        )  # fmt: skip
        groups.setdefault(key, []).append(doc)
    assembled = [docs[0] if len(docs) == 1 else _assemble(docs) for docs in groups.values()]
    names = [f"{doc['task']}__{doc['model']}" for doc in assembled]
    clash = sorted({name for name in names if names.count(name) > 1})
    if clash:  # one file per task x model: two different sweeps would overwrite each other
        raise DataError(
            f"sweeps of {clash[0].replace('__', ' x ')} differ in protocol, pipeline, space or "
            "model settings: export them from separate stores",
            field="model_params",
        )
    written = []
    for doc in assembled:  # every slice checked before anything is written
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"{doc['task']}__{doc['model']}.json.gz"
        atomic_write_bytes(path, gzip.compress(canonical_json(doc).encode(), mtime=0))
        written.append(path)
    return written


def _read_doc(path: Path, what: str) -> ReferenceDoc:
    """A reference (or slice) file's JSON document, or one line naming the file."""
    try:
        doc = json.loads(gzip.decompress(read_file(path, what)))
    except (OSError, ValueError) as exc:
        raise DataError(f"unreadable {what} ({exc})", file=str(path)) from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DataError("not a configsearch reference file", file=str(path), field="format")
    # the JSON boundary: a file in FORMAT holds a reference document (what it lacks is checked
    # where it is read)
    return cast(ReferenceDoc, doc)


def _slice_doc(path: Path) -> ReferenceDoc:
    doc = _read_doc(path, "reference slice")
    missing = [k for k in ("task", "model", "spec_hash", "protocol", "space", "pipeline", "rows")
               if k not in doc]  # fmt: skip
    if missing:
        raise DataError(f"reference slice lacks {missing}", file=str(path), field=missing[0])
    return ReferenceDoc(**doc)


def _sweep_doc(store: Store, run: RunInfo) -> ReferenceDoc:
    params = run.agent_params
    (model,) = params["models"]
    spec = json.loads(store.get_spec(run.spec_hash))
    rows = []
    for event in store.events(run.run_id):
        if event["kind"] != "evaluation":
            continue
        p = event["payload"]
        c = p["config"]
        rows.append(
            [c["r"], c["n"], c["s"], p["mae"], p.get("mae_nondegenerate"),
             p.get("degenerate_folds", 0), p["n_test"], p.get("abs_error_sd")]
        )  # fmt: skip
    rows.sort(key=lambda row: (row[0], row[1], row[2]))
    doc: ReferenceDoc = {
        "format": FORMAT,
        "task": params["task"],
        "model": model,
        "spec_hash": run.spec_hash,
        # what the fits ran with: code commit and library versions at sweep time (sweeps
        # recorded before library versions were stored carry null, never a guess)
        "sweep_provenance": {
            k: run.provenance.get(k)
            for k in ("labreplay_version", "python", "git_commit", "git_dirty", "libraries")
        },
        "protocol": {k: params[k] for k in ("n_total", "n_ood", "s_max", "space", "space_size")},
        "space": spec["body"]["space"],
        "pipeline": spec["body"]["pipeline"],
        "regenerate": REGENERATE.format(task=params["task"], model=model),
        "columns": list(COLUMNS),
        "rows": rows,
    }
    # sweeps recorded before model settings were stored have none: absent, not invented (the
    # file is canonical JSON, keys sorted: where the key is set does not show)
    if "model_params" in params:
        doc["model_params"] = params["model_params"][model]
    return doc


def _assemble(docs: list[ReferenceDoc]) -> ReferenceDoc:
    """r slices of one sweep -> one reference (slices in r order; r values must not overlap)."""
    docs = sorted(docs, key=lambda d: min(d["space"]["r"]))
    seen: set[float] = set()
    for d in docs:
        overlap = seen & set(d["space"]["r"])
        if overlap:
            raise DataError(
                f"sweeps of {d['task']} x {d['model']} overlap in r {sorted(overlap)}: export "
                "them from separate stores",
                field="spec_hash",
                value=d["spec_hash"],
            )
        seen |= set(d["space"]["r"])
    first = docs[0]
    rows = sorted((row for d in docs for row in d["rows"]), key=lambda row: tuple(row[:3]))
    space: SpaceDoc = {**first["space"], "r": sorted(seen)}
    # a file assembled earlier keeps its own slices' provenance
    slices = sorted(
        (piece for d in docs for piece in d.get("slices", [_own_slice(d)])),
        key=lambda piece: min(piece["r"]),
    )
    return {
        **first,
        "spec_hash": sha256_json(slices),
        "slices": slices,
        "protocol": {
            **first["protocol"],
            "space": sha256_json(space)[:12],
            "space_size": len(rows),
        },
        "space": space,
        "regenerate": "; ".join(
            f"{REGENERATE.format(task=first['task'], model=first['model'])} --r-values "
            + ",".join(f"{r:g}" for r in piece["r"])
            for piece in slices
        ),
        "rows": rows,
    }


def _own_slice(doc: ReferenceDoc) -> SliceDoc:
    piece: SliceDoc = {"spec_hash": doc["spec_hash"], "r": doc["space"]["r"]}
    if "sweep_provenance" in doc:
        piece["sweep_provenance"] = doc["sweep_provenance"]
    return piece


def load_reference(path: Path) -> Reference:
    doc = _read_doc(path, "reference file")
    columns = list(doc.get("columns", COLUMNS[:7]))
    missing = [c for c in ("r", "n", "s", "mae", "n_test") if c not in columns]
    if missing:
        raise DataError(f"reference rows lack {missing}", file=str(path), field="columns")
    at = {name: i for i, name in enumerate(columns)}
    maes: dict[Config, float] = {}
    n_test: dict[Config, int] = {}
    sds: dict[Config, float | None] = {}
    degenerate: dict[Config, int] = {}
    for row in doc["rows"]:
        c = Config(as_float(row[at["r"]]), as_int(row[at["n"]]), as_int(row[at["s"]]))
        maes[c] = as_float(row[at["mae"]])
        n_test[c] = as_int(row[at["n_test"]])
        sd = row[at["abs_error_sd"]] if "abs_error_sd" in at else None
        sds[c] = None if sd is None else float(sd)
        if "degenerate_folds" in at:
            degenerate[c] = as_int(row[at["degenerate_folds"]] or 0)
    return Reference(
        doc["task"], doc["model"], doc["protocol"], _space(doc["space"]), maes, n_test, sds,
        degenerate,
    )  # fmt: skip


def load_references(directory: Path) -> list[Reference]:
    return [load_reference(p) for p in sorted(directory.glob("*.json.gz"))]


def replay(
    ref: Reference,
    method: str,
    seeds: Sequence[int],
    budget: int,
    init: int,
    cost_alpha: float = COST_ALPHA,
    problem: str = "best-model",
    min_test_points: int = MIN_TEST_POINTS,
    surrogate: str = "botorch",
    agent: OptimizerFactory | None = None,
    pool: Executor | None = None,
) -> list[ReplayRow]:
    """Target metrics of a search per seed, every evaluation a table lookup. Problems:
    best-model (lowest MAE) and closest (MAE nearest the model's MAE at (0, 48, 10), which must
    be in the table; its own (r, n) block is not a candidate). `agent`: a factory of a user's
    ask/tell optimiser, run through the same budget, initial design and scoring. `pool`: seeds
    run in its worker processes (speed only: every seed is deterministic on its own, so the rows
    are the same as in one process); a user's agent always runs here, in this process."""
    why = unscorable(ref, problem, min_test_points)
    if why is not None:
        raise DataError(f"{ref.label} {problem}: {why}", field="degenerate_folds")
    land = replay_landscape(ref, problem, min_test_points)  # once, not per seed
    args = (ref, method, budget, init, cost_alpha, problem, min_test_points, surrogate, land)
    if pool is not None and agent is None:
        return list(pool.map(_replay_seed, [(*args, seed) for seed in seeds]))
    return [_replay_one(*args, seed, agent) for seed in seeds]


# `_replay_one`'s arguments but the agent, as a worker process receives them
ReplayArgs = tuple[Reference, str, int, int, float, str, int, str, Landscape, int]


def _replay_seed(args: ReplayArgs) -> ReplayRow:
    return _replay_one(*args)


def _replay_one(
    ref: Reference,
    method: str,
    budget: int,
    init: int,
    cost_alpha: float,
    problem: str,
    min_test_points: int,
    surrogate: str,
    land: Landscape,
    seed: int,
    agent: OptimizerFactory | None = None,
) -> ReplayRow:
    result = _search_tables(
        {ref.model: ref}, problem, method, budget, init, seed, min_test_points, surrogate,
        cost_alpha, _ground_truth(ref, problem), agent() if agent is not None else None,
    )  # fmt: skip
    steps = list(range(1, len(result.steps) + 1))
    return {
        "seed": seed,
        **target_metrics(land, scored_trace(land, result.steps), steps, init),
        "invalid_steps": result.invalid_steps,
        "answer": result.answer(),
        # model fits this search needed: n per new (model, r, n) training set (targets.fits_of)
        "fits_used": sum(s.new_fits for s in result.steps),
    }


# Every replay's rows: BO beside uniform random search and the no-data heuristic "smallest
# admissible n*s first" (all three from the same shared initial design per seed).
ReferenceMethod = Literal["bo", "random", "smallest-ns"]
REFERENCE_METHODS: tuple[ReferenceMethod, ...] = ("bo", "random", "smallest-ns")


@dataclass(frozen=True)
class ReplayPlan:
    """One BO-vs-random comparison on one reference (the arguments of `compare`, no agent)."""

    ref: Reference
    problem: str = "best-model"
    budget: int = 12  # the paper's T and T0 for every problem (METRICS.md, fourth round)
    init: int = 4
    within: int | None = None  # None: the budget
    cost_alpha: float = COST_ALPHA
    min_test_points: int = MIN_TEST_POINTS
    surrogate: str = "botorch"
    keep_traces: bool = False


def compare_many(
    plans: Sequence[ReplayPlan],
    seeds: Sequence[int],
    pool: Executor | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[CompareRow]:
    """`compare` of each plan, the same rows. With a pool, every (plan, method, seed) replay is
    submitted at once, the longest first (BO with the most acquisition steps), so workers never
    wait at the end of one reference or problem for the other's last seed. `progress` gets one
    line per reference as its searches finish (never part of the rows)."""
    for plan in plans:
        require_surrogate(plan.surrogate)
    reasons = [unscorable(p.ref, p.problem, p.min_test_points) for p in plans]
    if any(reasons):
        scored = [p for p, why in zip(plans, reasons, strict=True) if why is None]
        done = iter(compare_many(scored, seeds, pool, progress) if scored else [])
        return [
            next(done) if why is None else _unscored_row(p, seeds, why)
            for p, why in zip(plans, reasons, strict=True)
        ]
    lands = [replay_landscape(p.ref, p.problem, p.min_test_points) for p in plans]
    tasks: list[tuple[int, str, ReplayArgs]] = [
        (i, method, (p.ref, method, p.budget, p.init, p.cost_alpha, p.problem,
                     p.min_test_points, p.surrogate, lands[i], seed))
        for i, p in enumerate(plans)
        for method in REFERENCE_METHODS
        for seed in seeds
    ]  # fmt: skip
    started = time.perf_counter()
    left = {i: 0 for i in range(len(plans))}
    for i, _, _ in tasks:
        left[i] += 1
    finished = 0

    def one_done(i: int) -> None:
        # a line when the last search of a reference is in (in the order they finish)
        nonlocal finished
        left[i] -= 1
        if left[i] == 0 and progress is not None:
            finished += 1
            progress(
                f"replayed {plans[i].ref.label} {plans[i].problem}: {len(seeds)} seeds x "
                f"{len(REFERENCE_METHODS)} methods ({finished}/{len(plans)} references, "
                f"{time.perf_counter() - started:.0f} s)"
            )

    if pool is None:
        rows = []
        for i, _, args in tasks:
            rows.append(_replay_seed(args))
            one_done(i)
    else:
        from concurrent.futures import as_completed

        def cost(task: tuple[int, str, ReplayArgs]) -> int:
            i, method, _ = task
            return plans[i].budget - plans[i].init if method == "bo" else 0

        order = sorted(range(len(tasks)), key=lambda k: -cost(tasks[k]))  # stable: ties in order
        futures = {pool.submit(_replay_seed, tasks[k][2]): k for k in order}
        for future in as_completed(futures):
            one_done(tasks[futures[future]][0])
        by_task = {k: f.result() for f, k in futures.items()}
        rows = [by_task[k] for k in range(len(tasks))]
    runs: list[dict[str, list[ReplayRow]]] = [{m: [] for m in REFERENCE_METHODS} for _ in plans]
    for (i, method, _), row in zip(tasks, rows, strict=True):
        runs[i][method].append(row)
    return [_compared(p, seeds, r, land) for p, r, land in zip(plans, runs, lands, strict=True)]


def _random_search_chance(
    rows: Sequence[ReplayRow], land: Landscape, init: int, within: int
) -> float:
    """P(hit within `within`) of the random search as run, averaged over its seeds: 1 where the
    seed's initial design holds a target, else the chance that within - T0 uniform draws from
    the N - T0 other candidates hit one of the K targets (all left, exact hypergeometric)."""
    from labreplay.suites.configsearch.targets import chance_of_target

    size, design = len(land.values), min(init, within)
    after = chance_of_target(land.on_target, size - design, within - design)
    return float(np.mean([1.0 if m["target_in_initial_design"] else after for m in rows]))


def _steps(m: ReplayRow, budget: int) -> int:
    steps = m["steps_to_target"]  # None exactly when the target was not reached
    return int(steps) if m["reached_target"] and steps is not None else budget + 1


def _hit(m: ReplayRow, within: int) -> bool:
    """Reached the target within `within` steps."""
    steps = m["steps_to_target"]  # None exactly when the target was not reached
    return m["reached_target"] and steps is not None and steps <= within


def _paired(a: Sequence[ReplayRow], b: Sequence[ReplayRow], budget: int) -> Paired:
    """b vs a over the same seeds: steps saved (a miss counts as budget + 1) and the normalised
    score after T, each as a mean with a paired bootstrap 95% interval."""
    saved = [_steps(y, budget) - _steps(x, budget) for x, y in zip(a, b, strict=True)]
    mean, lo, hi = paired_bootstrap_ci(saved, seed=0, purpose="configsearch-replay")
    gain = [
        float(x["final_normalised"] or 0.0) - float(y["final_normalised"] or 0.0)
        for x, y in zip(a, b, strict=True)
    ]
    g_mean, g_lo, g_hi = paired_bootstrap_ci(gain, seed=0, purpose="configsearch-normalised")
    return {
        "steps_saved_mean": mean,
        "steps_saved_ci95": [lo, hi],
        "normalised_gain_mean": g_mean,
        "normalised_gain_ci95": [g_lo, g_hi],
    }


def compare(
    ref: Reference,
    seeds: Sequence[int],
    budget: int,
    init: int,
    within: int,
    cost_alpha: float = COST_ALPHA,
    problem: str = "best-model",
    min_test_points: int = MIN_TEST_POINTS,
    surrogate: str = "botorch",
    agent: OptimizerFactory | None = None,
    agent_label: str | None = None,
    pool: Executor | None = None,
    keep_traces: bool = False,
) -> CompareRow:
    """BO vs random search (and a user's optimiser) on one reference: seeds reaching the target
    within `within` evaluations beside the configurations on target and the exact chance of
    `within` uniform draws; the paired difference in steps to target and in the normalised
    score after T (BO minus random)."""
    require_surrogate(surrogate)
    plan = ReplayPlan(
        ref, problem, budget, init, within, cost_alpha, min_test_points, surrogate, keep_traces
    )
    if agent is None:
        return compare_many([plan], seeds, pool)[0]
    why = unscorable(ref, problem, min_test_points)
    if why is not None:
        return _unscored_row(plan, seeds, why)
    runs: dict[str, list[ReplayRow]] = {
        m: replay(ref, m, seeds, budget, init, cost_alpha, problem, min_test_points, surrogate,
                  pool=pool)
        for m in REFERENCE_METHODS
    }  # fmt: skip
    runs["agent"] = replay(
        ref, "agent", seeds, budget, init, cost_alpha, problem, min_test_points, surrogate, agent
    )
    land = replay_landscape(ref, problem, min_test_points)
    return _compared(plan, seeds, runs, land, agent, agent_label)


def _compared(
    plan: ReplayPlan,
    seeds: Sequence[int],
    runs: dict[str, list[ReplayRow]],
    land: Landscape,
    agent: OptimizerFactory | None = None,
    agent_label: str | None = None,
) -> CompareRow:
    """The comparison row of `compare` from the replayed rows of each method."""
    ref, problem, budget, within = plan.ref, plan.problem, plan.budget, plan.within
    within = budget if within is None else within

    def hits(rows: list[ReplayRow]) -> int:
        return sum(1 for m in rows if _hit(m, within))

    def mean_final(rows: list[ReplayRow]) -> float:
        return float(np.mean([float(m["final_normalised"] or 0.0) for m in rows]))

    bo_vs_random = _paired(runs["bo"], runs["random"], budget)
    bo_hits = hits(runs["bo"])
    heuristic = runs["smallest-ns"]
    h: HeuristicRow = {
        "method": "smallest-ns",
        "what": "no-data heuristic: after the shared initial design, untried candidates in "
        "ascending n*s (seeded ties); it reads no MAE",
        "hits": hits(heuristic),
        "hits_in_initial_design": sum(1 for m in heuristic if m["target_in_initial_design"]),
        "mean_final_normalised": mean_final(heuristic),
        "bo_vs_heuristic": _paired(runs["bo"], heuristic, budget),
    }
    h["boundary"] = _boundary(plan, land, bo_hits, h["hits"], h["hits_in_initial_design"])

    def per_seed(rows: list[ReplayRow]) -> MethodSeeds:
        return {
            "hit": [int(_hit(m, within)) for m in rows],
            "steps_to_target": [m["steps_to_target"] for m in rows],
            "final_normalised": [m["final_normalised"] for m in rows],
            "fits_used": [int(m["fits_used"]) for m in rows],
        }

    extras: RowExtras = {}
    if plan.keep_traces:
        extras["normalised_traces"] = {
            m: [row["normalised_trace"] for row in rows] for m, rows in runs.items()
        }
    if problem == "closest":
        extras["closest_answers_in_reference_block"] = sum(
            1
            for rows in runs.values()
            for m in rows
            if (config := m["answer"].get("config")) and _answer_in_block(config)
        )
    if agent is not None:
        agent_row: AgentRow = {
            "label": agent_label,
            "hits": hits(runs["agent"]),
            "hits_in_initial_design": sum(
                1 for m in runs["agent"] if m["target_in_initial_design"]
            ),
            "mean_final_normalised": mean_final(runs["agent"]),
            "invalid_steps": sum(int(m["invalid_steps"]) for m in runs["agent"]),
            "vs_random": _paired(runs["agent"], runs["random"], budget),
            "vs_bo": _paired(runs["agent"], runs["bo"], budget),
        }
        agent_row["name"] = _agent_name(agent)
        extras["agent"] = agent_row
    # one literal, keys in the order the row has always had
    return {
        "reference": ref.label,
        "task": ref.task,
        "model": ref.model,
        "problem": problem,
        "scored": True,
        **land.summary(),
        "targets_in_space": land.on_target,
        # the floor of T uniform draws, and the chance of the random search actually run (its
        # shared maximin initial design, then uniform draws), exact given each seed's design
        "uniform_chance_within": land.chance(within),
        "random_chance_within": _random_search_chance(runs["random"], land, plan.init, within),
        "warnings": land.warnings(within)
        + ([] if ref.se_known else ["reference has no abs_error_sd: SE term of the band unknown"]),
        "seeds": len(seeds),
        "budget": budget,
        "init": plan.init,
        "within": within,
        "bo": {**surrogate_identity(plan.surrogate), "cost_alpha": plan.cost_alpha},
        "bo_hits": bo_hits,
        "random_hits": hits(runs["random"]),
        "bo_hits_in_initial_design": sum(1 for m in runs["bo"] if m["target_in_initial_design"]),
        "bo_mean_final_normalised": mean_final(runs["bo"]),
        "random_mean_final_normalised": mean_final(runs["random"]),
        **bo_vs_random,
        "bo_better": bool(bo_vs_random["steps_saved_ci95"][0] > 0),
        "bo_better_normalised": bool(bo_vs_random["normalised_gain_ci95"][0] > 0),
        "heuristic": h,
        "cost": _cost(ref, runs),
        "per_seed": {
            "seeds": [int(m["seed"]) for m in runs["bo"]],
            "bo": per_seed(runs["bo"]),
            "random": per_seed(runs["random"]),
            "smallest-ns": per_seed(runs["smallest-ns"]),
        },
        **extras,
    }


def _boundary(
    plan: ReplayPlan, land: Landscape, bo_hits: int, heuristic_hits: int, in_design: int
) -> str | None:
    """Where the no-data heuristic hits as often as BO (or more), one line saying that the target
    sits on the admissibility boundary, with the n*s figures that show it; else None (also when
    the heuristic hit only inside the shared initial design: that says nothing about n*s)."""
    if heuristic_hits - in_design == 0 or heuristic_hits < bo_hits:
        return None
    from labreplay.suites.configsearch.search import candidates, objective

    gt = _ground_truth(plan.ref, plan.problem) or {}
    ns = []
    for cand in candidates(plan.problem, plan.ref.admissible(), [plan.ref.model],
                           plan.min_test_points):  # fmt: skip
        value = objective(plan.problem, {plan.ref.model: plan.ref.maes[cand.config]}, gt)
        value = land.value_of(cand.model, cand.config, value)  # the shrunk MAE (best-model)
        ns.append((cand.config.n * cand.config.s, land.hits(value)))
    smallest = min(n for n, _ in ns)
    on = sorted(n for n, hit in ns if hit)
    if not on:
        return None
    near = sum(1 for n, _ in ns if n <= on[0])
    return (
        f"smallest-ns {heuristic_hits} >= BO {bo_hits} hits: the target sits on the "
        f"admissibility boundary (smallest on-target n*s = {on[0]}, smallest admissible "
        f"{smallest} = C_min bound {plan.min_test_points}; {near} candidates have n*s <= {on[0]})"
    )


def _cost(ref: Reference, runs: dict[str, list[ReplayRow]]) -> CostRow:
    """Model fits per search (METRICS.md cost unit: one fit per fold of each new (model, r, n)
    training set; every s of an (r, n) reuses them) against the exhaustive sweep of the
    reference table (every feasible configuration) and against a single-configuration protocol
    (Omee et al.: one (0, 48, 10) evaluation per model = 48 fits)."""
    from labreplay.suites.configsearch.targets import fits_of

    exhaustive = fits_of([(ref.model, c) for c in ref.maes])
    single = fits_of([(ref.model, Config(*REFERENCE_CONFIG))])
    out: CostRow = {
        "unit": "model fits (n per new (model, r, n) training set)",
        "exhaustive_fits": exhaustive,
        "exhaustive_is": "every feasible configuration of the reference table",
        "single_config_fits": single,
        "single_config_is": "one (0, 48, 10) evaluation per model (Omee et al.)",
        "methods": {},
    }
    for method, rows in runs.items():
        if method not in REFERENCE_METHODS:
            continue
        fits = [int(m["fits_used"]) for m in rows]
        mean = float(np.mean(fits))
        out["methods"][method] = {
            "mean_fits": mean,
            "min_fits": min(fits),
            "max_fits": max(fits),
            "saved_vs_exhaustive": 1.0 - mean / exhaustive if exhaustive else None,
            "times_single_config": mean / single if single else None,
        }
    from labreplay.suites.configsearch.cost import cost_claims

    out["claim"] = cost_claims(
        {m: [int(x["fits_used"]) for x in rows] for m, rows in runs.items()
         if m in REFERENCE_METHODS},
        exhaustive, single,
    )  # fmt: skip
    return out


def _agent_name(agent: OptimizerFactory) -> str:
    made = agent()
    return f"{made.name} {canonical_json(made.params())}"


def _answer_in_block(config: ConfigJson) -> bool:
    return in_reference_block(Config(float(config["r"]), int(config["n"]), int(config["s"])))


def _ground_truth(ref: Reference, problem: str) -> dict[str, float] | None:
    """closest: the model's MAE at (0, 48, 10), which the table must hold; else None."""
    if problem != "closest":
        return None
    reference = Config(*REFERENCE_CONFIG)
    if reference not in ref.maes:
        raise DataError(
            f"reference {ref.label} has no (0, 48, 10) row for problem 'closest'", field="rows"
        )
    return {ref.model: ref.maes[reference]}


def replay_landscape(
    ref: Reference, problem: str, min_test_points: int = MIN_TEST_POINTS
) -> Landscape:
    table = {(ref.model, c): v for c, v in ref.maes.items()}
    se = {(ref.model, c): ref.se(c) for c in ref.maes}
    truth = _ground_truth(ref, problem)
    gt_se = {ref.model: ref.se(Config(*REFERENCE_CONFIG))} if truth else None
    land = landscape(
        problem, table, [ref.model], ref.admissible(), truth, min_test_points, se, gt_se
    )
    land.notes.update(degenerate_notes(ref, min_test_points))
    return land


def degenerate_notes(ref: Reference, min_test_points: int) -> LandscapeNotes:
    """What the degenerate rule did to one reference: configurations with a degenerate fold,
    in C_min and in the whole table, and whether they were excluded."""
    flagged = [c for c in ref.maes if ref.degenerate(c)]
    return {
        "degenerate_rule": DEGENERATE_RULE if ref.exclude_degenerate else "off (--keep-degenerate)",
        "degenerate_known": ref.degenerate_known,
        "degenerate_configs": len(flagged),
        "degenerate_configs_in_c_min": sum(1 for c in flagged if c.n * c.s >= min_test_points),
        "degenerate_excluded": len(flagged) if ref.exclude_degenerate else 0,
    }


def unscorable(ref: Reference, problem: str, min_test_points: int) -> str | None:
    """Why a reference has no candidate for `problem` once the degenerate configurations are
    excluded (then it is reported, never searched), or None."""
    if not ref.exclude_degenerate:
        return None
    cmin = [c for c in ref.maes if c.n * c.s >= min_test_points]
    left = [c for c in ref.admissible() if c.n * c.s >= min_test_points]
    if problem == "closest":
        left = [c for c in left if not in_reference_block(c)]
    if left or not cmin:
        return None
    return (
        f"not scored: every one of its {len(cmin)} C_min configurations has a degenerate test "
        "fold (declared rule: never a target), so no search can be measured on it"
    )


def _unscored_row(plan: ReplayPlan, seeds: Sequence[int], reason: str) -> UnscoredRow:
    return {
        "reference": plan.ref.label,
        "task": plan.ref.task,
        "model": plan.ref.model,
        "problem": plan.problem,
        "scored": False,
        "reason": reason,
        **degenerate_notes(plan.ref, plan.min_test_points),
        "candidates": 0,
        "seeds": len(seeds),
        "budget": plan.budget,
        "init": plan.init,
        "warnings": [reason],
    }


def targets_in_space(ref: Reference, min_test_points: int = MIN_TEST_POINTS) -> int:
    """How many configurations are on the best-model target."""
    return replay_landscape(ref, "best-model", min_test_points).on_target


def _search_tables(
    refs: dict[str, Reference],
    problem: str,
    method: str,
    budget: int,
    init: int,
    seed: int,
    min_test_points: int,
    surrogate: str,
    cost_alpha: float = COST_ALPHA,
    truth: dict[str, float] | None = None,
    optimizer: Optimizer | None = None,
) -> SearchResult:
    """The real `search.search` over the configurations every model's table holds, each
    evaluation a lookup: the one replay path of every problem."""
    models = sorted(refs)
    common = sorted(set.intersection(*(set(refs[m].admissible()) for m in models)))
    return search(
        problem=problem,
        method=method,
        space=refs[models[0]].space,
        feasible=common,
        models=models,
        evaluate=lambda model, config: refs[model].maes[config],
        budget=budget,
        init=init,
        seed=seed,
        ground_truth=truth,
        cost_alpha=cost_alpha,
        min_test_points=min_test_points,
        surrogate=surrogate,
        optimizer=optimizer,
    )


def replay_pool(jobs: int) -> Executor | None:
    """Worker processes for replays (spawned: a forked torch can deadlock); None for one job."""
    if jobs <= 1:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))
