"""Any lab's own screening table (CSV or XLSX) -> tables -> questions, without writing code.

The user declares which columns identify the reaction, which are condition axes (optionally
mapped onto the RxnOptBench condition roles), which hold outcomes, which hold SMILES, and any
conditions constant for the whole table. Every reaction (distinct values of the identity
columns, and of ``slice_cols``) is one group; a group larger than ``max_options`` rows is cut
into literature-sized tables by the declared rule in `slicing`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.errors import DataError
from labreplay.sdk import MAX_INPUT_BYTES, readable_file, sha256_file, sha256_json
from labreplay.suites.conditions.chem import (
    AXIS_KINDS,
    ROLES,
    Component,
    axis_kind,
    canonical_smiles,
    clean_text,
)
from labreplay.suites.conditions.compiler import CompiledSet, compile_tables
from labreplay.suites.conditions.outcomes import OBJECTIVES
from labreplay.suites.conditions.slicing import INFORMATIVE_RULE
from labreplay.suites.conditions.tables import RESPONSES, RawRow, TableRule, build_tables

if TYPE_CHECKING:
    import pandas as pd


def _read_frame(path: Path) -> pd.DataFrame:
    import pandas as pd

    readable_file(path, "table file", MAX_INPUT_BYTES)  # pandas reads it whole
    suffix = path.suffix.lower()
    try:
        if suffix in {".xlsx", ".xlsm"}:
            from labreplay.suites.conditions.readers import _xlsx

            return _xlsx(path)
        if suffix in {".csv", ".tsv", ".txt"}:
            sep = "\t" if suffix == ".tsv" else ","
            return pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise DataError(f"unreadable table: {exc}", file=str(path)) from exc
    raise DataError(
        "unsupported table format (use .csv, .tsv or .xlsx)", file=str(path), value=suffix
    )


@dataclass
class ImportOptions:
    """Everything a user declares about their table (the CLI flags, one to one)."""

    reaction_cols: Sequence[str]
    condition_cols: Sequence[str]
    yield_col: str | None = None
    ee_col: str | None = None
    dr_col: str | None = None
    er_col: str | None = None
    rr_col: str | None = None
    ddg_col: str | None = None
    temperature_k: float | None = None
    objective: str | None = None  # default: utility with a yield column, else selectivity
    yield_scale: str = "percent"
    # what --yield-col holds: "yield", or "ratio" (a relative response: product/internal-
    # standard ratio, peak area), ranked as recorded with floors relative to its largest value
    response: str = "yield"
    smiles_cols: Mapping[str, str] = field(default_factory=dict)  # name col -> SMILES col
    product_col: str | None = None
    constants: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, str] = field(default_factory=dict)  # condition col -> role
    slice_cols: Sequence[str] = ()
    replicate_policy: str = "mean"
    max_options: int | None = 12
    max_tables: int | None = 10
    min_options: int = 3
    vary_cols: Sequence[str] = ()  # condition columns to vary (default: INFORMATIVE_RULE)
    axis_kinds: Mapping[str, str] = field(default_factory=dict)  # col -> species|process|additive
    merge_by: str = "smiles"  # smiles | name: option identity where SMILES are given
    force_scale: bool = False
    fib_max_hit_floor: float = 0.8
    allow_out_of_range: bool = False
    seed: int = 0
    dataset: str | None = None  # --name; default: derived from the rows' content hash


def _fail(message: str, path: Path, field_name: str | None = None, value: object = None) -> None:
    raise DataError(message, file=str(path), field=field_name, value=value)


def _check(path: Path, columns: Sequence[str], o: ImportOptions) -> tuple[str, dict[str, str]]:
    """Validate the declaration against the table; return the objective and column -> key."""
    if not o.condition_cols:
        _fail("declare at least one condition column", path, "--condition-cols")
    if o.yield_scale not in {"percent", "fraction"}:
        _fail("yield scale must be 'percent' or 'fraction'", path, "--yield-scale", o.yield_scale)
    if o.response not in RESPONSES:
        _fail(f"unknown response (known: {', '.join(RESPONSES)})", path, "--response", o.response)
    if o.response == "ratio" and not o.yield_col:
        _fail("--response ratio needs --yield-col (the response column)", path, "--response")
    selectivity_cols = [c for c in (o.ee_col, o.dr_col, o.er_col, o.rr_col, o.ddg_col) if c]
    if not o.yield_col and not selectivity_cols:
        _fail(
            "no outcome column: give --yield-col and/or --ee-col, --er-col, --dr-col, "
            "--rr-col or --ddg-col",
            path,
        )
    objective = o.objective or ("utility" if o.yield_col else "selectivity")
    if objective not in OBJECTIVES:
        _fail(f"unknown objective (known: {', '.join(OBJECTIVES)})", path, "--objective", objective)
    if objective in {"utility", "yield"} and not o.yield_col:
        _fail(f"objective {objective!r} needs --yield-col", path, "--objective", objective)
    if objective == "selectivity" and not selectivity_cols:
        _fail(
            "objective 'selectivity' needs --ee-col, --er-col, --dr-col, --rr-col or --ddg-col",
            path,
            "--objective",
            objective,
        )
    if o.ddg_col and (o.temperature_k is None or o.temperature_k <= 0):
        _fail(
            "--ddg-col needs --temperature-k (kelvin, > 0)",
            path,
            "--temperature-k",
            o.temperature_k,
        )
    if o.ddg_col and o.ee_col:
        _fail("give either --ee-col or --ddg-col, not both", path, "--ddg-col", o.ddg_col)
    wanted = [
        *o.reaction_cols,
        *o.condition_cols,
        *o.slice_cols,
        *o.smiles_cols,
        *o.smiles_cols.values(),
        *(c for c in (o.yield_col, *selectivity_cols, o.product_col) if c),
    ]
    for col in wanted:
        if col not in columns:
            _fail(f"column not in table (columns: {', '.join(map(str, columns))})", path, col)
    overlap = set(o.reaction_cols) & set(o.condition_cols)
    if overlap:
        _fail("a column cannot be both reaction identity and condition", path, sorted(overlap)[0])
    for col in o.slice_cols:
        if col not in o.condition_cols:
            _fail("a --slice-cols column must also be a condition column", path, col)
    for col in o.vary_cols:
        if col not in o.condition_cols:
            _fail("a --vary column must be a condition column", path, col)
        if col in o.slice_cols:
            _fail("a --vary column cannot also be a --slice-cols column", path, col)
    if o.merge_by not in {"smiles", "name"}:
        _fail("--merge-by must be 'smiles' or 'name'", path, "--merge-by", o.merge_by)
    keys: dict[str, str] = {}
    for col in o.condition_cols:
        role = o.roles.get(col, col)
        if col in o.roles and role not in ROLES:
            _fail(f"unknown condition role (roles: {', '.join(ROLES)})", path, col, role)
        if role in keys.values():
            _fail("two condition columns map to the same key", path, col, role)
        keys[col] = role
    for col in o.roles:
        if col not in o.condition_cols:
            _fail("--role names a column that is not a condition column", path, col)
    for col, kind in o.axis_kinds.items():
        if col not in o.condition_cols:
            _fail("--axis-kind names a column that is not a condition column", path, col)
        if kind not in AXIS_KINDS:
            _fail(f"unknown axis kind (kinds: {', '.join(AXIS_KINDS)})", path, col, kind)
    for key in o.constants:
        if key in keys.values():
            _fail("a --constant key is also a varying condition column", path, key)
    return objective, keys


def import_table(path: Path, options: ImportOptions) -> CompiledSet:
    """Compile a user's table. SMILES are canonicalised with RDKit; an invalid one stops the
    import naming its row and value."""
    frame = _read_frame(path)
    o = options
    objective, keys = _check(path, list(frame.columns), o)
    content = rows_sha256(frame, o)
    name = o.dataset or f"table_{content[:12]}"
    kinds = axis_kinds(o, keys)
    rule = TableRule(
        dataset=name,
        citation="user table",
        doi="",
        condition_keys=tuple(keys[c] for c in o.condition_cols),
        # a ratio is read as recorded: no percent/fraction scale applies to it
        yield_scale="fraction" if o.response == "ratio" else o.yield_scale,
        response=o.response,
        replicate_policy=o.replicate_policy,
        max_options=o.max_options,
        max_tables=o.max_tables,
        min_options=o.min_options,
        vary_keys=tuple(keys[c] for c in o.vary_cols),
        merge_by=o.merge_by,
        force_scale=o.force_scale,
        slice_keys=tuple(keys[c] for c in o.slice_cols),
        objective=objective,
        temperature_k=o.temperature_k if o.ddg_col else None,
        allow_out_of_range=o.allow_out_of_range,
        fib_max_hit_floor=o.fib_max_hit_floor,
        constant_conditions=tuple(sorted(o.constants.items())),
        yield_column=o.yield_col or "",
        notes="generic importer",
        axis_kinds=tuple((keys[c], kinds[c][0]) for c in o.condition_cols),
    )
    outcome_cols = {
        "yield": o.yield_col,
        "ee": o.ee_col,
        "dr": o.dr_col,
        "er": o.er_col,
        "rr": o.rr_col,
        "ddg": o.ddg_col,
    }

    def comp(rec: Mapping[Hashable, object], col: str, line: int, empty: str = "none") -> Component:
        text = clean_text(rec[col]) or empty
        smiles_col = o.smiles_cols.get(col)
        raw = clean_text(rec[smiles_col]) if smiles_col else ""
        if not raw:
            return Component(text)
        canon, ok = canonical_smiles(raw)
        if not ok:
            raise DataError(
                "invalid SMILES (RDKit cannot parse it)",
                file=str(path),
                record=f"row {line}",
                field=smiles_col,
                value=raw,
            )
        return Component(text, canon, True)

    def rows() -> Iterator[RawRow]:
        for index, rec in enumerate(frame.to_dict("records")):
            line = index + 2  # 1-based line in the file, header = line 1
            conditions = {keys[c]: comp(rec, c, line) for c in o.condition_cols}
            product = (comp(rec, o.product_col, line, ""),) if o.product_col else ()
            yield RawRow(
                reaction=tuple(clean_text(rec[c]) for c in o.reaction_cols)
                + tuple(p.smiles or p.content for p in product)
                or (name,),
                conditions=conditions,
                outcome={k: rec[c] for k, c in outcome_cols.items() if c},
                file=path.name,
                row=line,
                reactants=tuple(comp(rec, c, line, "") for c in o.reaction_cols),
                products=product,
                slice_labels=tuple(conditions[keys[c]].content for c in o.slice_cols),
            )

    tables = build_tables(rows(), rule, o.seed)
    if o.response == "ratio":
        tables.qc.setdefault("warnings", []).append(
            f"response {o.yield_col!r} declared a ratio (--response ratio): ranked as "
            "recorded (no yield scale, no 100% bound, never shown as a yield); noise floors "
            f"relative to the largest response: best below {rule.yield_floor:g} x it, or a "
            f"gap below the replicate SD (else {rule.noise_points / 100:g} x it)"
        )
    tables.qc["axis_rule"] = (
        [f"declared --vary {', '.join(o.vary_cols)}"]
        if o.vary_cols
        else [
            ", ".join(f"{c} {kind} ({why})" for c, (kind, why) in kinds.items()),
            f"default axes per reaction: {INFORMATIVE_RULE} (override: --axis-kind COL=KIND, "
            "or --vary COL)",
        ]
    )
    return compile_tables(
        [(rule, tables)], {}, o.seed, {name: content}, {path.name: sha256_file(path)}
    )


def axis_kinds(o: ImportOptions, keys: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """Condition column -> (kind, why): the user's --axis-kind, else `chem.axis_kind` of the
    column's key (its --role when given, else its name)."""
    out: dict[str, tuple[str, str]] = {}
    for col in o.condition_cols:
        declared = o.axis_kinds.get(col)
        out[col] = (declared, "--axis-kind") if declared else axis_kind(keys[col])
    return out


def _cell_text(value: object) -> str:
    """A cell as hashed: text with whitespace collapsed, and a number written one way whether
    it came from a CSV string or an XLSX number (12.50, 12.5 and 12.5e0 are the same)."""
    text = clean_text(value)
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def rows_sha256(frame: pd.DataFrame, o: ImportOptions) -> str:
    """sha256 of the declared columns' cells, row by row, as the compiler reads them: the
    identity of a user's table, the same for its CSV, TSV and XLSX copies under any name."""
    cols = list(
        dict.fromkeys(
            [
                *o.reaction_cols,
                *o.condition_cols,
                *o.smiles_cols,
                *o.smiles_cols.values(),
                *(c for c in (o.yield_col, o.ee_col, o.dr_col, o.er_col, o.rr_col, o.ddg_col) if c),
                *([o.product_col] if o.product_col else []),
            ]
        )
    )
    body = [cols] + [[_cell_text(rec[c]) for c in cols] for rec in frame.to_dict("records")]
    return sha256_json(body)
