"""Outcome parsing, utility, and the per-table QC accounting on the real datasets."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from labreplay.suites.conditions.datasets import load_tables
from labreplay.suites.conditions.outcomes import (
    parse_amount,
    parse_ratio,
    selectivity_factor,
    utility,
)


@pytest.mark.parametrize(
    ("raw", "value", "flagged"),
    [
        (42.5, 42.5, False),
        ("42.5", 42.5, False),
        ("≥90%", 90.0, True),
        ("<5", 5.0, True),
        ("trace", 0.0, True),
        ("n.d.", 0.0, True),
        ("", None, True),
        ("abc", None, True),
        ("12 %", 12.0, False),
    ],
)
def test_parse_amount(raw: object, value: float | None, flagged: bool) -> None:
    parsed = parse_amount(raw)
    assert parsed.value == value
    assert (parsed.flag is not None) == flagged


def test_ratios_and_utility() -> None:
    assert parse_ratio("95:5") == (95.0, 5.0)
    assert parse_ratio(">20:1") == (20.0, 1.0)
    assert isinstance(parse_ratio("good"), str)
    assert parse_ratio(None) is None
    assert selectivity_factor({"ee": 90.0}) == pytest.approx(0.95)
    assert selectivity_factor({"dr": (3, 1), "rr": (1, 1)}) == pytest.approx(0.75 * 0.5)
    assert selectivity_factor({}) == 1.0  # unreported axes are neutral
    assert utility({"yield": 0.8, "ee": 50.0}) == pytest.approx(0.8 * 0.75)
    assert utility({"ee": 50.0}) is None


def _csv_rows(path: Path) -> int:
    with path.open(encoding="utf-8-sig") as handle:
        return sum(1 for _ in csv.reader(handle)) - 1


def test_every_source_row_is_accounted_for(data_dir: Path) -> None:
    tables = load_tables("buchwald_hartwig", data_dir)
    qc = tables.qc
    used = sum(t.qc["source_rows"] for t in tables)
    rel = "reactions/buchwald_hartwig_ahneman2018/rxnpredict_data_table.csv"
    assert qc["rows_read"] == _csv_rows(data_dir / rel) == 4599
    assert used + sum(qc["rows_excluded"].values()) + qc["rows_outside_tables"] == 4599
    assert sum(qc["rows_excluded"].values()) > 0  # the control wells without an aryl halide
    excluded = qc["rows_excluded"]
    assert sum(excluded.values()) == 287  # wells without an aryl halide: excluded with their reason
    assert all(reason for reason in excluded)  # each counted under a stated reason
    assert sum(len(t.rows) for t in tables) == 4599 - 287


def test_censored_cells_are_flagged_and_read_as_percent(data_dir: Path) -> None:
    tables = load_tables("summit_baumgartner", data_dir)
    flags = [f for t in tables for f in t.qc["flagged_cells"] if "≥90%" in f]
    assert flags, "the literal '≥90%' cells must appear in the QC report"
    censored = [r for t in tables for r in t.rows if any("≥90%" in f for f in r.flags)]
    assert len(censored) == 5
    assert all(r.outcome["yield"] == pytest.approx(0.90) for r in censored)


def test_conflicting_replicates_follow_the_declared_policy(data_dir: Path) -> None:
    tables = load_tables("summit_reizman", data_dir)
    conflicts = [
        r for t in tables for r in t.rows if any("replicates disagree" in f for f in r.flags)
    ]
    assert conflicts
    assert sum(t.qc["replicate_conflicts"] for t in tables) == len(conflicts)
    row = conflicts[0]
    assert len(row.provenance) >= 2  # every merged source row is kept in provenance


def test_missing_selectivity_is_neutral_and_ee_enters_utility(data_dir: Path) -> None:
    suzuki = load_tables("edboplus_suzuki", data_dir)
    assert any(r.conditions["base"] == "None" for t in suzuki for r in t.rows)  # as recorded
    for row in (r for t in suzuki for r in t.rows):  # declared basis: conversion x selectivity
        assert row.outcome["yield"] == pytest.approx(
            row.outcome["conversion"] * row.outcome["selectivity"]
        )
    cc = load_tables("edboplus_crosscoupling", data_dir)
    row = cc[0].rows[0]
    assert row.utility == pytest.approx(row.outcome["yield"] * (1 + row.outcome["ee"] / 100) / 2)


def test_large_grids_are_cut_into_literature_sized_tables(data_dir: Path) -> None:
    tables = load_tables("edbo_arylation", data_dir)
    assert all(2 <= len(t.rows) <= 12 for t in tables)
    # no random chunks: every table is one fixed context; the seeded cap leaves the rest out
    assert sum(len(t.rows) for t in tables) + tables.qc["rows_outside_tables"] == 1728
    assert all(len(t.varying_keys) >= 1 and t.qc["fixed_by_slice"] for t in tables)
    assert tables == load_tables("edbo_arylation", data_dir)  # the same cut every time
    # 12 ligands x 4 bases per (solvent, concentration, temperature): the ligand screen is varied
    assert {tuple(t.varying_keys) for t in tables} == {("ligand",)}
    assert all(len(t.rows) == 12 for t in tables) and tables.qc["tables_capped"] == 0


def test_slicing_rule_on_a_full_grid_and_on_scattered_rows() -> None:
    from itertools import product

    from labreplay.suites.conditions.slicing import slice_group
    from labreplay.suites.conditions.tables import ObservedRow

    def row(**conds: str) -> ObservedRow:
        return ObservedRow(dict(conds), {"yield": 0.5}, 0.5, [{"file": "f", "row": 0}])

    grid = [row(base=b, ligand=lig, additive=a) for b, lig, a in product("abc", "1234", "uvwxyz")]
    cut = slice_group(grid, ("base", "ligand", "additive"), 12, None, 0, "grid", min_rows=3)
    # the axis with the most levels (6 additives) is varied; base x ligand would not join it
    assert cut.varied == ["additive"] and cut.fixed_keys == ["base", "ligand"]
    assert len(cut.slices) == 12 and all(len(s.rows) == 6 for s in cut.slices)
    capped = slice_group(grid, ("base", "ligand", "additive"), 12, 4, 0, "grid", min_rows=3)
    again = slice_group(grid, ("base", "ligand", "additive"), 12, 4, 0, "grid", min_rows=3)
    assert len(capped.slices) == 4 and capped.tables_capped == 8
    assert [s.fixed for s in capped.slices] == [s.fixed for s in again.slices]  # seeded
    assert capped.rows_outside == 48
    assert capped.outside_reasons == {"in tables left out by the per-reaction table cap": 48}
    # every row of a table shares the fixed context; no row is in two tables
    members = [i for s in cut.slices for i in s.rows]
    assert len(members) == len(set(members)) == len(grid)
    # declared axes win; a 6 x 4 context is too big for 12 options and is split by additive
    declared = slice_group(
        grid,
        ("base", "ligand", "additive"),
        12,
        None,
        0,
        "g",
        min_rows=3,
        vary=("ligand", "additive"),
    )
    assert declared.varied == ["ligand", "additive"]
    assert all(
        len(s.rows) <= 12 and s.subset and s.subset["axis"] == "additive" for s in declared.slices
    )
    assert sum(len(s.rows) for s in declared.slices) == len(grid)
    # role order breaks a tie in levels: ligand (4) before base (4)
    square = [row(base=b, ligand=lig) for b, lig in product("abcd", "1234")]
    tie = slice_group(square, ("base", "ligand"), 12, None, 0, "sq", min_rows=3)
    assert tie.varied == ["ligand"]
    # scattered campaign rows: a 1-row context cannot make a table, the rule keeps the most rows
    scattered = [row(t=str(t), c=str(c)) for t, c in [(1, 1), (1, 2), (1, 3), (2, 4), (3, 5)] * 3]
    cut = slice_group(scattered[:5], ("t", "c"), 2, None, 0, "s")
    assert sum(len(s.rows) for s in cut.slices) + cut.rows_outside == 5


def test_a_row_index_names_its_file_when_a_table_has_several(data_dir: Path) -> None:
    """EDBO Mitsunobu is read from four round files: a row number alone would be ambiguous."""
    from labreplay.suites.conditions.compiler import compile_datasets

    compiled = compile_datasets(["edbo_mitsunobu"], data_dir, seed=0)
    multi = [q for q in compiled.questions if ";" in q["meta"]["source_file"]]
    assert multi
    for q in multi:
        files = q["meta"]["source_file"].split(";")
        for entry in q["meta"]["option_source_entries"]:
            assert entry["file"] in files and entry["source_row_files"][0] == entry["file"]
            assert len(entry["source_row_files"]) == len(entry["source_rows"])
