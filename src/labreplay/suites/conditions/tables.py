"""One normalised model of a reaction-condition screening table, and the rule that builds it.

Adapters (``datasets.py``, ``importer.py``) turn a source file into `RawRow`s: the reaction
identity, one value per condition key, the raw outcome cells and where they came from. Everything
else is shared: outcome parsing (censored values such as ``≥90%``, ``trace``, ``<5``), merging of
replicate rows under a declared policy, cutting a large factorial grid into literature-sized
tables by a declared seeded rule, and a per-table QC report that accounts for every source row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from labreplay._hashing import short_hash
from labreplay._rng import make_rng
from labreplay.errors import DataError

OUTCOME_FIELDS = ("yield", "ee", "er", "dr", "rr", "conversion", "selectivity")
REPLICATE_POLICIES = ("mean", "max", "first")


@dataclass(frozen=True)
class Component:
    """A named chemical (or a plain condition value) with its SMILES when the source gives one."""

    content: str
    smiles: str = ""
    smiles_valid: bool | None = None  # None: no SMILES given; False: given but rdkit rejects it

    def to_json(self) -> dict[str, str]:
        return {"content": self.content, "SMILES": self.smiles}


@lru_cache(maxsize=65536)
def canonical_smiles(smiles: str) -> tuple[str, bool]:
    """rdkit canonical form; an invalid SMILES is kept as written and flagged, never dropped."""
    if not smiles:
        return "", False
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return smiles, False
    return Chem.MolToSmiles(mol), True


def component(content: object, smiles: object = "") -> Component:
    try:
        return _component_cached(content, smiles)
    except TypeError:  # unhashable cell
        return _component(content, smiles)


@lru_cache(maxsize=65536)
def _component_cached(content: object, smiles: object) -> Component:
    return _component(content, smiles)


def _component(content: object, smiles: object) -> Component:
    text = _clean_text(content)
    raw = _clean_text(smiles)
    if not raw:
        return Component(text)
    canon, ok = canonical_smiles(raw)
    return Component(text or canon, canon, ok)


def _clean_text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return " ".join(str(value).split())


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
class ParsedValue:
    value: float | None
    flag: str | None = None  # why the cell is not a plain number (censored, trace, missing...)
    percent: bool = False  # the cell carried its own % sign


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_RATIO = re.compile(r"^\s*(>|≥|>=)?\s*(\d+(?:\.\d+)?)\s*[:/]\s*(\d+(?:\.\d+)?)\s*$")
_ZERO_WORDS = {"trace", "traces", "nd", "n.d.", "n.d", "nr", "n.r.", "none", "0%"}


def parse_amount(raw: object) -> ParsedValue:
    """A numeric cell, possibly censored. Declared choices: a bound (``≥90%``, ``<5``, ``>99``)
    takes the bound's value; ``trace`` / ``n.d.`` count as 0. Each such cell carries a flag."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)):
        return ParsedValue(None, "missing")
    if isinstance(raw, bool):
        return ParsedValue(None, f"not a number: {raw!r}")
    if isinstance(raw, int | float):
        return ParsedValue(float(raw))
    text = str(raw).strip().lower().replace(",", ".")
    if not text:
        return ParsedValue(None, "missing")
    if text in _ZERO_WORDS:
        return ParsedValue(0.0, f"reported as {raw!r}, counted as 0")
    match = _NUMBER.search(text)
    if match is None:
        return ParsedValue(None, f"not a number: {raw!r}")
    number = float(match.group(0))
    prefix = text[: match.start()].strip()
    suffix = text[match.end() :].strip()
    if suffix not in {"", "%"}:
        return ParsedValue(None, f"not a number: {raw!r}")
    if prefix in {"≥", ">=", ">", "≤", "<=", "<", "~", "ca.", "≈"}:
        flag = f"censored {raw!r}, counted as its bound"
        return ParsedValue(number, flag, suffix == "%")
    if prefix:
        return ParsedValue(None, f"not a number: {raw!r}")
    return ParsedValue(number, None, suffix == "%")


def parse_ratio(raw: object) -> tuple[float, float] | str | None:
    """``95:5`` -> (95, 5); ``>20:1`` -> (20, 1) (bound); None when absent; a str when unreadable."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
        return None
    match = _RATIO.match(str(raw))
    if match is None:
        return f"unreadable ratio {raw!r}"
    major, minor = float(match.group(2)), float(match.group(3))
    if major + minor <= 0:
        return f"ratio with zero total {raw!r}"
    return (major, minor)


def selectivity_factor(outcome: Mapping[str, Any]) -> float:
    """METRICS.md: ee (%) -> (1 + ee/100)/2; er, dr, rr a:b -> a/(a+b); unreported -> 1."""
    factor = 1.0
    ee = outcome.get("ee")
    if isinstance(ee, int | float):
        factor *= (1.0 + float(ee) / 100.0) / 2.0
    for name in ("er", "dr", "rr"):
        ratio = outcome.get(name)
        if isinstance(ratio, list | tuple) and len(ratio) == 2:
            major, minor = float(ratio[0]), float(ratio[1])
            factor *= max(major, minor) / (major + minor)
    return factor


def utility(outcome: Mapping[str, Any]) -> float | None:
    """u = y * f_sel with y the yield fraction; None when the row has no yield."""
    y = outcome.get("yield")
    if not isinstance(y, int | float):
        return None
    return float(y) * selectivity_factor(outcome)


@dataclass
class ObservedRow:
    conditions: dict[str, str]  # key -> component label
    outcome: dict[str, Any]  # yield as fraction, ee in %, er/dr/rr as [a, b]
    utility: float
    provenance: list[dict[str, Any]]  # [{file, row}] of every source row merged here
    flags: list[str] = field(default_factory=list)


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
    qc: dict[str, Any]

    @property
    def best_utility(self) -> float:
        return max((r.utility for r in self.rows), default=0.0)

    def summary(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "dataset": self.dataset,
            "rows": len(self.rows),
            "varying_keys": list(self.varying_keys),
            "best_utility": round(self.best_utility, 6),
            "qc": self.qc,
        }


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
    max_rows: int | None = 12  # larger groups are cut into seeded chunks of at most this size
    slice_keys: tuple[str, ...] = ()  # condition keys held fixed within one table
    notes: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "condition_keys": list(self.condition_keys),
            "yield_scale": self.yield_scale,
            "yield_basis": self.yield_basis,
            "replicate_policy": self.replicate_policy,
            "max_rows": self.max_rows,
            "slice_keys": list(self.slice_keys),
            "notes": self.notes,
        }


def _parse_outcome(raw: RawRow, rule: TableRule) -> tuple[dict[str, Any], list[str]]:
    outcome: dict[str, Any] = {}
    flags: list[str] = []
    scale = 100.0 if rule.yield_scale == "percent" else 1.0
    for name in ("yield", "conversion", "selectivity", "ee"):
        if name not in raw.outcome:
            continue
        parsed = parse_amount(raw.outcome[name])
        if parsed.flag and not (parsed.flag == "missing" and name in {"ee", "selectivity"}):
            flags.append(f"{name}: {parsed.flag}")
        if parsed.value is None:
            continue
        value = parsed.value
        if name != "ee":  # a cell with its own % sign is a percent whatever the column scale
            value = value / (100.0 if parsed.percent else scale)
        outcome[name] = value
    for name in ("er", "dr", "rr"):
        if name in raw.outcome:
            ratio = parse_ratio(raw.outcome[name])
            if isinstance(ratio, str):
                flags.append(f"{name}: {ratio}")
            elif ratio is not None:
                outcome[name] = [ratio[0], ratio[1]]
    # The utility's yield: a declared basis when the source reports no yield column.
    if rule.yield_basis == "conversion" and "conversion" in outcome:
        outcome["yield"] = outcome["conversion"]
    elif rule.yield_basis == "conversion_x_selectivity" and "conversion" in outcome:
        sel = outcome.get("selectivity")
        if sel is None:
            flags.append("selectivity missing: neutral factor 1")
            sel = 1.0
        outcome["yield"] = outcome["conversion"] * sel
    y = outcome.get("yield")
    if isinstance(y, float) and (y < 0 or y > 1):
        flags.append(f"yield {y:g} outside [0, 1] kept as recorded")
    return outcome, flags


def _merge(rows: Sequence[tuple[RawRow, dict[str, Any], list[str]]], policy: str) -> ObservedRow:
    first_raw = rows[0][0]
    conditions = {k: first_raw.conditions[k].content for k in first_raw.conditions}
    provenance = [{"file": r.file, "row": r.row} for r, _, _ in rows]
    flags = [f for _, _, fl in rows for f in fl]
    outcomes = [o for _, o, _ in rows]
    if len(rows) == 1:
        merged = dict(outcomes[0])
    else:
        utilities = [utility(o) or 0.0 for o in outcomes]
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
            for name in ("yield", "ee", "conversion", "selectivity"):
                vals = [o[name] for o in outcomes if name in o]
                if vals:
                    merged[name] = sum(vals) / len(vals)
            for name in ("er", "dr", "rr"):
                ratios = [o[name] for o in outcomes if name in o]
                if ratios:  # average the major fraction, keep a:b form summing to 100
                    frac = sum(a / (a + b) for a, b in ratios) / len(ratios)
                    merged[name] = [100.0 * frac, 100.0 * (1 - frac)]
    return ObservedRow(conditions, merged, utility(merged) or 0.0, provenance, flags)


def build_tables(raw_rows: Iterable[RawRow], rule: TableRule, seed: int) -> list[ScreeningTable]:
    """Group, parse, merge replicates, cut, and QC. Every raw row ends up in exactly one
    table's QC accounting (used, merged as a replicate, or excluded with its reason)."""
    if rule.replicate_policy not in REPLICATE_POLICIES:
        raise DataError(
            f"unknown replicate policy (known: {', '.join(REPLICATE_POLICIES)})",
            record=rule.dataset,
            field="replicate_policy",
            value=rule.replicate_policy,
        )
    groups: dict[tuple[str, ...], list[RawRow]] = {}
    for raw in raw_rows:
        missing = [k for k in rule.condition_keys if k not in raw.conditions]
        if missing:
            raise DataError(
                "row lacks a declared condition key",
                file=raw.file,
                record=f"row {raw.row}",
                field=missing[0],
            )
        groups.setdefault((*raw.reaction, *raw.slice_labels), []).append(raw)
    tables: list[ScreeningTable] = []
    for group_key in sorted(groups):
        tables.extend(_tables_of_group(group_key, groups[group_key], rule, seed))
    return tables


def _tables_of_group(
    group_key: tuple[str, ...], raws: list[RawRow], rule: TableRule, seed: int
) -> list[ScreeningTable]:
    excluded: list[dict[str, Any]] = []
    by_tuple: dict[tuple[str, ...], list[tuple[RawRow, dict[str, Any], list[str]]]] = {}
    for raw in raws:
        outcome, flags = _parse_outcome(raw, rule)
        if utility(outcome) is None:
            excluded.append({"file": raw.file, "row": raw.row, "reason": "; ".join(flags)})
            continue
        label = tuple(raw.conditions[k].content for k in rule.condition_keys)
        by_tuple.setdefault(label, []).append((raw, outcome, flags))
    merged = [_merge(by_tuple[t], rule.replicate_policy) for t in sorted(by_tuple)]
    # Cut: a seeded shuffle, then near-equal chunks of at most max_rows, so no row is dropped.
    chunks: list[list[ObservedRow]] = [merged]
    cut_note = "whole group"
    if rule.max_rows is not None and len(merged) > rule.max_rows:
        order = make_rng(seed, "table-cut", rule.dataset, *group_key).permutation(len(merged))
        n_chunks = math.ceil(len(merged) / rule.max_rows)
        chunks = [[merged[i] for i in order[c::n_chunks]] for c in range(n_chunks)]
        cut_note = f"seeded shuffle into {n_chunks} chunks of <= {rule.max_rows} rows"
    first = raws[0]
    values: dict[str, dict[str, Component]] = {}
    for raw in raws:
        for key, comp in raw.conditions.items():
            values.setdefault(key, {}).setdefault(comp.content, comp)
    out = []
    for index, rows in enumerate(chunks):
        rows.sort(key=lambda r: tuple(r.conditions[k] for k in rule.condition_keys))
        varying = [k for k in rule.condition_keys if len({r.conditions[k] for r in rows}) > 1]
        constant = {
            k: values[k][rows[0].conditions[k]]
            for k in rule.condition_keys
            if k not in varying and rows
        }
        group_id = short_hash([rule.dataset, *group_key], 10)
        table_id = f"{rule.dataset}_{group_id}_{index}"
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
        qc = {
            "group": list(group_key),
            "source_rows": sum(len(r.provenance) for r in rows)
            + (len(excluded) if index == 0 else 0),
            "distinct_rows": len(rows),
            "replicate_rows_merged": sum(len(r.provenance) - 1 for r in rows),
            "replicate_conflicts": sum(
                1 for r in rows for f in r.flags if f.startswith("replicates disagree")
            ),
            "flagged_cells": sorted({f for r in rows for f in r.flags}),
            "excluded_rows": excluded if index == 0 else [],
            "invalid_smiles": invalid_smiles,
            "cut": cut_note,
            "zero_best_utility": max((r.utility for r in rows), default=0.0) <= 0.0,
        }
        out.append(
            ScreeningTable(
                table_id=table_id,
                dataset=rule.dataset,
                citation=rule.citation,
                doi=rule.doi,
                reactants=list(first.reactants),
                products=list(first.products),
                constant_conditions=constant,
                varying_keys=varying,
                values={k: values[k] for k in varying},
                rows=rows,
                qc=qc,
            )
        )
    return out
