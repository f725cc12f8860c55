"""A chemist's own screening tables, written as a chemist would (CSV / XLSX), through the CLI.

Each test builds its table in tmp_path and runs the real command line in a subprocess: exit
codes, the one-line error on stderr, and the question file are what a user sees.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labreplay.suites.conditions.questions import load_questions

R_KCAL = 1.987204e-3


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _compile(table: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli("conditions", "compile", "--table", table, "--out", out, *extra)


def _assert_one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


BASES = ["DBU", "MTBD", "P2Et"]
LIGANDS = ["XPhos", "t-BuXPhos", "t-BuBrettPhos", "AdBrettPhos"]
ADDITIVES = ["none", "5-phenylisoxazole", "ethyl isoxazole-3-carboxylate", "3-methylisoxazole",
             "benzo[d]isoxazole", "methyl 5-methylisoxazole-3-carboxylate"]  # fmt: skip


@pytest.fixture()
def amination_grid(tmp_path: Path) -> Path:
    """Two aryl halides x a full base x ligand x additive grid (72 wells each), as an XLSX."""
    import openpyxl

    rng = np.random.default_rng(7)
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["Aryl halide", "Base", "Ligand", "Additive", "Yield (%)"])
    for halide in ("4-bromoanisole", "3-iodopyridine"):
        for base, ligand, additive in product(BASES, LIGANDS, ADDITIVES):
            # the best base and ligand change with the additive (rotated orders): a screen
            # whose one combination won everywhere would be one answer repeated (issue 36)
            a = ADDITIVES.index(additive)
            effect = (
                10 * ((BASES.index(base) + a) % len(BASES))
                + 8 * ((LIGANDS.index(ligand) + a) % len(LIGANDS))
                - 3 * a
            )
            sheet.append(
                [
                    halide,
                    base,
                    ligand,
                    additive,
                    round(float(np.clip(30 + effect + rng.normal(0, 4), 0, 99)), 1),
                ]
            )
    path = tmp_path / "amination_grid.xlsx"
    book.save(path)
    return path


def test_full_amination_grid_becomes_literature_sized_questions(
    amination_grid: Path, tmp_path: Path
) -> None:
    out = tmp_path / "grid.jsonl"
    proc = _compile(
        amination_grid, out, "--reaction-cols", "Aryl halide",
        "--condition-cols", "Base,Ligand,Additive", "--yield-col", "Yield (%)",
        "--name", "amination_grid",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "QC amination_grid: 144 rows read" in proc.stdout
    assert proc.stdout.count(": varies Base, Ligand over 12 rows; fixed Additive=") == 12
    assert (
        "axis rule amination_grid: Base species (name contains 'base'), Ligand species "
        "(name contains 'ligand'), Additive additive (name contains 'additive')" in proc.stdout
    )
    assert "profile amination_grid:" in proc.stdout
    qs = load_questions(out)
    mc = [q for q in qs if q["question_type"] != "fib_all"]
    assert mc and all(3 <= len(q["options"]) <= 12 for q in mc)
    # the catalyst system (base x ligand) is what each table varies, at one additive each: the
    # additive (6 levels, the axis with the most) is a robustness factor, never varied alone
    assert {tuple(q["varying_keys"]) for q in qs if q["question_type"] == "mc_all"} == {
        ("Base", "Ligand")
    }
    assert all(q["varying_keys"] != ["Additive"] for q in qs)
    # No sibling leak: each measured well belongs to exactly one table.
    owner: dict[tuple[str, ...], str] = {}
    for q in qs:
        fixed = {k: v[0]["content"] for k, v in q["input"]["constant_conditions"].items()}
        for opt in q["options"]:
            conds = {**fixed, **{k: v[0]["content"] for k, v in opt.items()}}
            if "fixed_conditions" in q["input"]:
                conds.update(
                    {k: v[0]["content"] for k, v in q["input"]["fixed_conditions"].items()}
                )
            well = (
                q["input"]["reactants"][0]["content"],
                *(conds[k] for k in ("Base", "Ligand", "Additive")),
            )
            assert (
                owner.setdefault(well, q["meta"]["parent_table_id"]) == q["meta"]["parent_table_id"]
            )
    spec = json.loads((tmp_path / "grid.jsonl.spec.json").read_text())
    rule = spec["spec"]["datasets"]["amination_grid"]
    assert rule["max_options"] == 12 and rule["fib_max_hit_floor"] == 0.8
    cuts = {t["qc"]["cut"] for t in spec["tables"]}
    assert all(c.startswith("vary Base, Ligand (") for c in cuts), cuts
    assert rule["axis_kinds"] == {"Base": "species", "Ligand": "species", "Additive": "additive"}
    # the user's word wins: the additive declared a species is screened (it has the most levels)
    proc = _compile(
        amination_grid, out, "--reaction-cols", "Aryl halide",
        "--condition-cols", "Base,Ligand,Additive", "--yield-col", "Yield (%)",
        "--name", "amination_grid", "--axis-kind", "Additive=species",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Additive species (--axis-kind)" in proc.stdout
    assert any("Additive" in q["varying_keys"] for q in load_questions(out))
    proc = _compile(
        amination_grid, out, "--reaction-cols", "Aryl halide",
        "--condition-cols", "Base,Ligand,Additive", "--yield-col", "Yield (%)",
        "--axis-kind", "Additive=spectator",
    )  # fmt: skip
    _assert_one_line_error(proc, "unknown axis kind", "'Additive'", "'spectator'")


def test_slice_cols_declare_the_tables(tmp_path: Path) -> None:
    # the amination grid with the ligand order changing from one (base, additive) slice to the
    # next: with one ligand best everywhere the answer-share cap (issue 36) would keep nothing
    import openpyxl

    rng = np.random.default_rng(11)
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["Aryl halide", "Base", "Ligand", "Additive", "Yield (%)"])
    for halide in ("4-bromoanisole", "3-iodopyridine"):
        for base, additive in product(BASES, ADDITIVES):
            order = rng.permutation(len(LIGANDS))
            for ligand, rank in zip(LIGANDS, order, strict=True):
                sheet.append([halide, base, ligand, additive, float(20 + 15 * rank)])
    grid = tmp_path / "amination_grid.xlsx"
    book.save(grid)
    out = tmp_path / "sliced.jsonl"
    proc = _compile(
        grid, out, "--reaction-cols", "Aryl halide",
        "--condition-cols", "Base,Ligand,Additive", "--yield-col", "Yield (%)",
        "--slice-cols", "Additive,Base", "--json", "--name", "amination_grid",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["qc"]["amination_grid"]["groups"] == 2 * len(ADDITIVES) * len(BASES)
    qs = load_questions(out)
    assert {tuple(q["varying_keys"]) for q in qs} == {("Ligand",)}  # one axis left: MC_single


def test_single_axis_ligand_screen_has_no_duplicated_questions(tmp_path: Path) -> None:
    rows = [[sub, lig, y] for sub in ("aryl bromide 1a", "aryl chloride 1b")
            for lig, y in zip([*LIGANDS, "PPh3", "dppf", "BINAP", "SPhos"], (12, 88, 54, 7, 0, 31, 45, 70), strict=True)]  # fmt: skip
    table = _write_csv(tmp_path / "ligand_screen.csv", ["substrate", "ligand", "yield"], rows)
    out = tmp_path / "lig.jsonl"
    proc = _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                    "--yield-col", "yield", "--json", "--name", "ligand_screen")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    qs = load_questions(out)
    assert {q["question_type"] for q in qs} == {"mc_single"}
    seen = set()
    for q in qs:
        key = (q["meta"]["parent_table_id"], q["meta"]["variant"],
               frozenset(o["ligand"][0]["content"] for o in q["options"]))  # fmt: skip
        assert key not in seen
        seen.add(key)
    dropped = json.loads(proc.stdout)["skipped_by_dataset"]["ligand_screen"]
    assert dropped["single_axis_table"] == 2 * 2  # MC_all and FIB of each of the two tables


def test_a_twenty_ligand_screen_is_split_into_seeded_option_subsets(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    rows = [["aryl bromide 1a", f"L{i}", round(float(rng.uniform(0, 95)), 1)] for i in range(20)]
    table = _write_csv(tmp_path / "wide.csv", ["substrate", "ligand", "yield"], rows)
    out = tmp_path / "wide.jsonl"
    proc = _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                    "--yield-col", "yield", "--json", "--name", "wide")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["qc"]["wide"]["rows_outside_tables"] == 0  # two 10-ligand parts, none lost
    qs = [q for q in load_questions(out) if q["meta"]["variant"] == "no_precedents"]
    assert {q["question_type"] for q in qs} == {"mc_single"}
    assert sorted(len(q["options"]) for q in qs) == [10, 10]
    ligands = [o["ligand"][0]["content"] for q in qs for o in q["options"]]
    assert sorted(ligands) == sorted(f"L{i}" for i in range(20))  # a partition of the levels
    best = max(rows, key=lambda r: r[2])[1]
    spec = json.loads((tmp_path / "wide.jsonl.spec.json").read_text())
    subsets = [t["qc"]["option_subset"] for t in spec["tables"]]
    assert sorted(s["holds_context_best"] for s in subsets) == [False, True]  # share 1/2
    holder = [q for q in qs if best in {o["ligand"][0]["content"] for o in q["options"]}]
    assert len(holder) == 1
    again = tmp_path / "again.jsonl"
    assert _compile(table, again, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                    "--yield-col", "yield", "--name", "wide").returncode == 0  # fmt: skip
    assert again.read_bytes() == out.read_bytes()  # seeded: the same subsets every time


def test_slightly_negative_yields_give_relative_scores_in_unit_interval(tmp_path: Path) -> None:
    yields = [-0.49, 0.3, 12.5, 48.0, -0.2, 77.1, 5.0, 63.2]
    rows = [["2-bromopyridine", s, b, y] for (s, b), y in
            zip(product(("DMF", "dioxane", "toluene", "MeCN"), ("K3PO4", "Cs2CO3")), yields, strict=True)]  # fmt: skip
    table = _write_csv(tmp_path / "hplc.csv", ["substrate", "solvent", "base", "yield"], rows)
    out = tmp_path / "neg.jsonl"
    proc = _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "solvent,base",
                    "--yield-col", "yield")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "2 negative values clipped to 0" in proc.stdout
    for q in load_questions(out):
        assert all(0.0 <= r <= 1.0 for r in q["meta"]["option_relative_scores"])
        assert all(0.0 <= u <= 1.0 for u in q["meta"]["effective_scores"])
        assert min(q["meta"]["yields"]) >= 0.0


def test_percent_yields_declared_as_fractions_exit_2(tmp_path: Path) -> None:
    rows = [["1a", lig, y] for lig, y in zip(LIGANDS, (12.0, 98.7, 54.0, 7.5), strict=True)]
    table = _write_csv(tmp_path / "pct.csv", ["substrate", "ligand", "Yield"], rows)
    before = table.read_bytes()
    out = tmp_path / "pct.jsonl"
    proc = _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                    "--yield-col", "Yield", "--yield-scale", "fraction")  # fmt: skip
    _assert_one_line_error(proc, "'Yield'", "7.5..98.7", "--yield-scale percent")
    assert not out.exists() and table.read_bytes() == before
    frac = _write_csv(tmp_path / "frac.csv", ["substrate", "ligand", "Yield"],
                      [[r[0], r[1], r[2] / 100] for r in rows])  # fmt: skip
    proc = _compile(frac, out, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                    "--yield-col", "Yield")  # fmt: skip
    _assert_one_line_error(proc, "'Yield'", "--yield-scale fraction")


def test_out_of_range_values_exit_2_unless_allowed(tmp_path: Path) -> None:
    rows = [["1a", lig, y, ee] for lig, y, ee in
            zip(LIGANDS, (12.0, 103.0, 54.0, 7.5), (90, 95, -40, 10), strict=True)]  # fmt: skip
    table = _write_csv(tmp_path / "oor.csv", ["substrate", "ligand", "yield", "ee"], rows)
    out = tmp_path / "oor.jsonl"
    args = ("--reaction-cols", "substrate", "--condition-cols", "ligand", "--yield-col", "yield",
            "--ee-col", "ee")  # fmt: skip
    _assert_one_line_error(
        _compile(table, out, *args), "row 3", "above 100%", "--allow-out-of-range"
    )
    ok = _compile(table, out, *args, "--allow-out-of-range")
    assert ok.returncode == 0, ok.stderr
    assert "1 out-of-range rows flagged" in ok.stdout
    bad_ee = _write_csv(tmp_path / "ee.csv", ["substrate", "ligand", "yield", "ee"],
                        [[*r[:2], 50.0, e] for r, e in zip(rows, (90, 150, 3, 4), strict=True)])  # fmt: skip
    _assert_one_line_error(_compile(bad_ee, out, *args), "ee '150'", "±100%")


def test_ddg_table_without_yield_compiles_as_selectivity(tmp_path: Path) -> None:
    """Chiral phosphoric acid catalysts x substrate pairs, ΔΔG‡ only (no yield column)."""
    rng = np.random.default_rng(3)
    catalysts = [f"(R)-TRIP-{i}" for i in range(6)]
    pairs = [f"imine {i} + thiol {i}" for i in range(4)]
    rows = [[p, c, round(float(rng.normal(1.2, 0.9)), 2)] for p in pairs for c in catalysts]
    table = _write_csv(tmp_path / "cpa.csv", ["pair", "catalyst", "ddG (kcal/mol)"], rows)
    out = tmp_path / "cpa.jsonl"
    proc = _compile(table, out, "--reaction-cols", "pair", "--condition-cols", "catalyst",
                    "--ddg-col", "ddG (kcal/mol)", "--temperature-k", "298.15")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    qs = load_questions(out)
    assert qs and all(q["meta"]["objective"] == "selectivity" for q in qs)
    ddg = {(p, c): d for p, c, d in rows}
    for q in qs:
        pair = q["input"]["reactants"][0]["content"]
        for opt, u in zip(q["options"], q["meta"]["effective_scores"], strict=True):
            ee = math.tanh(ddg[(pair, opt["catalyst"][0]["content"])] / (2 * R_KCAL * 298.15))
            assert u == pytest.approx((1 + ee) / 2, abs=1e-9)
        assert (
            min(q["meta"]["option_relative_scores"]) > 0
            and max(q["meta"]["option_relative_scores"]) == 1
        )
    missing_t = _compile(table, out, "--reaction-cols", "pair", "--condition-cols", "catalyst",
                         "--ddg-col", "ddG (kcal/mol)")  # fmt: skip
    _assert_one_line_error(missing_t, "--temperature-k")


def test_er_and_ee_give_the_same_relative_scores(tmp_path: Path) -> None:
    ees = [90.0, -60.0, 20.0, 0.0]
    header = ["substrate", "ligand", "yield", "ee", "er"]
    rows = [["1a", lig, 70.0, ee, f"{50 + ee / 2:g}:{50 - ee / 2:g}"] for lig, ee in zip(LIGANDS, ees, strict=True)]  # fmt: skip
    table = _write_csv(tmp_path / "sel.csv", header, rows)
    scores = {}
    for col in ("ee", "er"):
        out = tmp_path / f"{col}.jsonl"
        proc = _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                        "--yield-col", "yield", f"--{col}-col", col, "--name", "sel")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        scores[col] = [(q["id"], q["meta"]["option_relative_scores"]) for q in load_questions(out)]
    assert scores["ee"] == scores["er"]


def test_smiles_cols_attach_validated_smiles_and_constants(tmp_path: Path) -> None:
    ligands = {"PPh3": "P(C1=CC=CC=C1)(C1=CC=CC=C1)C1=CC=CC=C1", "PCy3": "C1CCC(CC1)P(C1CCCCC1)C1CCCCC1",
               "dppe": "C(CP(c1ccccc1)c1ccccc1)P(c1ccccc1)c1ccccc1"}  # fmt: skip
    header = ["substrate", "substrate SMILES", "Lig", "Lig SMILES", "product", "yield"]
    rows = [["bromobenzene", "BrC1=CC=CC=C1", name, smi, "biphenyl", y]
            for (name, smi), y in zip(ligands.items(), (40, 75, 12), strict=True)]  # fmt: skip
    table = _write_csv(tmp_path / "smiles.csv", header, rows)
    out = tmp_path / "smi.jsonl"
    proc = _compile(
        table, out, "--reaction-cols", "substrate", "--condition-cols", "Lig", "--yield-col", "yield",
        "--smiles-cols", "substrate=substrate SMILES,Lig=Lig SMILES", "--product-col", "product",
        "--role", "Lig=ligand", "--constant", "solvents=toluene", "--constant", "reaction_temperature=100 °C",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    q = load_questions(out)[0]
    assert q["varying_keys"] == ["ligand"]
    assert q["input"]["reactants"] == [{"content": "bromobenzene", "SMILES": "Brc1ccccc1"}]
    assert q["input"]["products"][0]["content"] == "biphenyl"
    assert {o["ligand"][0]["SMILES"] for o in q["options"]} <= {"c1ccc(P(c2ccccc2)c2ccccc2)cc1",
            "C1CCC(P(C2CCCCC2)C2CCCCC2)CC1", "c1ccc(P(CCP(c2ccccc2)c2ccccc2)c2ccccc2)cc1"}  # fmt: skip
    assert q["input"]["constant_conditions"]["solvents"][0]["content"] == "toluene"
    from labreplay.suites.conditions.prompts import render_prompt
    from labreplay.suites.conditions.questions import agent_view

    prompt = render_prompt(agent_view(q))
    assert "bromobenzene [Brc1ccccc1]" in prompt and "reaction_temperature = 100 °C" in prompt
    rows[1][3] = "C1CC(P"  # a broken SMILES in line 3 of the file
    bad = _write_csv(tmp_path / "bad_smiles.csv", header, rows)
    proc = _compile(bad, out, "--reaction-cols", "substrate", "--condition-cols", "Lig",
                    "--yield-col", "yield", "--smiles-cols", "Lig=Lig SMILES")  # fmt: skip
    _assert_one_line_error(proc, "row 3", "'Lig SMILES'", "'C1CC(P'")
    proc = _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "Lig",
                    "--yield-col", "yield", "--role", "Lig=bass")  # fmt: skip
    _assert_one_line_error(proc, "unknown condition role", "'bass'")


def test_score_refuses_unknown_and_duplicate_ids(tmp_path: Path) -> None:
    rows = [["1a", lig, y] for lig, y in zip(LIGANDS, (12.0, 88.0, 54.0, 7.5), strict=True)]
    table = _write_csv(tmp_path / "s.csv", ["substrate", "ligand", "yield"], rows)
    out = tmp_path / "s.jsonl"
    assert _compile(table, out, "--reaction-cols", "substrate", "--condition-cols", "ligand",
                    "--yield-col", "yield").returncode == 0  # fmt: skip
    qs = load_questions(out)
    preds = tmp_path / "p.jsonl"
    good = [{"id": q["id"], "answer": {"option": 0}} for q in qs]
    unknown = [{"id": f"made_up_{i}", "answer": {"option": 0}} for i in range(5)]
    preds.write_text("".join(json.dumps(r) + "\n" for r in good + unknown))
    proc = _cli("conditions", "score", "--questions", out, "--predictions", preds)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()  # each unknown id named, then the error
    assert len(lines) == 6 and "5 malformed prediction(s)" in lines[-1]
    for i, line in enumerate(lines[:5]):
        assert f"id 'made_up_{i}', field 'id'" in line and "not in the question file" in line
    dup = [*good, *({"id": qs[0]["id"], "answer": {"option": i}} for i in range(1, 3))]
    preds.write_text("".join(json.dumps(r) + "\n" for r in dup))
    proc = _cli("conditions", "score", "--questions", out, "--predictions", preds)
    assert proc.returncode == 2 and f"id {qs[0]['id']!r}, field 'id'" in proc.stderr
    assert f"predicted 3 times (lines 1, {len(good) + 1}, {len(good) + 2})" in proc.stderr
    preds.write_text("".join(json.dumps(r) + "\n" for r in good))
    proc = _cli("conditions", "score", "--questions", out, "--predictions", preds, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["missing_predictions"] == 0
