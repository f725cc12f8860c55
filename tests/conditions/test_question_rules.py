"""Which questions a chemist's own screen gets (issue 21), on tables the tests build.

A full 3-axis grid gets no FIB; a one-axis table keeps all its options and takes precedents from
its sibling table; a 24 x 2 ligand x solvent grid varies the ligand; two spellings of one
ligand are one option; a renamed copy and an XLSX copy give byte-identical questions; bad
options exit 2 with one line before anything is written.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import subprocess
import sys
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from labreplay.errors import DataError
from labreplay.suites.conditions.importer import ImportOptions, import_table
from labreplay.suites.conditions.outcomes import ee_from_ddg
from labreplay.suites.conditions.questions import load_questions, value_label, write_questions

PCY3 = "C1CCC(CC1)P(C1CCCCC1)C1CCCCC1"
PCY3_OTHER_SPELLING = "P(C1CCCCC1)(C1CCCCC1)C1CCCCC1"
XPHOS = "CC(C)c1cc(C(C)C)c(-c2ccccc2P(C2CCCCC2)C2CCCCC2)c(C(C)C)c1"
SPHOS = "COc1cccc(OC)c1-c1ccccc1P(C1CCCCC1)C1CCCCC1"


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _cli_in_process(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (`labreplay.cli.main.run`, what `main` runs): the exit code,
    stdout and stderr a user sees, without an interpreter start (~2 s of CPU) per call. A bug
    escapes as the exception itself."""
    from labreplay.cli.main import run

    err, out = io.StringIO(), io.StringIO()
    argv = [str(a) for a in args]
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = run(argv)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _write_csv(path: Path, header: list[str], rows: list[list[Any]], sep: str = ",") -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=sep)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _write_xlsx(path: Path, header: list[str], rows: list[list[Any]]) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    book.save(path)
    return path


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def _labels(q: dict[str, Any]) -> frozenset[tuple[tuple[str, str], ...]]:
    return frozenset(
        tuple(sorted((k, value_label(v)) for k, v in opt.items())) for opt in q["options"]
    )


def _check_rules(questions: list[dict[str, Any]], min_options: int = 3) -> None:
    """What holds for every compiled question: >= min_options MC options, one MC question per
    (table, option rows), every precedent outside the question's options."""
    rows_of: dict[tuple[str, str], list[frozenset[str]]] = {}
    for q in questions:
        meta = q["meta"]
        if q["question_type"] != "fib_all":
            assert len(q["options"]) >= min_options, q["id"]
        if meta["variant"] == "no_precedents" and q["question_type"] != "fib_all":
            entries = frozenset(e["rxn_id"] for e in meta["option_source_entries"])
            seen = rows_of.setdefault((meta["parent_table_id"], meta["variant"]), [])
            assert entries not in seen, q["id"]
            seen.append(entries)
        if meta["variant"] == "with_precedents" and q["question_type"] != "fib_all":
            shown = {
                tuple(sorted((k, value_label(v)) for k, v in ref["conditions"].items()))
                for ref in q["input"]["reference_conditions"]
            }
            assert not shown & _labels(q), q["id"]  # never one of the options


def _grid_rows(seed: int = 0) -> list[list[Any]]:
    """A full 3-axis grid of 2 solvents x 2 bases x 3 ligands (12 wells) for one substrate."""
    rng = np.random.default_rng(seed)
    return [
        ["4-bromoanisole", s, b, lig, round(float(rng.uniform(5, 95)), 1)]
        for s, b, lig in product(
            ("dioxane", "toluene"), ("K3PO4", "Cs2CO3"), ("XPhos", "SPhos", "dppf")
        )
    ]


def test_full_grid_gets_no_fib_and_a_sparse_table_does(tmp_path: Path) -> None:
    header = ["substrate", "solvent", "base", "ligand", "yield"]
    grid = _write_csv(tmp_path / "grid.csv", header, _grid_rows())
    opts = ImportOptions(["substrate"], ["solvent", "base", "ligand"], "yield", dataset="grid")
    compiled = import_table(grid, opts)
    types = {q["question_type"] for q in compiled.questions}
    assert "fib_all" not in types and "mc_all" in types
    assert compiled.skipped["fib_hit_floor_too_high"] == 1  # 12 of 12 combinations were run
    assert compiled.skipped["too_few_options"] == 2  # the 2-level solvent and base MC_single
    _check_rules(compiled.questions)
    # 7 of the 12 wells: Hit means something (floor 7/12), so FIB is asked (a grid whose best
    # well beats the next by more than the 2-point noise floor)
    wells = [*_grid_rows(1)[::2], _grid_rows(1)[1]]
    sparse = _write_csv(tmp_path / "sparse.csv", header, wells)
    fibs = [
        q
        for q in import_table(
            sparse, ImportOptions(**{**opts.__dict__, "dataset": "sparse"})
        ).questions
        if q["question_type"] == "fib_all"
    ]
    assert fibs
    for q in fibs:
        space = math.prod(len(c) for c in q["candidates"].values())
        assert len(q["options"]) == 7  # precedents come from outside the table: none removed
        assert len(q["options"]) / space <= 0.8  # the gate
        assert q["meta"]["random_floor"]["hit"] == pytest.approx(len(q["options"]) / space)
    # the declared gate is honoured: 0.5 drops the 7/12 FIB
    strict = import_table(
        sparse, ImportOptions(**{**opts.__dict__, "dataset": "sparse", "fib_max_hit_floor": 0.5})
    )
    assert not [q for q in strict.questions if q["question_type"] == "fib_all"]


def test_one_axis_table_keeps_its_options_and_takes_precedents_from_its_sibling(
    tmp_path: Path,
) -> None:
    ligands = ["XPhos", "SPhos", "RuPhos", "BrettPhos", "dppf", "PPh3"]
    yields = {"dioxane": [88, 61, 40, 22, 12, 5], "toluene": [70, 55, 35, 30, 9, 3]}
    rows = [
        ["1a", s, lig, y] for s, ys in yields.items() for lig, y in zip(ligands, ys, strict=True)
    ]
    table = _write_csv(tmp_path / "lig.csv", ["substrate", "solvent", "ligand", "yield"], rows)
    compiled = import_table(
        table,
        ImportOptions(
            ["substrate"], ["solvent", "ligand"], "yield", slice_cols=["solvent"], dataset="lig"
        ),
    )
    qs = compiled.questions
    assert {q["question_type"] for q in qs} == {"mc_single"}
    assert all(len(q["options"]) == 6 for q in qs)  # no option lost to a precedent
    twins = [q for q in qs if q["meta"]["variant"] == "with_precedents"]
    assert len(twins) == 2
    for twin in twins:
        solvent = twin["input"]["constant_conditions"]["solvent"][0]["content"]
        for ref in twin["input"]["reference_conditions"]:
            # a sibling table's row, shown with the solvent it differs in
            assert ref["conditions"]["solvent"][0]["content"] != solvent
    _check_rules(qs)


def test_24_ligand_by_2_solvent_grid_varies_the_ligand(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    rows = [
        ["aryl chloride 3", f"L{i:02d}", solvent, round(float(rng.uniform(0, 90)), 1)]
        for i, solvent in product(range(24), ("EtOH", "MeOH"))
    ]
    table = _write_csv(tmp_path / "nibor.csv", ["electrophile", "ligand", "solvent", "yield"], rows)
    out = tmp_path / "nibor.jsonl"
    proc = _cli(
        "conditions", "compile", "--table", table, "--out", out, "--reaction-cols", "electrophile",
        "--condition-cols", "ligand,solvent", "--yield-col", "yield", "--name", "nibor",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # both axes vary in each table (6 ligands x 2 solvents): the ligand screen in both solvents
    assert "varies ligand, solvent over 12 rows; fixed (nothing), ligand part 1/4" in proc.stdout
    assert "profile nibor:" in proc.stdout and "(paper 7)" in proc.stdout
    qs = load_questions(out)
    assert {tuple(q["varying_keys"]) for q in qs} == {("ligand",), ("ligand", "solvent")}
    sizes = sorted(
        (q["question_type"], len(q["options"]))
        for q in qs
        if q["meta"]["variant"] == "no_precedents"
    )
    assert sizes == [("mc_all", 12)] * 4 + [("mc_single", 6)] * 4
    _check_rules(qs)
    # --vary solvent asks the chemist's other question: EtOH or MeOH, 2 options < 3: none
    declared = import_table(
        table,
        ImportOptions(["electrophile"], ["ligand", "solvent"], "yield", vary_cols=["solvent"]),
    )
    assert (
        not declared.questions and declared.qc[next(iter(declared.qc))]["rows_outside_tables"] == 48
    )


def test_two_spellings_of_one_ligand_are_one_option(tmp_path: Path) -> None:
    header = ["substrate", "Lig", "Lig SMILES", "yield"]
    rows = [
        ["1a", "PCy3", PCY3, 70.0],
        ["1a", "tricyclohexylphosphine", PCY3_OTHER_SPELLING, 50.0],  # a replicate, spelt apart
        ["1a", "XPhos", XPHOS, 40.0],
        ["1a", "SPhos", SPHOS, 20.0],
        ["1a", "PCy3", "", 60.0],  # no SMILES in this row: the name's structure elsewhere
    ]
    table = _write_csv(tmp_path / "smiles.csv", header, rows)
    opts = ImportOptions(["substrate"], ["Lig"], "yield", smiles_cols={"Lig": "Lig SMILES"})
    compiled = import_table(table, opts)
    q = compiled.questions[0]
    assert len(q["options"]) == 3
    pcy3 = [o["Lig"][0] for o in q["options"] if o["Lig"][0]["content"] == "PCy3"]
    assert len(pcy3) == 1 and pcy3[0]["aliases"] == ["tricyclohexylphosphine"]
    merged = q["meta"]["effective_scores"][q["options"].index({"Lig": [pcy3[0]]})]
    assert merged == pytest.approx(0.6)  # mean of 70, 50 and 60: one structure, three rows
    assert compiled.qc[next(iter(compiled.qc))]["options_merged_by_structure"] == 1
    from labreplay.suites.conditions.prompts import render_prompt
    from labreplay.suites.conditions.questions import agent_view

    assert "PCy3 (also tricyclohexylphosphine) [" in render_prompt(agent_view(q))
    # one name given two structures: refused naming both rows, unless merged by name
    rows[3] = ["1a", "XPhos", SPHOS, 20.0]
    clash = _write_csv(tmp_path / "clash.csv", header, rows)
    with pytest.raises(DataError, match="rows 4 and 5") as err:
        import_table(clash, opts)
    assert "'XPhos'" in str(err.value) and "--merge-by name" in str(err.value)
    by_name = import_table(clash, ImportOptions(**{**opts.__dict__, "merge_by": "name"}))
    names = {o["Lig"][0]["content"] for o in by_name.questions[0]["options"]}
    assert names == {"PCy3", "tricyclohexylphosphine", "XPhos"}  # by name, as written


def test_renamed_tsv_and_xlsx_copies_give_byte_identical_questions(tmp_path: Path) -> None:
    header = ["substrate", "solvent", "base", "ligand", "yield"]
    rows = _grid_rows(3)[:9]
    copies = [
        _write_csv(tmp_path / "screen.csv", header, rows),
        _write_csv(tmp_path / "renamed copy.csv", header, rows),
        _write_csv(tmp_path / "screen.tsv", header, rows, sep="\t"),
        _write_xlsx(tmp_path / "screen.xlsx", header, rows),
    ]
    declared = ("--reaction-cols", "substrate", "--condition-cols", "solvent,base,ligand",
                "--yield-col", "yield")  # fmt: skip
    for extra in ((), ("--name", "my_screen")):
        outputs = []
        for n, path in enumerate(copies):
            out = tmp_path / f"q{n}{len(extra)}.jsonl"
            proc = _cli_in_process(
                "conditions", "compile", "--table", path, "--out", out, *declared, *extra
            )
            assert proc.returncode == 0, proc.stderr
            outputs.append(out.read_bytes())
        assert len(set(outputs)) == 1
        assert b"screen.csv" not in outputs[0] and b"renamed" not in outputs[0]
    assert b'"dataset":"my_screen"' in outputs[0]


def test_ddg_replicates_are_averaged_in_ddg(tmp_path: Path) -> None:
    rows = [
        ["imine 1", "c1", 1.4],
        ["imine 1", "c1", 1.6],
        ["imine 1", "c2", 1.0],
        ["imine 1", "c3", 0.2],
    ]
    table = _write_csv(tmp_path / "cpa.csv", ["pair", "catalyst", "ddG"], rows)
    compiled = import_table(
        table, ImportOptions(["pair"], ["catalyst"], ddg_col="ddG", temperature_k=298.15)
    )
    q = compiled.questions[0]
    by_name = {o["catalyst"][0]["content"]: i for i, o in enumerate(q["options"])}
    assert q["answer"] == [by_name["c1"]]  # mean ΔΔG‡ 1.5 beats c2's 1.0
    score = q["meta"]["scores"][by_name["c1"]]
    assert score["ddg_kcal_mol"] == pytest.approx(1.5)
    assert score["ee"] == pytest.approx(ee_from_ddg(1.5, 298.15), abs=1e-5)


def test_low_yield_percent_table_needs_force_scale(tmp_path: Path) -> None:
    rows = [
        ["1a", lig, y] for lig, y in zip(("A", "B", "C", "D"), (0.2, 0.9, 0.45, 0.05), strict=True)
    ]
    table = _write_csv(tmp_path / "low.csv", ["substrate", "ligand", "yield"], rows)
    out = tmp_path / "low.jsonl"
    args = ("conditions", "compile", "--table", table, "--out", out, "--reaction-cols", "substrate",
            "--condition-cols", "ligand", "--yield-col", "yield")  # fmt: skip
    _one_line_exit_2(_cli(*args), "--yield-scale fraction", "--force-scale")
    assert not out.exists()
    proc = _cli(*args, "--force-scale")
    # kept as percent, the best yield is 0.9%: below the declared 5% floor, so the one
    # question is noise, excluded and named; nothing is written
    assert proc.returncode == 2, proc.stderr
    assert "--force-scale" in proc.stderr and "1 below_yield_floor" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--max-options", "-5", "--max-options: value -5 is out of range"),
        ("--max-options", "1", "--max-options must be at least 2"),
        ("--min-options", "1", "--min-options must be between 2"),
        ("--min-options", "20", "--min-options must be between 2"),
        ("--fib-max-hit-floor", "2", "--fib-max-hit-floor must be in (0, 1]"),
        ("--fib-max-hit-floor", "-1", "--fib-max-hit-floor must be in (0, 1]"),
        ("--fib-max-hit-floor", "nan", "--fib-max-hit-floor must be in (0, 1]"),
        ("--temperature-k", "inf", "--temperature-k: value inf must be a finite"),
        ("--max-tables", "0", "--max-tables: value 0 is out of range"),
        ("--yield-scale", "permille", "--yield-scale must be percent or fraction"),
        ("--objective", "cost", "--objective must be one of"),
    ],
)
def test_bad_compile_options_exit_2_before_anything(
    tmp_path: Path, flag: str, value: str, needle: str
) -> None:
    table = _write_csv(tmp_path / "t.csv", ["substrate", "ligand", "yield"], [["1a", "A", 10]])
    out = tmp_path / "q.jsonl"
    for source in (("--table", str(table), "--reaction-cols", "substrate", "--condition-cols",
                    "ligand", "--yield-col", "yield"), ("--all",)):  # fmt: skip
        if source == ("--all",) and flag in {"--yield-scale", "--objective", "--temperature-k"}:
            continue
        proc = _cli_in_process("conditions", "compile", *source, "--out", out, flag, value)
        _one_line_exit_2(proc, needle)
        assert not out.exists() and not (tmp_path / "q.jsonl.spec.json").exists()


def test_official_record_without_parent_table_round_trips_and_ranks(tmp_path: Path) -> None:
    from labreplay.suites.conditions.agents import reference_agent
    from labreplay.suites.conditions.questions import agent_view

    def record(qid: str, yields: list[float]) -> dict[str, Any]:
        return {
            "id": qid,
            "question_type": "all_blank",
            "varying_keys": ["solvents", "reaction_temperature"],
            "input": {"reactants": [], "products": [], "constant_conditions": {}},
            "options": [
                {
                    "solvents": [{"content": s, "SMILES": ""}],
                    "reaction_temperature": [{"content": t, "SMILES": ""}],
                }
                for s, t in (("DMSO", "35 °C"), ("DMF", "25 °C"), ("DMSO", "25 °C"))
            ],
            "answer": [0],
            "meta": {"scores": [{"yield": y, "ee": None} for y in yields]},
        }

    path = tmp_path / "official.jsonl"
    # the release's own formatting (spaces, key order, non-ASCII escaped)
    path.write_text(
        "".join(
            json.dumps(r) + "\n" for r in (record("a", [80, 50, 10]), record("b", [60, 30, 20]))
        )
    )
    qs = load_questions(path)
    again = tmp_path / "again.jsonl"
    write_questions(again, qs)
    assert again.read_bytes() == path.read_bytes()  # no added top-level candidates
    ranker = reference_agent("ranker", qs, 0)
    for q in qs:
        view = agent_view(q)
        assert view["table_id"] == q["id"]  # each question is its own table
        assert set(ranker.answer(view)) == {"choices"}


def test_questions_file_is_keyed_by_content_not_name(tmp_path: Path) -> None:
    from labreplay.suites.conditions.runner import question_spec

    table = _write_csv(tmp_path / "t.csv", ["substrate", "ligand", "yield"],
                       [["1a", lig, y] for lig, y in zip("ABCD", (10, 80, 30, 5), strict=True)])  # fmt: skip
    compiled = import_table(table, ImportOptions(["substrate"], ["ligand"], "yield"))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_questions(a, compiled.questions)
    write_questions(b, compiled.questions)
    spec_a, spec_b = question_spec(a, compiled.questions), question_spec(b, compiled.questions)
    assert spec_a.spec_hash == spec_b.spec_hash and spec_a.spec_id == spec_b.spec_id


def test_report_shows_per_dataset_bars_against_the_random_floor(tmp_path: Path) -> None:
    from labreplay.store.sqlite import Store
    from labreplay.suites.conditions.agents import RandomAgent
    from labreplay.suites.conditions.run import run_agent
    from labreplay.suites.conditions.suite import SUITE

    rows = [[sub, lig, y] for sub in ("1a", "1b")
            for lig, y in zip("ABCDE", (10, 80, 30, 5, 55), strict=True)]  # fmt: skip
    table = _write_csv(tmp_path / "t.csv", ["substrate", "ligand", "yield"], rows)
    compiled = import_table(
        table, ImportOptions(["substrate"], ["ligand"], "yield", dataset="lig5")
    )
    path = tmp_path / "q.jsonl"
    write_questions(path, compiled.questions)
    with Store(tmp_path / "s.sqlite") as store:
        run_agent(store, path, load_questions(path), RandomAgent(0), seed=0)
        section = SUITE.report_section(store)
    assert section is not None
    html = section.html
    assert "agent score against the random floor" in html and "lig5" in html
    assert "MC_single score" in html and "width:" in html


def test_python_api_compile_honours_and_checks_the_rules(data_dir: Path, tmp_path: Path) -> None:
    from labreplay.errors import LabreplayError
    from labreplay.suites.conditions.suite import SUITE

    out = tmp_path / "q.jsonl"
    # the CLI's checks and words: `conditions compile --max-options -5` / `1`
    with pytest.raises(LabreplayError, match="--max-options: value -5 is out of range"):
        SUITE.compile(data_dir, out=out, datasets=["currybo_cernak"], max_options=-5)
    with pytest.raises(LabreplayError, match="--max-options must be at least 2"):
        SUITE.compile(data_dir, out=out, datasets=["currybo_cernak"], max_options=1)
    assert not out.exists()
    SUITE.compile(data_dir, out=out, datasets=["currybo_cernak"], max_options=6)
    rule = json.loads((tmp_path / "q.jsonl.spec.json").read_text())["spec"]["datasets"]
    assert rule["currybo_cernak"]["max_options"] == 6
    assert all(len(q["options"]) <= 6 for q in load_questions(out))
