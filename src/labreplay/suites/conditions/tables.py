"""One normalised model of a reaction-condition screening table, and the rule that builds it.

Adapters (``datasets.py``, ``importer.py``) turn a source file into `RawRow`s: the reaction
identity, one value per condition key, the raw outcome cells and where they came from. Everything
else is shared: outcome parsing and range QC (`outcomes`), merging of replicate rows under a
declared policy, cutting a large factorial grid into literature-sized tables by a declared rule
(`slicing`), and a QC report that accounts for every source row.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from labreplay.errors import DataError
from labreplay.sdk import short_hash
from labreplay.suites.conditions.chem import Component, component
from labreplay.suites.conditions.outcomes import (
    FRACTION_FIELDS,
    OBJECTIVES,
    ParsedOutcome,
    ee_from_ddg,
    parse_outcome,
    scale_mismatch,
    utility,
)
from labreplay.suites.conditions.slicing import OUTSIDE_CAP, OptionSubset, slice_group

__all__ = [
    "ObservedRow",
    "RawRow",
    "ScreeningTable",
    "TableRule",
    "TableSet",
    "build_tables",
]

REPLICATE_POLICIES = ("mean", "max", "first")
RESPONSES = ("yield", "ratio")
# A response column named like one of these is a relative signal, not a yield: refused as a
# yield unless the table declares `response="ratio"` (MALDI product/standard ratios read as
# percent yields made most of a dataset's questions noise).
_NON_YIELD_NAME = re.compile(
    r"ratio|area|intensit|signal|\bauc\b|abundance|/\s*i\.?s\b|istd|"
    r"internal[ _-]?standard|maldi",
    re.IGNORECASE,
)
MERGE_BY = ("smiles", "name")


@dataclass(frozen=True)
class RawRow:
    """One source row before normalisation."""

    reaction: tuple[str, ...]  # identity labels, in the adapter's declared order
    conditions: Mapping[str, Component]
    outcome: Mapping[str, object]  # raw cells keyed by OUTCOME_FIELDS
    file: str
    row: int
    reactants: tuple[Component, ...] = ()
    products: tuple[Component, ...] = ()
    slice_labels: tuple[str, ...] = ()


@dataclass
class ObservedRow:
    conditions: dict[str, str]  # key -> component label
    outcome: dict[str, Any]  # yield as fraction, ee in %, er/dr/rr as [a, b]
    utility: float
    provenance: list[dict[str, Any]]  # [{file, row}] of every source row merged here
    flags: list[str] = field(default_factory=list)
    # sample SD of the merged replicates' utilities (None for a single measurement): the
    # table's replicate noise, which decides when two options are indistinguishable
    replicate_sd: float | None = None


class ExcludedRow(TypedDict):
    """A source row no table uses, and why (`_exclusion_reason`)."""

    file: str
    row: int
    reason: str


class TableQc(TypedDict):
    """One table's QC record (`_tables_of_group`), listed with it in the compile spec."""

    group: list[str]
    source_rows: int
    distinct_rows: int
    replicate_rows_merged: int
    replicate_conflicts: int
    flagged_cells: list[str]
    excluded_rows: list[ExcludedRow]  # the group's, on its first table only
    invalid_smiles: list[str]
    cut: str
    varied_by_cut: list[str]
    fixed_by_slice: dict[str, str]
    option_subset: OptionSubset | None
    zero_best_utility: bool


class DatasetQc(TypedDict):
    """One dataset's QC summary (`build_tables`): every row read is used, merged as a
    replicate, excluded (by reason) or outside every table (by reason)."""

    rows_read: int
    rows_excluded: dict[str, int]  # reason -> rows
    clipped_negative: int
    out_of_range_flagged: int
    replicate_rows_merged: int
    rows_outside_tables: int
    rows_outside_by_reason: dict[str, int]
    groups: int
    tables: int
    tables_capped: int
    invalid_smiles: int
    options_merged_by_structure: int
    warnings: list[str]
    axis_rule: NotRequired[list[str]]  # a user's table: what it varies and why (`importer`)


class TableSummary(TypedDict):
    """One table as the compile spec lists it (`ScreeningTable.summary`)."""

    table_id: str
    dataset: str
    rows: int
    varying_keys: list[str]
    fixed: dict[str, str]
    best_utility: float
    qc: TableQc
    questions: NotRequired[int]  # set by the compiler


@dataclass
class ScreeningTable:
    table_id: str
    dataset: str
    citation: str
    doi: str
    reactants: list[Component]
    products: list[Component]
    constant_conditions: dict[str, Component]
    varying_keys: list[str]
    values: dict[str, dict[str, Component]]  # key -> label -> component (SMILES lookup)
    rows: list[ObservedRow]
    qc: TableQc
    objective: str = "utility"
    # Every distinct row of the same reaction (this table's, sibling tables', rows outside every
    # table), shared between sibling tables: where precedents outside a question's options come
    # from. `all_values` resolves any of their labels; `fixed_labels` is this table's context.
    reaction_rows: list[ObservedRow] = field(default_factory=list)
    all_values: dict[str, dict[str, Component]] = field(default_factory=dict)
    fixed_labels: dict[str, str] = field(default_factory=dict)
    condition_keys: tuple[str, ...] = ()

    @property
    def best_utility(self) -> float:
        return max((r.utility for r in self.rows), default=0.0)

    def summary(self) -> TableSummary:
        return {
            "table_id": self.table_id,
            "dataset": self.dataset,
            "rows": len(self.rows),
            "varying_keys": list(self.varying_keys),
            "fixed": dict(self.fixed_labels),
            "best_utility": round(self.best_utility, 6),
            "qc": self.qc,
        }


class TableSet(list[ScreeningTable]):
    """The tables of one dataset, with the dataset-level QC summary (rows read, excluded...)."""

    qc: DatasetQc


@dataclass(frozen=True)
class TableRule:
    """How a dataset's rows become tables; recorded verbatim in the compile spec."""

    dataset: str
    citation: str
    doi: str
    condition_keys: tuple[str, ...]
    yield_scale: str = "percent"  # percent | fraction
    yield_basis: str = "yield"  # yield | conversion | conversion_x_selectivity
    replicate_policy: str = "mean"
    max_options: int | None = 12  # larger groups are sliced (see `slicing`)
    max_tables: int | None = 10  # per reaction group, seeded choice when more
    min_options: int = 3  # an MC question needs this many options (after precedent removal)
    vary_keys: tuple[str, ...] = ()  # declared varied axes (default: the screened axis)
    merge_by: str = "smiles"  # option identity: canonical SMILES where given, or the name
    force_scale: bool = False  # keep the declared yield scale against the values (QC warning)
    slice_keys: tuple[str, ...] = ()  # condition keys held fixed within one table (declared)
    objective: str = "utility"  # utility | yield | selectivity
    temperature_k: float | None = None  # for a ΔΔG‡ outcome
    allow_out_of_range: bool = False  # yields > 100% / |ee| > 100 kept (clipped, flagged)
    fib_max_hit_floor: float = 0.8  # FIB only where observed / candidate tuples <= this
    constant_conditions: tuple[tuple[str, str], ...] = ()  # declared, shown in every prompt
    yield_column: str = "yield"  # the source column name, for messages
    notes: str = ""
    # Noise floors (METRICS.md): a question whose best yield is below `yield_floor`, or whose
    # best and second-best utilities differ by less than the table's replicate SD (else
    # `noise_points` yield points), is excluded and counted.
    yield_floor: float = 0.05
    noise_points: float = 2.0
    # `yield`: the response column is a yield (or a declared yield basis); `ratio`: a relative
    # response (product/internal-standard ratio, peak area) declared as such: ranked as given,
    # its floors read relative to the dataset's largest response. An undeclared column named
    # like a ratio or an area is refused as a yield.
    response: str = "yield"
    # A user's table: axis -> species | process | additive (chem.axis_kind or --axis-kind),
    # which selects the informative default axes (slicing.INFORMATIVE_RULE). Empty: the
    # built-in datasets' rule (most levels first).
    axis_kinds: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "condition_keys": list(self.condition_keys),
            "yield_scale": self.yield_scale,
            "yield_basis": self.yield_basis,
            "replicate_policy": self.replicate_policy,
            "max_options": self.max_options,
            "max_tables_per_reaction": self.max_tables,
            "min_options": self.min_options,
            "vary_keys": list(self.vary_keys),
            "merge_by": self.merge_by,
            "force_scale": self.force_scale,
            "slice_keys": list(self.slice_keys),
            "objective": self.objective,
            "temperature_k": self.temperature_k,
            "allow_out_of_range": self.allow_out_of_range,
            "fib_max_hit_floor": self.fib_max_hit_floor,
            "constant_conditions": dict(self.constant_conditions),
            "notes": self.notes,
            "yield_floor": self.yield_floor,
            "noise_points": self.noise_points,
            "response": self.response,
        } | ({"axis_kinds": dict(self.axis_kinds)} if self.axis_kinds else {})


def _merge(
    rows: Sequence[tuple[RawRow, ParsedOutcome]],
    policy: str,
    objective: str,
    labels: dict[str, str],
    temperature_k: float | None = None,
) -> ObservedRow:
    conditions = dict(labels)
    provenance = [{"file": r.file, "row": r.row} for r, _ in rows]
    flags = [f for _, p in rows for f in p.flags]
    outcomes = [p.outcome for _, p in rows]
    replicate_sd = None
    if len(rows) == 1:
        merged = dict(outcomes[0])
    else:
        utilities = [utility(o, objective) or 0.0 for o in outcomes]
        mean_u = sum(utilities) / len(utilities)
        replicate_sd = math.sqrt(sum((u - mean_u) ** 2 for u in utilities) / (len(utilities) - 1))
        if len({round(u, 9) for u in utilities}) > 1:
            flags.append(
                f"replicates disagree (utilities {', '.join(f'{u:.3f}' for u in utilities)}); "
                f"policy {policy}"
            )
        if policy == "max":
            merged = dict(outcomes[utilities.index(max(utilities))])
        elif policy == "first":
            merged = dict(outcomes[0])
        else:
            merged = {}
            for name in ("yield", "ee", "ddg", "conversion", "selectivity"):
                vals = [o[name] for o in outcomes if name in o]
                if vals:
                    merged[name] = sum(vals) / len(vals)
            if "ddg" in merged and temperature_k is not None:
                # ΔΔG‡ replicates average in ΔΔG‡ (the measured quantity), then convert: the
                # mean of two ee values is not the ee of the mean barrier difference.
                merged["ee"] = ee_from_ddg(merged["ddg"], temperature_k)
            for name in ("er", "dr", "rr"):
                ratios = [o[name] for o in outcomes if name in o]
                if ratios:  # average the desired fraction, keep a:b form summing to 100
                    frac = sum(a / (a + b) for a, b in ratios) / len(ratios)
                    merged[name] = [100.0 * frac, 100.0 * (1 - frac)]
    return ObservedRow(
        conditions, merged, utility(merged, objective) or 0.0, provenance, flags, replicate_sd
    )


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _exclusion_reason(flags: list[str], objective: str) -> str:
    """A countable reason (cell values elided) why a row has no value for the objective."""
    if not flags:
        return f"no value for objective {objective!r}"
    return _QUOTED.sub("…", flags[0])


def _check_rule(rule: TableRule) -> None:
    checks = (
        ("replicate_policy", rule.replicate_policy, REPLICATE_POLICIES),
        ("objective", rule.objective, OBJECTIVES),
        ("yield_scale", rule.yield_scale, ("percent", "fraction")),
        ("response", rule.response, RESPONSES),
        ("merge_by", rule.merge_by, MERGE_BY),
    )
    for name, value, known in checks:
        if value not in known:
            raise DataError(
                f"unknown {name} (known: {', '.join(known)})",
                record=rule.dataset,
                field=name,
                value=value,
            )
    if rule.response == "yield" and _NON_YIELD_NAME.search(rule.yield_column):
        raise DataError(
            "the yield column is named like a relative response (a ratio, area or signal), "
            "not a yield; declare the response as 'ratio' (--response ratio) to rank by it",
            record=rule.dataset,
            field="yield_column",
            value=rule.yield_column,
        )


def _response_fields(rule: TableRule) -> tuple[str, ...]:
    """The outcome fields holding the response: the yield, or the declared yield basis."""
    return ("yield",) if rule.yield_basis == "yield" else ("yield", "conversion")


def _parse_all(
    raw_rows: Iterable[RawRow], rule: TableRule, warnings: list[str]
) -> tuple[list[tuple[RawRow, ParsedOutcome]], int]:
    """Parse every row, then refuse the file on a scale mismatch or an out-of-range value."""
    parsed: list[tuple[RawRow, ParsedOutcome]] = []
    samples: dict[str, list[float]] = {}
    first_problem: tuple[RawRow, str] | None = None
    n_problems = 0
    for raw in raw_rows:
        missing = [k for k in rule.condition_keys if k not in raw.conditions]
        if missing:
            raise DataError(
                "row lacks a declared condition key",
                file=raw.file,
                record=f"row {raw.row}",
                field=missing[0],
            )
        p = parse_outcome(
            raw.outcome,
            yield_scale=rule.yield_scale,
            yield_basis=rule.yield_basis,
            temperature_k=rule.temperature_k,
            unbounded=_response_fields(rule) if rule.response == "ratio" else (),
        )
        for name, value in p.scale_samples:
            samples.setdefault(name, []).append(value)
        if p.out_of_range:
            n_problems += 1
            first_problem = first_problem or (raw, p.out_of_range[0])
        parsed.append((raw, p))
    fix = "fraction" if rule.yield_scale == "percent" else "percent"
    for name in FRACTION_FIELDS:
        if rule.response == "ratio" and name in _response_fields(rule):
            continue  # a ratio has no percent/fraction scale to mismatch
        why = scale_mismatch(samples.get(name, []), rule.yield_scale)
        if why:
            column = rule.yield_column if name in {"yield", rule.yield_basis} else name
            if rule.force_scale:
                warnings.append(
                    f"{name} column {column!r} {why}; kept as {rule.yield_scale} (--force-scale)"
                )
                continue
            raise DataError(
                f"{name} column {why}; rerun with --yield-scale {fix} (or add --force-scale "
                "if the values really are on the declared scale)",
                file=parsed[0][0].file if parsed else None,
                field=column,
            )
    if first_problem and not rule.allow_out_of_range:
        raw, what = first_problem
        raise DataError(
            f"{what} ({n_problems} row(s) out of range); correct the table or pass "
            "--allow-out-of-range to keep them clipped and flagged",
            file=raw.file,
            record=f"row {raw.row}",
        )
    return parsed, n_problems


def _identities(
    parsed: Sequence[tuple[RawRow, ParsedOutcome]], rule: TableRule
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Component]]]:
    """Option identity per condition key: name -> identity, identity -> display component.

    With ``merge_by='smiles'`` a value with a valid SMILES is identified by its canonical
    SMILES: two names for one structure are one option (the most frequent name shown, the
    others as aliases), a name without SMILES in some rows joins the one structure that name
    has elsewhere, and one name given two structures is refused naming both rows. With
    ``merge_by='name'`` the name is the identity, as written.
    """
    by_name: dict[str, dict[str, str]] = {}
    first_row: dict[tuple[str, str, str], RawRow] = {}
    for raw, _ in parsed:
        for key, comp in raw.conditions.items():
            if rule.merge_by != "smiles" or not (comp.smiles and comp.smiles_valid):
                continue
            known = by_name.setdefault(key, {})
            seen = known.setdefault(comp.content, comp.smiles)
            first_row.setdefault((key, comp.content, comp.smiles), raw)
            if seen != comp.smiles:
                other = first_row[(key, comp.content, seen)]
                raise DataError(
                    f"name {comp.content!r} is given two structures: row {other.row} "
                    f"{seen!r} and row {raw.row} {comp.smiles!r}; name each structure "
                    "apart, or pass --merge-by name to identify options by name",
                    file=raw.file,
                    record=f"rows {other.row} and {raw.row}",
                    field=key,
                )
    names: dict[str, dict[str, Counter[str]]] = {}
    picked: dict[str, dict[str, Component]] = {}
    for raw, _ in parsed:
        for key, comp in raw.conditions.items():
            ident = _identity(comp, by_name.get(key, {}))
            names.setdefault(key, {}).setdefault(ident, Counter())[comp.content] += 1
            chosen = picked.setdefault(key, {})
            if ident not in chosen or (comp.smiles and not chosen[ident].smiles):
                chosen[ident] = comp
    display: dict[str, dict[str, Component]] = {}
    for key, idents in names.items():
        for ident, counts in idents.items():
            ranked = sorted(counts, key=lambda n: (-counts[n], n))
            comp = picked[key][ident]
            display.setdefault(key, {})[ident] = Component(
                ranked[0], comp.smiles, comp.smiles_valid, tuple(sorted(ranked[1:]))
            )
    return by_name, display


def _identity(comp: Component, smiles_of_name: Mapping[str, str]) -> str:
    if comp.smiles and comp.smiles_valid and smiles_of_name:
        return comp.smiles
    return smiles_of_name.get(comp.content, comp.content)


def build_tables(raw_rows: Iterable[RawRow], rule: TableRule, seed: int) -> TableSet:
    """Parse, QC, group, merge replicates, slice. Every raw row ends up in the dataset QC:
    used, merged as a replicate, excluded (with its reason) or outside every table (with its
    reason)."""
    _check_rule(rule)
    warnings: list[str] = []
    parsed, n_out_of_range = _parse_all(raw_rows, rule, warnings)
    by_name, display = _identities(parsed, rule)

    def labels(raw: RawRow) -> dict[str, str]:
        return {k: _identity(c, by_name.get(k, {})) for k, c in raw.conditions.items()}

    groups: dict[tuple[str, ...], list[tuple[RawRow, ParsedOutcome, dict[str, str]]]] = {}
    for raw, p in parsed:
        lab = labels(raw)
        key = (*raw.reaction, *(lab[k] for k in rule.slice_keys))
        groups.setdefault(key, []).append((raw, p, lab))
    tables = TableSet()
    qc: DatasetQc = {
        "rows_read": len(parsed),
        "rows_excluded": Counter[str](),
        "clipped_negative": sum(p.clipped_negative for _, p in parsed),
        "out_of_range_flagged": n_out_of_range,
        "replicate_rows_merged": 0,
        "rows_outside_tables": 0,
        "rows_outside_by_reason": Counter[str](),
        "groups": len(groups),
        "tables": 0,
        "tables_capped": 0,
        "invalid_smiles": 0,
        "options_merged_by_structure": sum(
            1 for vals in display.values() for c in vals.values() if c.aliases
        ),
        "warnings": warnings,
    }
    by_reaction: dict[tuple[str, ...], list[ObservedRow]] = {}
    for group_key in sorted(groups):
        items = groups[group_key]
        shared = by_reaction.setdefault(tuple(items[0][0].reaction), [])
        tables.extend(_tables_of_group(group_key, items, rule, seed, qc, display, shared))
    qc["tables"] = len(tables)
    capped_rows = qc["rows_outside_by_reason"].get(OUTSIDE_CAP, 0)
    if qc["tables_capped"] and capped_rows:
        n_tables = len(tables) + qc["tables_capped"]
        share = 100.0 * capped_rows / max(qc["rows_read"], 1)
        warnings.append(
            f"the per-reaction table cap (max_tables {rule.max_tables}) left out "
            f"{qc['tables_capped']} of {n_tables} tables: {capped_rows} of {qc['rows_read']} "
            f"rows ({share:.0f}%) are in no question; raise --max-tables to keep them"
        )
    qc["rows_excluded"] = dict(sorted(qc["rows_excluded"].items()))
    qc["rows_outside_by_reason"] = dict(sorted(qc["rows_outside_by_reason"].items()))
    tables.qc = qc
    return tables


def _tables_of_group(
    group_key: tuple[str, ...],
    items: list[tuple[RawRow, ParsedOutcome, dict[str, str]]],
    rule: TableRule,
    seed: int,
    qc: DatasetQc,
    display: dict[str, dict[str, Component]],
    reaction_rows: list[ObservedRow],
) -> list[ScreeningTable]:
    excluded: list[ExcludedRow] = []
    by_tuple: dict[tuple[str, ...], list[tuple[RawRow, ParsedOutcome]]] = {}
    tuple_labels: dict[tuple[str, ...], dict[str, str]] = {}
    for raw, p, lab in items:
        if utility(p.outcome, rule.objective) is None:
            reason = _exclusion_reason(p.flags, rule.objective)
            excluded.append({"file": raw.file, "row": raw.row, "reason": reason})
            qc["rows_excluded"][reason] += 1
            continue
        label = tuple(lab[k] for k in rule.condition_keys)
        by_tuple.setdefault(label, []).append((raw, p))
        tuple_labels.setdefault(label, lab)
    merged = [
        _merge(
            by_tuple[t], rule.replicate_policy, rule.objective, tuple_labels[t], rule.temperature_k
        )
        for t in sorted(by_tuple)
    ]
    reaction_rows.extend(merged)
    qc["replicate_rows_merged"] += sum(len(r.provenance) - 1 for r in merged)
    cut = slice_group(
        merged,
        rule.condition_keys,
        rule.max_options,
        rule.max_tables,
        seed,
        rule.dataset,
        *group_key,
        min_rows=rule.min_options,
        vary=rule.vary_keys,
        kinds=dict(rule.axis_kinds) if rule.axis_kinds else None,
    )
    in_table = {i for piece in cut.slices for i in piece.rows}
    qc["rows_outside_tables"] += sum(
        len(r.provenance) for i, r in enumerate(merged) if i not in in_table
    )
    for reason, members in cut.outside_rows.items():  # source rows, replicates included
        qc["rows_outside_by_reason"][reason] += sum(len(merged[i].provenance) for i in members)
    qc["tables_capped"] += cut.tables_capped
    first = items[0][0]
    values = display
    declared = {k: component(v) for k, v in rule.constant_conditions}
    group_id = short_hash([rule.dataset, *group_key], 10)
    out = []
    for index, piece in enumerate(cut.slices):
        if not piece.rows:  # every row of the group was excluded (counted above)
            continue
        rows = sorted(
            (merged[i] for i in piece.rows),
            key=lambda r: tuple(r.conditions[k] for k in rule.condition_keys),
        )
        varying = [k for k in rule.condition_keys if len({r.conditions[k] for r in rows}) > 1]
        fixed_labels = {k: rows[0].conditions[k] for k in rule.condition_keys if k not in varying}
        constant = {**declared}
        constant.update({k: values[k][v] for k, v in fixed_labels.items()})
        invalid_smiles = sorted(
            {
                c.smiles
                for c in (*first.reactants, *first.products, *constant.values())
                if c.smiles_valid is False
            }
            | {
                values[k][r.conditions[k]].smiles
                for r in rows
                for k in varying
                if values[k][r.conditions[k]].smiles_valid is False
            }
        )
        qc["invalid_smiles"] += len(invalid_smiles)
        table_qc: TableQc = {
            "group": list(group_key),
            "source_rows": sum(len(r.provenance) for r in rows),
            "distinct_rows": len(rows),
            "replicate_rows_merged": sum(len(r.provenance) - 1 for r in rows),
            "replicate_conflicts": sum(
                1 for r in rows for f in r.flags if f.startswith("replicates disagree")
            ),
            "flagged_cells": sorted({f for r in rows for f in r.flags}),
            "excluded_rows": excluded if index == 0 else [],
            "invalid_smiles": invalid_smiles,
            "cut": cut.note,
            "varied_by_cut": list(cut.varied),
            "fixed_by_slice": piece.fixed,
            "option_subset": piece.subset,
            "zero_best_utility": max((r.utility for r in rows), default=0.0) <= 0.0,
        }
        out.append(
            ScreeningTable(
                table_id=f"{rule.dataset}_{group_id}_{index}",
                dataset=rule.dataset,
                citation=rule.citation,
                doi=rule.doi,
                reactants=list(first.reactants),
                products=list(first.products),
                constant_conditions=constant,
                varying_keys=varying,
                values={k: values[k] for k in varying},
                rows=rows,
                qc=table_qc,
                objective=rule.objective,
                reaction_rows=reaction_rows,
                all_values=values,
                fixed_labels=fixed_labels,
                condition_keys=tuple(rule.condition_keys),
            )
        )
    return out
