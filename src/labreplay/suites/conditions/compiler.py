"""The question compiler: screening tables -> RxnOptBench-layout questions, under a hashed spec.

Per table (the rows of one fixed context, `slicing`):
  * ``mc_single`` per varying key k: the rows sharing the most-covered observed context of the
    other varying keys (seeded tie-break); options are the distinct values of k there.
  * ``mc_all``: options are the distinct observed rows projected on all varying keys.
  * ``fib_all``: per-key candidate lists (every observed value); the legal answers ("options")
    are the observed rows, so a Hit requires the recombined tuple to be one of them.

Which questions are asked (each rule counted per dataset when it drops a question):
  * FIB only where Hit means something: its Hit floor on the table's observed rows
    (observed / candidate combinations) is at most ``fib_max_hit_floor`` (0.8). On a fully
    measured grid every combination was run, so every non-Hit would be a hidden measured row.
    A non-Hit is a recombined tuple the table never ran in this context.
  * Precedent pairs: each question has a twin sharing options, answer and scoring, which also
    shows 2-5 rows of the same reaction with their outcomes: other contexts of the table,
    sibling tables (other substrates), its rows outside every table -- never an option (FIB:
    never a row of the table) -- drawn uniformly (seeded) from the closest contexts. Their
    outcomes play no part in the choice: an option's presence among them carries no
    information about its rank, so an agent that avoids (or copies) what it sees gains nothing
    by exclusion; only the chemistry the outcomes carry can help.
  * At least ``min_options`` (3) options; one question per (table,
    option set) -- MC_single first, then MC_all; on a single-axis table MC_all and FIB would
    repeat MC_single, so only MC_single is asked; no question whose best utility is 0.
Every question records its random floors in ``meta.random_floor``. Option and candidate order
are shuffled with the recorded seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import numpy as np

from labreplay.sdk import HASH_SCHEME_VERSION, make_rng, sha256_json
from labreplay.sdk.events import JsonObject
from labreplay.suites.conditions.chem import ComponentJson
from labreplay.suites.conditions.questions import Precedent, Question
from labreplay.suites.conditions.tables import (
    DatasetQc,
    ObservedRow,
    ScreeningTable,
    TableRule,
    TableSet,
    TableSummary,
)

if TYPE_CHECKING:
    from labreplay.suites.conditions.independence import AnswerShare, OptionSetRepeats, Withheld

PROTOCOL = "rxnoptbench-compile"
VERSION = 4  # 4: outcome-blind precedents (issue 36)
PRECEDENTS_MIN, PRECEDENTS_MAX = 2, 5

QUESTION_RULES: JsonObject = {
    "min_distinct_rows": 2,
    "min_options": "the dataset rule's min_options (default 3), counted after precedent removal",
    "mc_single_context": "most-covered observed context of the other varying keys; seeded tie-break",
    "mc_all_options": "distinct observed rows projected on all varying keys",
    "fib_legal_answers": "the table's observed rows (precedents come from outside the table)",
    "fib_hit_floor": "FIB only where observed rows / candidate combinations <= "
    "fib_max_hit_floor; a non-Hit is a combination the table never ran",
    "precedents": {
        "count": [PRECEDENTS_MIN, PRECEDENTS_MAX],
        "mc_pool": "rows of the same reaction outside the question's options (other contexts of "
        "the table, sibling tables, rows outside every table) in the closest contexts (fewest "
        "differing axes); a uniform seeded draw, blind to every outcome",
        "fib_pool": "as mc_pool, outside the whole table (every table row stays a legal answer)",
        "rule": "presence among the precedents carries no information about an option's rank "
        "(exclusion baseline, METRICS.md)",
    },
    "uninformative": "questions whose best option utility is 0 are not emitted (counted)",
    "answer_share_cap": "per dataset and MC type, then per dataset over its MC_single and "
    "MC_all questions pooled, no answer (the gold option's labels over the question's varying "
    "keys; base questions only) correct in more than 0.4 of the questions: the most repeated "
    "answer's questions withheld (seeded, twins with them, named in QC) until under the cap; "
    "fewer than 3 distinct answers keep none; a group with fewer than 5 questions is "
    "reported, not capped",
    "noise_floor": "excluded and counted: the best option's yield below the dataset rule's "
    "yield_floor (0.05), or best minus second-best utility below the table's pooled replicate "
    "SD (else, or when it is 0, noise_points: 2 yield points); a declared ratio response reads both relative to "
    "the dataset's largest response",
    "table_slicing": "groups above max_options rows: vary the declared --vary axes, else the "
    "axis with the most levels that some context varies (ties: catalyst/ligand > base > "
    "reagent/additive > solvent > temperature/time > other, then declared order), joined by "
    "further axes while every context fits and no row is lost; scattered rows: the axis set "
    "keeping the most rows; oversized contexts split into seeded near-equal level subsets "
    "(the context's best level in exactly one); at most max_tables_per_reaction tables, seeded",
    "distinct_option_sets": "one MC question per (table, option set); MC_single first, then MC_all",
    "option_set_repeats": "at most 20 base MC questions per (dataset, MC type, identical option "
    "set): a seeded uniform choice, blind to outcomes, before the answer-share cap; the rest "
    "withheld with their twins (counted, printed per dataset)",
    "utility": "objective per dataset: utility = yield x signed selectivity, yield, or "
    "selectivity (METRICS.md)",
}
SKIP_REASONS = (
    "too_few_rows",
    "uninformative",
    "too_few_options",
    "duplicate_option_set",
    "single_axis_table",
    "fib_hit_floor_too_high",
    "no_precedent_twin",
    "below_yield_floor",
    "within_noise",
    "precedents_leak_by_exclusion",
    "option_set_repeats",
    "answer_share_cap",
)


def _no_skips() -> dict[str, int]:
    return dict.fromkeys(SKIP_REASONS, 0)


def _fmt(x: float) -> float:
    return round(float(x), 6)


def _exact(x: float) -> float:
    """Scores the evaluator reads back: kept to 12 decimals so rounding never moves a metric."""
    return round(float(x), 12)


def _outcome_json(row: ObservedRow) -> dict[str, object]:
    """Outcome as the release layout reports it: yield and ee in %, ratios as 'a:b'."""
    out: dict[str, object] = {}
    y = row.outcome.get("yield")
    out["yield"] = None if y is None else _fmt(100.0 * y)
    out["ee"] = _fmt(row.outcome["ee"]) if "ee" in row.outcome else None
    for name in ("er", "dr", "rr"):
        ratio = row.outcome.get(name)
        out[name] = f"{ratio[0]:g}:{ratio[1]:g}" if ratio else None
    if "ddg" in row.outcome:
        out["ddg_kcal_mol"] = _fmt(row.outcome["ddg"])
    return out


@dataclass
class _Ctx:
    table: ScreeningTable
    seed: int
    source_file: str
    min_options: int = 3

    def __post_init__(self) -> None:
        # JSON form of every value once; questions share these (read-only) lists.
        self._json: dict[tuple[str, str], list[ComponentJson]] = {}
        values = self.table.all_values or self.table.values
        self._values = values
        self._reaction: tuple[_Reaction, np.ndarray] | None = None

    def reaction(self) -> tuple[_Reaction, np.ndarray]:
        """The reaction's rows and how many of this table's fixed axes each differs on (0: this
        table's rows and its split siblings), computed once per table."""
        if self._reaction is None:
            table = self.table
            found = _reaction(
                table.reaction_rows or table.rows,
                table.condition_keys or tuple(table.varying_keys),
            )
            self._reaction = (found, found.distance(table.fixed_labels))
        return self._reaction

    def comp(self, key: str, label: str) -> list[ComponentJson]:
        found = self._json.get((key, label))
        if found is None:
            values = self._values.get(key) or self.table.values[key]
            found = self._json[(key, label)] = [values[label].to_json()]
        return found

    def conds(self, row: ObservedRow, keys: Sequence[str]) -> dict[str, object]:
        return {k: self.comp(k, row.conditions[k]) for k in keys}


@dataclass
class _Reaction:
    """A reaction's rows as arrays (condition codes, utilities, positions), shared by sibling
    tables: the precedent search is a few vector operations per question."""

    rows: list[ObservedRow]
    matrix: np.ndarray  # rows x condition keys, integer codes
    index: dict[str, dict[str, int]]  # key -> label -> code
    columns: dict[str, int]  # key -> column
    utility: np.ndarray
    position: dict[int, int]  # id(row) -> row index

    def distance(self, context: Mapping[str, str]) -> np.ndarray:
        out = np.zeros(len(self.rows), dtype=np.int64)
        for k, v in context.items():
            out += self.matrix[:, self.columns[k]] != self.index[k].get(v, -1)
        return out


_REACTIONS: dict[int, _Reaction] = {}


def _reaction(pool: list[ObservedRow], keys: Sequence[str]) -> _Reaction:
    cached = _REACTIONS.get(id(pool))
    if cached is not None and cached.rows is pool and len(cached.utility) == len(pool):
        return cached
    index: dict[str, dict[str, int]] = {k: {} for k in keys}
    matrix = np.array(
        [[index[k].setdefault(r.conditions[k], len(index[k])) for k in keys] for r in pool],
        dtype=np.int64,
    ).reshape(len(pool), len(keys))
    found = _Reaction(
        pool,
        matrix,
        index,
        {k: j for j, k in enumerate(keys)},
        np.array([r.utility for r in pool], dtype=float),
        {id(r): i for i, r in enumerate(pool)},
    )
    if len(_REACTIONS) > 64:  # only sibling tables compiled one after another share an entry
        _REACTIONS.clear()
    _REACTIONS[id(pool)] = found
    return found


def _base_question(
    ctx: _Ctx,
    rng: np.random.Generator,
    qid: str,
    qtype: str,
    keys: list[str],
    rows: list[ObservedRow],
) -> Question | None:
    """A question over `rows` (already one per option); None if it cannot be asked."""
    table = ctx.table
    if len(rows) < 2 or max(r.utility for r in rows) <= 0:
        return None
    order = rng.permutation(len(rows))
    options = [rows[i] for i in order]
    constant: dict[str, object] = {k: [c.to_json()] for k, c in table.constant_conditions.items()}
    question: Question = {
        "id": qid,
        "question_type": qtype,
        "varying_keys": list(keys),
        "input": {
            "reactants": [c.to_json() for c in table.reactants],
            "products": [c.to_json() for c in table.products],
            "constant_conditions": constant,
        },
        "options": [ctx.conds(r, keys) for r in options],
        "answer": [],
        "meta": {},
    }
    if qtype == "fib_all":
        candidates: dict[str, list[object]] = {}
        for k in keys:
            labels = sorted({r.conditions[k] for r in table.rows})
            perm = rng.permutation(len(labels))
            candidates[k] = [ctx.comp(k, labels[i]) for i in perm]
        question["candidates"] = candidates
    _fill_scores(ctx, question, options)
    return question


def _fill_scores(ctx: _Ctx, question: Question, options: list[ObservedRow]) -> None:
    table = ctx.table
    utilities = [_exact(r.utility) for r in options]  # as written: the file is self-consistent
    best = max(utilities)
    rel = [_exact(u / best) for u in utilities]
    question["answer"] = [i for i, u in enumerate(utilities) if u == best]
    question["meta"] = {
        "doi": table.doi,
        "citation": table.citation,
        "dataset": table.dataset,
        "parent_table_id": table.table_id,
        "source_file": ctx.source_file,
        "main_product_smiles": next((c.smiles for c in table.products if c.smiles), ""),
        "total_entries_in_source_table": len(table.rows),
        "scores": [_outcome_json(r) for r in options],
        "yields": [_outcome_json(r)["yield"] for r in options],
        "effective_scores": utilities,
        "objective": table.objective,
        "option_relative_scores": rel,
        "option_source_entries": [
            {
                "row_index": r.provenance[0]["row"],
                "entry_idx": table.rows.index(r),
                "rxn_id": f"{table.table_id}:{table.rows.index(r)}",
                "source_rows": [p["row"] for p in r.provenance],
                # a row number means nothing without its file when the table has several
                **(
                    {
                        "file": r.provenance[0]["file"],
                        "source_row_files": [p["file"] for p in r.provenance],
                    }
                    if ";" in ctx.source_file
                    else {}
                ),
            }
            for r in options
        ],
        "variant": "no_precedents",
        "twin_id": None,
        "random_floor": _floor(question, rel),
    }


def _floor(question: Question, rel: list[float]) -> dict[str, float]:
    """The question's exact random floors (METRICS.md), recorded with it."""
    n_answer = len(question["answer"])
    if question["question_type"] != "fib_all":
        return {"accuracy": _fmt(n_answer / len(rel)), "score": _fmt(sum(rel) / len(rel))}
    space = 1
    for cands in question["candidates"].values():
        space *= len(cands)
    return {
        "hit": _fmt(len(rel) / space),
        "strict": _fmt(n_answer / space),
        "score_given_hit": _fmt(sum(rel) / len(rel)),
    }


def fib_hit_floor(table: ScreeningTable, legal: int) -> float:
    space = 1
    for k in table.varying_keys:
        space *= len({r.conditions[k] for r in table.rows})
    return legal / space


def _mc_single_rows(
    ctx: _Ctx, rng: np.random.Generator, key: str
) -> tuple[dict[str, str], list[ObservedRow]]:
    table = ctx.table
    others = [k for k in table.varying_keys if k != key]
    contexts: dict[tuple[str, ...], list[ObservedRow]] = {}
    for row in table.rows:
        contexts.setdefault(tuple(row.conditions[k] for k in others), []).append(row)
    coverage = {c: len({r.conditions[key] for r in rows}) for c, rows in contexts.items()}
    top = max(coverage.values())
    tied = sorted(c for c, n in coverage.items() if n == top)
    chosen = tied[int(rng.integers(len(tied)))]
    fixed = dict(zip(others, chosen, strict=True))
    return fixed, sorted(contexts[chosen], key=lambda r: r.conditions[key])


def _closest_precedents(
    ctx: _Ctx,
    rng: np.random.Generator,
    outside: list[ObservedRow],
    fixed: dict[str, str],
    keys: Sequence[str],
) -> list[ObservedRow]:
    """2-5 rows of the same reaction outside `outside` (the question's options, or for FIB its
    whole table) from the closest contexts (fewest axes differing from the question's fixed
    conditions), drawn without replacement with weights balanced over the question's option
    values: a row weighs the product over `keys` of 1 / (rows there sharing its value), so a
    value run often (a campaign's favourite) is shown no more often than one run once.
    Outcomes play no part, so whether an option's values appear among the precedents says
    nothing about its rank (METRICS.md, exclusion baseline); only what the precedents'
    outcomes say about the chemistry can help. [] if too few rows lie outside."""
    reaction, table_distance = ctx.reaction()
    eligible = np.ones(len(reaction.rows), dtype=bool)
    eligible[[reaction.position[id(r)] for r in outside if id(r) in reaction.position]] = False
    distance = table_distance + reaction.distance(fixed) if fixed else table_distance
    found = np.flatnonzero(eligible)
    if len(found) < PRECEDENTS_MIN:
        return []
    ranked = found[np.argsort(distance[found], kind="stable")]  # closest first, then row order
    cutoff = distance[ranked[PRECEDENTS_MIN - 1]]  # the closest distance holding enough rows
    pool = ranked[distance[ranked] <= cutoff]
    weight = np.ones(len(pool))
    for k in keys:
        codes = reaction.matrix[pool, reaction.columns[k]]
        _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
        weight /= counts[inverse]
    n = int(rng.integers(PRECEDENTS_MIN, min(PRECEDENTS_MAX, len(pool)) + 1))
    picked = rng.choice(len(pool), size=n, replace=False, p=weight / weight.sum())
    return [reaction.rows[i] for i in sorted(pool[picked])]


def _shown_keys(ctx: _Ctx, row: ObservedRow) -> list[str]:
    """A precedent's conditions as shown: the table's varying keys plus every axis on which it
    differs from the table's fixed context (a sibling table's row says where it differs)."""
    table = ctx.table
    keys = table.condition_keys or tuple(table.varying_keys)
    return [
        k
        for k in keys
        if k in table.varying_keys or row.conditions.get(k) != table.fixed_labels.get(k)
    ]


def _twin_with_precedents(ctx: _Ctx, base: Question, precedents: list[ObservedRow]) -> Question:
    """The precedent twin: the base question's options, answer and scoring, plus a block of
    reference rows with their outcomes. Nested lists are shared with the base (never mutated)."""
    references: list[Precedent] = [
        {"conditions": ctx.conds(r, _shown_keys(ctx, r)), "outcome": _outcome_json(r)}
        for r in precedents
    ]
    return {
        **base,
        "id": f"{base['id']}_prec",
        "input": {**base["input"], "reference_conditions": references},
        "meta": {**base["meta"], "variant": "with_precedents"},
    }


def _entry(table: ScreeningTable, row: ObservedRow) -> int | str:
    """A precedent's entry: its index in the table, or `reaction:N` for a sibling's row."""
    for i, r in enumerate(table.rows):
        if r is row:
            return i
    return f"reaction:{next(i for i, r in enumerate(table.reaction_rows) if r is row)}"


@dataclass(frozen=True)
class NoiseFloor:
    """A dataset's declared noise floors in utility units (METRICS.md): `yield_floor` and
    `default_noise` as fractions (x the dataset's largest response for a ratio response)."""

    yield_floor: float = 0.05
    default_noise: float = 0.02
    applies_yield_floor: bool = True  # a selectivity objective has no yield to floor


def replicate_sd(rows: Sequence[ObservedRow]) -> float | None:
    """The pooled SD of the rows' merged replicates (None when no row was replicated; a
    pooled SD of 0 says the "replicates" are copies of one record, and the declared default
    noise applies)."""
    dof = sum(len(r.provenance) - 1 for r in rows if r.replicate_sd is not None)
    if dof <= 0:
        return None
    ss = sum(
        (len(r.provenance) - 1) * r.replicate_sd**2 for r in rows if r.replicate_sd is not None
    )
    return float(np.sqrt(ss / dof))


def noise_reason(
    rows: Sequence[ObservedRow], table: ScreeningTable, floor: NoiseFloor
) -> str | None:
    """Why a question over these option rows measures noise, or None. The best yield is the
    largest yield among the options; the gap is best minus the best non-tied utility."""
    yields = [r.outcome["yield"] for r in rows if r.outcome.get("yield") is not None]
    if floor.applies_yield_floor and yields and max(yields) < floor.yield_floor:
        return "below_yield_floor"
    utilities = sorted({r.utility for r in rows}, reverse=True)
    gap = utilities[0] - utilities[1] if len(utilities) > 1 else 0.0
    noise = replicate_sd(table.rows)
    if gap < (noise if noise else floor.default_noise):  # identical "replicates": copies
        return "within_noise"
    return None


def compile_table(
    table: ScreeningTable,
    seed: int,
    source_file: str,
    fib_max_hit_floor: float = 0.8,
    min_options: int = 3,
    floor: NoiseFloor | None = None,
) -> tuple[list[Question], dict[str, int]]:
    """All informative questions of one table, and counts of what was dropped and why."""
    floor = floor or NoiseFloor()
    skipped = _no_skips()
    if len(table.rows) < 2 or not table.varying_keys:
        skipped["too_few_rows"] += 1
        return [], skipped
    if table.best_utility <= 0:
        skipped["uninformative"] += 1
        return [], skipped
    ctx = _Ctx(table, seed, source_file, min_options)
    out: list[Question] = []
    planned: list[tuple[str, str, list[str], list[ObservedRow], dict[str, str]]] = []
    for key in table.varying_keys:
        qid = f"{table.table_id}_mc_single_{key}"
        fixed, rows = _mc_single_rows(ctx, make_rng(seed, "question", qid, "context"), key)
        planned.append((qid, "mc_single", [key], rows, fixed))
    keys = list(table.varying_keys)
    if len(keys) == 1:  # MC_all and FIB would ask the MC_single question again
        skipped["single_axis_table"] += 2
    else:
        planned.append((f"{table.table_id}_mc_all", "mc_all", keys, list(table.rows), {}))
        planned.append((f"{table.table_id}_fib_all", "fib_all", keys, list(table.rows), {}))
    seen_option_sets: set[frozenset[int]] = set()
    for qid, qtype, qkeys, rows, fixed in planned:
        rng = make_rng(seed, "question", qid)  # one recorded stream per question
        if qtype == "fib_all":
            # The gate reads the observed rows before any precedent is taken out.
            if fib_hit_floor(table, len(rows)) > fib_max_hit_floor:
                skipped["fib_hit_floor_too_high"] += 1
                continue
            if len(rows) < min_options:
                skipped["too_few_options"] += 1
                continue
            # Precedents come from outside the table, so every observed row stays a legal
            # answer and avoiding a precedent's tuple gains no Hit.
            precedents = _closest_precedents(ctx, rng, list(table.rows), {}, qkeys)
            legal = rows
        else:
            if len(rows) < min_options:
                skipped["too_few_options"] += 1
                continue
            if max(r.utility for r in rows) <= 0:
                skipped["uninformative"] += 1
                continue
            option_set = frozenset(id(r) for r in rows)
            if option_set in seen_option_sets:
                skipped["duplicate_option_set"] += 1
                continue
            seen_option_sets.add(option_set)
            precedents = _closest_precedents(ctx, rng, rows, fixed, qkeys)
            legal = rows
        if max(r.utility for r in legal) > 0:
            noisy = noise_reason(legal, table, floor)
            if noisy is not None:
                skipped[noisy] += 1
                continue
        base = _base_question(ctx, rng, qid, qtype, qkeys, legal)
        if base is None:
            skipped["uninformative"] += 1
            continue
        if fixed:
            base["input"]["fixed_conditions"] = {k: ctx.comp(k, v) for k, v in fixed.items()}
        out.append(base)
        if precedents:
            base["meta"]["twin_id"] = qid
            base["meta"]["precedent_entries"] = [_entry(table, r) for r in precedents]
            base["meta"]["precedent_utilities"] = [_exact(r.utility) for r in precedents]
            out.append(_twin_with_precedents(ctx, base, precedents))
        else:
            skipped["no_precedent_twin"] += 1
    return out, skipped


class AnswerShares(TypedDict, total=False):
    """dataset -> MC type -> answer-repetition share, before and after the cap, what the cap
    withheld and the repeated option sets cut (`independence`); empty when not compiled."""

    before: dict[str, dict[str, AnswerShare]]
    after: dict[str, dict[str, AnswerShare]]
    withheld: list[Withheld]
    option_set_repeats: dict[str, OptionSetRepeats]


@dataclass
class CompiledSet:
    spec: CompileSpec
    spec_hash: str
    questions: list[Question]
    tables: list[TableSummary]  # per-table summary + QC
    skipped: dict[str, int]
    skipped_by_dataset: dict[str, dict[str, int]] = field(default_factory=dict)
    qc: dict[str, DatasetQc] = field(default_factory=dict)  # dataset -> QC summary
    sources: dict[str, str] = field(default_factory=dict)  # file read -> sha256 (not hashed)
    answer_shares: AnswerShares = field(default_factory=lambda: AnswerShares())


class CompileSpec(TypedDict):
    """What a question set was compiled from and by which rules (hashed: its spec_hash)."""

    protocol: str
    version: int
    hash_scheme: str
    seed: int
    datasets: dict[str, dict[str, Any]]  # dataset -> `TableRule.to_json`
    question_rules: JsonObject
    input_files_sha256: NotRequired[dict[str, str]]  # built-in datasets: file -> sha256
    input_rows_sha256: NotRequired[dict[str, str]]  # a user's table: dataset -> rows' sha256
    unverified_data: NotRequired[list[str]]  # --allow-modified-data: files off the manifest


def build_spec(
    rules: Sequence[TableRule],
    files: dict[str, str],
    seed: int,
    rows_sha256: dict[str, str] | None = None,
    unverified: Sequence[str] = (),
) -> CompileSpec:
    """The hashed compile spec. Built-in datasets are tied to their files' sha256; a user's
    table to the sha256 of its rows as read (`importer.rows_sha256`), so the same rows in any
    file format under any file name give the same spec."""
    spec: CompileSpec = {
        "protocol": PROTOCOL,
        "version": VERSION,
        "hash_scheme": HASH_SCHEME_VERSION,
        "seed": seed,
        "datasets": {r.dataset: r.to_json() for r in rules},
        "question_rules": QUESTION_RULES,
    }
    if files:
        spec["input_files_sha256"] = dict(sorted(files.items()))
    if rows_sha256:
        spec["input_rows_sha256"] = dict(sorted(rows_sha256.items()))
    if unverified:  # compiled with --allow-modified-data: files that differ from the manifest
        spec["unverified_data"] = sorted(unverified)
    return spec


def noise_floor(rule: TableRule, tables: Sequence[ScreeningTable]) -> NoiseFloor:
    """The dataset's floors in utility units; a ratio response reads them relative to its
    largest recorded response (a ratio has no absolute scale to call 5% of)."""
    scale = 1.0
    if rule.response == "ratio":
        scale = max((r.utility for t in tables for r in t.rows), default=0.0) or 1.0
    return NoiseFloor(
        yield_floor=rule.yield_floor * scale,
        default_noise=rule.noise_points / 100.0 * scale,
        applies_yield_floor=rule.objective != "selectivity",
    )


def compile_tables(
    tables_by_rule: Sequence[tuple[TableRule, list[ScreeningTable]]],
    files: dict[str, str],
    seed: int,
    rows_sha256: dict[str, str] | None = None,
    sources: dict[str, str] | None = None,
    unverified: Sequence[str] = (),
) -> CompiledSet:
    """Questions of every table. With `rows_sha256` (a user's table) the questions name the
    rows' hash as their source, never the file they were read from."""
    spec = build_spec([r for r, _ in tables_by_rule], files, seed, rows_sha256, unverified)
    spec_hash = sha256_json(spec)
    questions: list[Question] = []
    summaries: list[TableSummary] = []
    skipped = _no_skips()
    by_dataset: dict[str, dict[str, int]] = {}
    qc: dict[str, DatasetQc] = {}
    for rule, tables in tables_by_rule:
        mine = by_dataset.setdefault(rule.dataset, _no_skips())
        floor = noise_floor(rule, tables)
        largest = max((r.outcome.get("yield") or 0.0 for t in tables for r in t.rows), default=0.0)
        if isinstance(tables, TableSet):
            qc[rule.dataset] = tables.qc
        label = (rows_sha256 or {}).get(rule.dataset)
        for table in tables:
            if label is not None:
                source = f"rows sha256:{label}"
            else:
                source = ";".join(sorted({p["file"] for r in table.rows for p in r.provenance}))
            qs, sk = compile_table(
                table, seed, source, rule.fib_max_hit_floor, rule.min_options, floor
            )
            for q in qs:
                q["meta"]["spec_hash"] = spec_hash
                if rule.response == "ratio":
                    _as_ratio_outcomes(q)
                    _ratio_scores(q, largest)
                if unverified:  # so a run on these questions is marked UNVERIFIED too
                    q["meta"]["unverified_data"] = sorted(unverified)
            questions.extend(qs)
            for k, v in sk.items():
                skipped[k] += v
                mine[k] += v
            summary = table.summary()
            summary["questions"] = len(qs)
            summaries.append(summary)
    from labreplay.suites.conditions.independence import (
        MAX_PER_OPTION_SET,
        answer_shares,
        cap_answer_share,
        dedupe_option_sets,
    )

    questions, repeated, sets_cut = dedupe_option_sets(questions, seed)
    for ds, n in repeated.items():
        skipped["option_set_repeats"] += n
        by_dataset[ds]["option_set_repeats"] += n
    before = answer_shares(questions)
    withheld: list[Withheld] = []
    questions, capped = cap_answer_share(questions, seed, log=withheld)
    for ds, n in capped.items():
        skipped["answer_share_cap"] += n
        by_dataset[ds]["answer_share_cap"] += n
    questions = _withhold_leaking_twins(questions, seed, skipped, by_dataset)
    shares: AnswerShares = {
        "before": before,
        "after": answer_shares(questions),
        "withheld": withheld,
        "option_set_repeats": {
            ds: {"max_per_set": MAX_PER_OPTION_SET, "sets_cut": sets_cut[ds], "withheld": n}
            for ds, n in sorted(repeated.items())
        },
    }
    return CompiledSet(
        spec,
        spec_hash,
        questions,
        summaries,
        skipped,
        by_dataset,
        qc,
        dict(sources or files),
        shares,
    )


def _as_ratio_outcomes(question: Question) -> None:
    """A declared ratio response is never shown to an agent as a yield: each precedent's
    outcome becomes ``response_ratio`` (the recorded ratio) with no yield."""
    for ref in question["input"].get("reference_conditions", []):
        y = ref["outcome"].get("yield")
        ref["outcome"] = {
            **ref["outcome"],
            "yield": None,
            "response_ratio": _fmt(y / 100.0) if isinstance(y, int | float) else None,
        }


def _ratio_scores(question: Question, largest: float) -> None:
    """A declared ratio response in the options' release-layout `scores`: `response_ratio` is
    the recorded value and `yield` the response relative to the dataset's largest, in % (a
    ratio or an area is not bounded by 100%; read as a yield it would be clipped there and
    every option would tie in the yield-only audit). Relative scores are unchanged. New
    lists: a precedent twin shares its base's."""
    meta = question["meta"]
    scale = 100.0 / largest if largest > 0 else 0.0
    listed = meta["scores"]
    assert isinstance(listed, list)  # `_fill_scores` wrote one outcome per option
    scores = [
        {
            **s,
            "yield": None if s.get("yield") is None else _fmt(s["yield"] / 100.0 * scale),
            "response_ratio": None if s.get("yield") is None else _fmt(s["yield"] / 100.0),
        }
        for s in listed
    ]
    question["meta"] = {**meta, "scores": scores, "yields": [s["yield"] for s in scores]}


def _withhold_leaking_twins(
    questions: list[Question],
    seed: int,
    skipped: dict[str, int],
    by_dataset: dict[str, dict[str, int]],
) -> list[Question]:
    """The QC gate behind every precedent lift: where the exclusion baseline's lift on a
    headline metric (MC score, FIB Strict) of a dataset excludes 0, that dataset's precedent
    twins of that family are withheld (counted). Outcome-blind precedents can still carry
    information by their presence when the data's own design does (a campaign that ran its
    favourite conditions everywhere); such twins would measure exclusion, not chemistry."""
    from labreplay.suites.conditions.precedent_audit import HEADLINE_METRICS, reference_lifts

    lifts = reference_lifts(questions, seed).get("exclusion", {})
    leaking = {
        (ds, metric.split(".")[0])
        for ds, per in lifts.items()
        if ds != "all"
        for metric, lift in per.items()
        if metric in HEADLINE_METRICS and lift["contains_zero"] is False
    }
    if not leaking:
        return questions
    withheld: set[str] = set()
    for q in questions:
        meta = q["meta"]
        family = "fib" if q["question_type"] == "fib_all" else "mc"
        if meta.get("variant") == "with_precedents" and (meta["dataset"], family) in leaking:
            withheld.add(str(meta["twin_id"]))
            skipped["precedents_leak_by_exclusion"] += 1
            by_dataset[str(meta["dataset"])]["precedents_leak_by_exclusion"] += 1
    out = []
    for q in questions:
        meta = q["meta"]
        if meta.get("twin_id") in withheld:
            if meta.get("variant") == "with_precedents":
                continue
            q["meta"] = {
                k: v
                for k, v in meta.items()
                if k not in {"precedent_entries", "precedent_utilities"}
            }
            q["meta"]["twin_id"] = None
            q["meta"]["twin_withheld"] = "precedents_leak_by_exclusion"  # counted on boards
        out.append(q)
    return out


def compile_datasets(
    names: Sequence[str],
    data_dir: Path,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    allow_modified_data: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CompiledSet:
    """Load and compile the named real datasets (see `datasets.ADAPTERS`); `overrides` replaces
    fields of every dataset's `TableRule` (e.g. max_options, min_options, fib_max_hit_floor).
    `progress` is told, one line at a time, which dataset is being loaded.

    Every file is checked against the manifest before it is read (as campaign compile does): a
    modified file is refused unless `allow_modified_data`, and then the spec (hence every
    question's spec hash) records the modified files under ``unverified_data``."""
    from labreplay.sdk.data import checked_digests
    from labreplay.suites.conditions.datasets import ADAPTERS, load_tables

    tables_by_rule = []
    files: dict[str, str] = {}
    modified: list[str] = []
    for i, name in enumerate(names, 1):
        if progress is not None:
            progress(f"compile: loading {name} ({i} of {len(names)})")
        adapter = ADAPTERS.get(name)
        if adapter is not None:
            digests, changed = checked_digests(data_dir, adapter.files, allow_modified_data)
            files.update(digests)
            modified.extend(changed)
        rule = replace(adapter.rule, **(overrides or {})) if adapter else None
        tables = load_tables(name, data_dir, seed, rule)
        assert adapter is not None and rule is not None  # load_tables refuses unknown names
        tables_by_rule.append((rule, tables))
    if progress is not None:
        progress(
            f"compile: building questions from {sum(len(t) for _, t in tables_by_rule)} tables"
        )
    compiled = compile_tables(tables_by_rule, files, seed, unverified=sorted(set(modified)))
    return compiled
