"""The question compiler: screening tables -> RxnOptBench-layout questions, under a hashed spec.

Per table (needs >= 2 distinct observed rows with a positive best utility):
  * ``mc_single`` per varying key k: the rows sharing the most-covered observed context of the
    other varying keys (seeded tie-break); options are the distinct values of k there.
  * ``mc_all``: options are the distinct observed rows projected on all varying keys.
  * ``fib_all``: per-key candidate lists (every observed value); the legal answers ("options")
    are the observed rows, so a Hit requires the recombined tuple to be one of them.
Only informative questions are kept: one question per distinct (table, option set) -- on a
single-axis table MC_all and FIB would repeat MC_single, so only MC_single is asked -- and FIB only
where its Hit floor (legal rows / candidate combinations) is at most the declared
``fib_max_hit_floor`` (0.8): on a full grid every combination was measured and Hit says nothing.
Every question records its random floors in ``meta.random_floor``; every dropped question is
counted per dataset with its reason.
Each base question also yields a precedent pair sharing options, answer and scoring: 2-5
lower-to-mid utility rows (never the optimum) shown in one twin only, and removed from both
twins' legal answers. Option and candidate order are shuffled with the recorded seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labreplay.sdk import HASH_SCHEME_VERSION, make_rng, sha256_file, sha256_json
from labreplay.suites.conditions.tables import (
    ObservedRow,
    ScreeningTable,
    TableRule,
    TableSet,
)

PROTOCOL = "rxnoptbench-compile"
VERSION = 2
QUESTION_TYPES = ("mc_single", "mc_all", "fib_all")
PRECEDENTS_MIN, PRECEDENTS_MAX = 2, 5

QUESTION_RULES = {
    "min_distinct_rows": 2,
    "min_options": 2,
    "mc_single_context": "most-covered observed context of the other varying keys; seeded tie-break",
    "mc_all_options": "distinct observed rows projected on all varying keys",
    "fib_legal_answers": "observed rows (minus precedent rows in a precedent pair)",
    "precedents": {
        "count": [PRECEDENTS_MIN, PRECEDENTS_MAX],
        "pool": "rows with utility below the table best and at most the table's median utility",
        "removed_from": "both twins' options / legal answers",
    },
    "uninformative": "questions whose best option utility is 0 are not emitted (counted)",
    "table_slicing": "groups above max_options rows: vary the axis set putting the most rows "
    "into tables of 2..max_options rows (ties: more axes, smaller level product, declared order; "
    "on a full grid the fewest-level axes whose product fits), fix the others at each observed "
    "value; at most max_tables_per_reaction tables, a seeded choice; no random chunks",
    "distinct_option_sets": "one question per (table, option set); MC_single first, then MC_all",
    "fib_hit_floor": "FIB only where legal rows / candidate combinations <= fib_max_hit_floor",
    "utility": "objective per dataset: utility = yield x signed selectivity, yield, or "
    "selectivity (METRICS.md)",
}
SKIP_REASONS = (
    "too_few_rows",
    "uninformative",
    "single_option",
    "duplicate_option_set",
    "single_axis_table",
    "fib_hit_floor_too_high",
    "no_precedent_twin",
)


def _no_skips() -> dict[str, int]:
    return dict.fromkeys(SKIP_REASONS, 0)


def _fmt(x: float) -> float:
    return round(float(x), 6)


def _exact(x: float) -> float:
    """Scores the evaluator reads back: kept to 12 decimals so rounding never moves a metric."""
    return round(float(x), 12)


def _outcome_json(row: ObservedRow) -> dict[str, Any]:
    """Outcome as the release layout reports it: yield and ee in %, ratios as 'a:b'."""
    out: dict[str, Any] = {}
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

    def __post_init__(self) -> None:
        # JSON form of every value once; questions share these (read-only) lists.
        self._json: dict[tuple[str, str], list[dict[str, str]]] = {
            (k, label): [c.to_json()]
            for k, vals in self.table.values.items()
            for label, c in vals.items()
        }

    def comp(self, key: str, label: str) -> list[dict[str, str]]:
        return self._json[(key, label)]

    def conds(self, row: ObservedRow, keys: Sequence[str]) -> dict[str, list[dict[str, str]]]:
        return {k: self.comp(k, row.conditions[k]) for k in keys}


def _base_question(
    ctx: _Ctx,
    rng: np.random.Generator,
    qid: str,
    qtype: str,
    keys: list[str],
    rows: list[ObservedRow],
) -> dict[str, Any] | None:
    """A question over `rows` (already one per option); None if it cannot be asked."""
    table = ctx.table
    if len(rows) < 2 or max(r.utility for r in rows) <= 0:
        return None
    order = rng.permutation(len(rows))
    options = [rows[i] for i in order]
    constant = {k: [c.to_json()] for k, c in table.constant_conditions.items()}
    question: dict[str, Any] = {
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
        candidates = {}
        for k in keys:
            labels = sorted({r.conditions[k] for r in table.rows})
            perm = rng.permutation(len(labels))
            candidates[k] = [ctx.comp(k, labels[i]) for i in perm]
        question["candidates"] = candidates
    _fill_scores(ctx, question, options)
    return question


def _fill_scores(ctx: _Ctx, question: dict[str, Any], options: list[ObservedRow]) -> None:
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
            }
            for r in options
        ],
        "variant": "no_precedents",
        "twin_id": None,
        "random_floor": _floor(question, rel),
    }


def _floor(question: dict[str, Any], rel: list[float]) -> dict[str, float]:
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


def _pick_precedents(
    ctx: _Ctx, rng: np.random.Generator, option_rows: list[ObservedRow]
) -> list[ObservedRow]:
    """2-5 lower-to-mid utility rows (never the optimum), preferring rows outside the options
    (an MC_single question can then keep all its options); [] if the table has too few."""
    table = ctx.table
    utilities = sorted(r.utility for r in table.rows)
    median = utilities[(len(utilities) - 1) // 2]
    pool = [r for r in table.rows if r.utility < utilities[-1] and r.utility <= median]
    option_ids = {id(r) for r in option_rows}
    outside = [r for r in pool if id(r) not in option_ids]
    chosen_pool = outside if len(outside) >= PRECEDENTS_MIN else pool
    if len(chosen_pool) < PRECEDENTS_MIN:
        return []
    n = int(rng.integers(PRECEDENTS_MIN, min(PRECEDENTS_MAX, len(chosen_pool)) + 1))
    return [chosen_pool[i] for i in sorted(rng.choice(len(chosen_pool), size=n, replace=False))]


def _twin_with_precedents(
    ctx: _Ctx, base: dict[str, Any], precedents: list[ObservedRow]
) -> dict[str, Any]:
    """The precedent twin: the base question's options, answer and scoring, plus a block of
    reference rows with their outcomes. Nested lists are shared with the base (never mutated)."""
    references = [
        {"conditions": ctx.conds(r, ctx.table.varying_keys), "outcome": _outcome_json(r)}
        for r in precedents
    ]
    return {
        **base,
        "id": f"{base['id']}_prec",
        "input": {**base["input"], "reference_conditions": references},
        "meta": {**base["meta"], "variant": "with_precedents"},
    }


def compile_table(
    table: ScreeningTable, seed: int, source_file: str, fib_max_hit_floor: float = 0.8
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """All informative questions of one table, and counts of what was dropped and why."""
    skipped = _no_skips()
    if len(table.rows) < 2 or not table.varying_keys:
        skipped["too_few_rows"] += 1
        return [], skipped
    if table.best_utility <= 0:
        skipped["uninformative"] += 1
        return [], skipped
    ctx = _Ctx(table, seed, source_file)
    out: list[dict[str, Any]] = []
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
        if qtype != "fib_all":
            option_set = frozenset(id(r) for r in rows)
            if option_set in seen_option_sets:
                skipped["duplicate_option_set"] += 1
                continue
            seen_option_sets.add(option_set)
        rng = make_rng(seed, "question", qid)  # one recorded stream per question
        precedents = _pick_precedents(ctx, rng, rows)
        shown = {id(r) for r in precedents}
        legal = [r for r in rows if id(r) not in shown]  # a precedent row is never an answer
        if len(legal) < 2 <= len(rows):  # a small table: ask it without a precedent twin
            precedents, legal = [], list(rows)
        if qtype == "fib_all" and fib_hit_floor(table, len(legal)) > fib_max_hit_floor:
            skipped["fib_hit_floor_too_high"] += 1
            continue
        base = _base_question(ctx, rng, qid, qtype, qkeys, legal)
        if base is None:
            skipped["single_option" if len(legal) < 2 else "uninformative"] += 1
            continue
        if fixed:
            base["input"]["fixed_conditions"] = {k: ctx.comp(k, v) for k, v in fixed.items()}
        out.append(base)
        if precedents:
            base["meta"]["twin_id"] = qid
            base["meta"]["precedent_entries"] = [table.rows.index(r) for r in precedents]
            out.append(_twin_with_precedents(ctx, base, precedents))
        else:
            skipped["no_precedent_twin"] += 1
    return out, skipped


@dataclass
class CompiledSet:
    spec: dict[str, Any]
    spec_hash: str
    questions: list[dict[str, Any]]
    tables: list[dict[str, Any]]  # per-table summary + QC
    skipped: dict[str, int]
    skipped_by_dataset: dict[str, dict[str, int]] = field(default_factory=dict)
    qc: dict[str, dict[str, Any]] = field(default_factory=dict)  # dataset -> QC summary


def build_spec(rules: Sequence[TableRule], files: dict[str, str], seed: int) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "version": VERSION,
        "hash_scheme": HASH_SCHEME_VERSION,
        "seed": seed,
        "datasets": {r.dataset: r.to_json() for r in rules},
        "input_files_sha256": dict(sorted(files.items())),
        "question_rules": QUESTION_RULES,
    }


def compile_tables(
    tables_by_rule: Sequence[tuple[TableRule, list[ScreeningTable]]],
    files: dict[str, str],
    seed: int,
) -> CompiledSet:
    spec = build_spec([r for r, _ in tables_by_rule], files, seed)
    spec_hash = sha256_json(spec)
    questions: list[dict[str, Any]] = []
    summaries: list[dict[str, Any]] = []
    skipped = _no_skips()
    by_dataset: dict[str, dict[str, int]] = {}
    qc: dict[str, dict[str, Any]] = {}
    for rule, tables in tables_by_rule:
        mine = by_dataset.setdefault(rule.dataset, _no_skips())
        if isinstance(tables, TableSet):
            qc[rule.dataset] = tables.qc
        for table in tables:
            provenance_files = sorted({p["file"] for r in table.rows for p in r.provenance})
            qs, sk = compile_table(table, seed, ";".join(provenance_files), rule.fib_max_hit_floor)
            for q in qs:
                q["meta"]["spec_hash"] = spec_hash
            questions.extend(qs)
            for k, v in sk.items():
                skipped[k] += v
                mine[k] += v
            summary = table.summary()
            summary["questions"] = len(qs)
            summaries.append(summary)
    return CompiledSet(spec, spec_hash, questions, summaries, skipped, by_dataset, qc)


def compile_datasets(names: Sequence[str], data_dir: Path, seed: int = 0) -> CompiledSet:
    """Load and compile the named real datasets (see `datasets.ADAPTERS`)."""
    from labreplay.suites.conditions.datasets import ADAPTERS, load_tables

    tables_by_rule = []
    files: dict[str, str] = {}
    for name in names:
        tables = load_tables(name, data_dir, seed)
        adapter = ADAPTERS[name]
        tables_by_rule.append((adapter.rule, tables))
        for rel in adapter.files:
            files[rel] = sha256_file(data_dir / rel)
    return compile_tables(tables_by_rule, files, seed)
