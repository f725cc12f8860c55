"""Any lab's own screening table (CSV or XLSX) -> tables -> questions, without writing code.

The user declares which columns identify the reaction, which are condition axes and which hold
outcomes. Every reaction (distinct values of the identity columns) becomes one table; an optional
``max_rows`` cuts larger ones into seeded chunks, as for the built-in datasets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from labreplay._hashing import sha256_file
from labreplay.errors import DataError
from labreplay.suites.conditions.compiler import CompiledSet, compile_tables
from labreplay.suites.conditions.tables import RawRow, TableRule, build_tables, component


def _read_frame(path: Path) -> Any:
    import pandas as pd

    if not path.is_file():
        raise DataError("table file not found", file=str(path))
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


def import_table(
    path: Path,
    reaction_cols: Sequence[str],
    condition_cols: Sequence[str],
    yield_col: str,
    *,
    ee_col: str | None = None,
    dr_col: str | None = None,
    er_col: str | None = None,
    rr_col: str | None = None,
    yield_scale: str = "percent",
    smiles_cols: dict[str, str] | None = None,
    replicate_policy: str = "mean",
    max_rows: int | None = None,
    seed: int = 0,
    dataset: str | None = None,
) -> CompiledSet:
    """Compile a user's table. `smiles_cols` maps a reaction/condition column to the column
    holding its SMILES (canonicalised; invalid ones kept and flagged)."""
    if yield_scale not in {"percent", "fraction"}:
        raise DataError(
            "yield scale must be 'percent' or 'fraction'", field="--yield-scale", value=yield_scale
        )
    if not condition_cols:
        raise DataError("declare at least one condition column", field="--condition-cols")
    frame = _read_frame(path)
    outcome_cols = {"yield": yield_col, "ee": ee_col, "dr": dr_col, "er": er_col, "rr": rr_col}
    smiles_cols = smiles_cols or {}
    wanted = [
        *reaction_cols,
        *condition_cols,
        *(c for c in outcome_cols.values() if c),
        *smiles_cols.values(),
    ]
    for col in wanted:
        if col not in frame.columns:
            raise DataError(
                f"column not in table (columns: {', '.join(map(str, frame.columns))})",
                file=str(path),
                field=col,
            )
    overlap = set(reaction_cols) & set(condition_cols)
    if overlap:
        raise DataError(
            "a column cannot be both reaction identity and condition",
            file=str(path),
            field=sorted(overlap)[0],
        )
    name = dataset or path.stem
    rule = TableRule(
        dataset=name,
        citation=f"user table {path.name}",
        doi="",
        condition_keys=tuple(condition_cols),
        yield_scale=yield_scale,
        replicate_policy=replicate_policy,
        max_rows=max_rows,
        notes="generic importer",
    )

    def rows() -> Iterator[RawRow]:
        for index, rec in enumerate(frame.to_dict("records")):

            def comp(col: str, rec: dict[str, Any] = rec) -> Any:
                value = rec[col] if str(rec[col]).strip() else "none"
                return component(value, rec[smiles_cols[col]] if col in smiles_cols else "")

            yield RawRow(
                reaction=tuple(str(rec[c]) for c in reaction_cols) or (name,),
                conditions={c: comp(c) for c in condition_cols},
                outcome={k: rec[c] for k, c in outcome_cols.items() if c},
                file=path.name,
                row=index + 2,
                reactants=tuple(comp(c) for c in reaction_cols),
            )

    tables = build_tables(rows(), rule, seed)
    return compile_tables([(rule, tables)], {path.name: sha256_file(path)}, seed)
