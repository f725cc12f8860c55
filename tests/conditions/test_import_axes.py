"""The axes a user's table varies by default: several informative axes per table (MC_all, and
FIB where the grid is not full), additives and inhibitors not varied alone, the choice printed,
and rows dropped by the table cap a warning naming the share."""

from __future__ import annotations

import csv
from collections import Counter
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from labreplay.suites.conditions.chem import axis_kind
from labreplay.suites.conditions.importer import ImportOptions, import_table


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("Ligand", "species"),
        ("base_smiles", "species"),
        ("Solvent 1", "species"),
        ("Pd precatalyst", "species"),
        ("additive", "additive"),
        ("inhibitor", "additive"),
        ("catalyst_loading", "process"),
        ("light_source", "process"),
        ("reaction_temperature", "process"),
        ("plate column", "process"),
    ],
)
def test_axis_kind_reads_the_column_name(name: str, kind: str) -> None:
    assert axis_kind(name)[0] == kind


def _write(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_a_sparse_three_axis_screen_gives_mc_all_and_fib(tmp_path: Path) -> None:
    """Two substrates, about half of a 5 x 3 x 3 ligand/base/solvent grid run each (more rows
    than one question holds): tables vary several axes, FIB where they are not full grids."""
    rng = np.random.default_rng(3)
    grid = product(["1a", "1b"], [f"L{i}" for i in range(5)], ["K2CO3", "Cs2CO3", "K3PO4"],
                   ["THF", "dioxane", "toluene"])  # fmt: skip
    rows = [[*cell, round(float(rng.uniform(1, 95)), 1)] for cell in grid if rng.random() >= 0.45]
    table = _write(
        tmp_path / "sparse.csv", ["substrate", "ligand", "base", "solvent", "yield"], rows
    )
    compiled = import_table(
        table, ImportOptions(["substrate"], ["ligand", "base", "solvent"], "yield")
    )
    types = Counter(q["question_type"] for q in compiled.questions)
    assert types["mc_all"] > 0 and types["fib_all"] > 0, types
    assert all(len(t["varying_keys"]) >= 2 for t in compiled.tables)


def test_ahneman_amination_varies_the_catalyst_system_not_the_additive(data_dir: Path) -> None:
    """The issue's check: the Ahneman C-N table with ligand, base and additive declared and no
    --vary gives MC_all questions and never varies the additive (its isoxazole inhibitors, the
    axis with the most levels) alone; the table cap's loss is a warning with its share."""
    table = data_dir / "reactions/buchwald_hartwig_ahneman2018/rxnpredict_data_table.csv"
    compiled = import_table(
        table,
        ImportOptions(["aryl_halide"], ["ligand", "base", "additive"], "yield", max_tables=3),
    )
    types = Counter(q["question_type"] for q in compiled.questions)
    assert types["mc_all"] > 0, types
    assert all(q["varying_keys"] != ["additive"] for q in compiled.questions)
    assert {tuple(t["varying_keys"]) for t in compiled.tables} == {("ligand", "base")}
    (qc,) = compiled.qc.values()
    assert qc["axis_rule"][0].endswith("additive additive (name contains 'additive')")
    (warning,) = [w for w in qc["warnings"] if "table cap" in w]
    dropped = qc["rows_outside_by_reason"]["in tables left out by the per-reaction table cap"]
    share = round(100 * dropped / qc["rows_read"])
    assert f"{dropped} of {qc['rows_read']} rows ({share}%)" in warning and share > 50
    # FIB only where a table is not a full grid: every ligand x base table here is complete
    assert types["fib_all"] == 0 and compiled.skipped["fib_hit_floor_too_high"] > 0
