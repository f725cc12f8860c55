"""The CLI and the generic importer on a table made from real rows."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from labreplay.cli import main as cli_main
from labreplay.errors import DataError
from labreplay.suites.conditions.importer import ImportOptions, import_table
from labreplay.suites.conditions.questions import load_questions

runner = CliRunner()


def _app():  # type: ignore[no-untyped-def]
    cli_main._add_suite_groups()
    return cli_main.app


@pytest.fixture()
def lab_table(data_dir: Path, tmp_path: Path) -> Path:
    """A lab's own table: the real EDBO+ cross-coupling rows, one reaction per campaign."""
    src = data_dir / "reactions/edboplus_torres2022/crosscoupling_measured_rows_DERIVED.csv"
    out = tmp_path / "my_screen.csv"
    with src.open() as fin, out.open("w", newline="") as fout:
        reader = csv.DictReader(fin)
        writer = csv.DictWriter(fout, fieldnames=[*reader.fieldnames, "ee_note"])  # type: ignore[list-item]
        writer.writeheader()
        for row in reader:
            writer.writerow({**row, "ee_note": ""})
    return out


def test_importer_compiles_a_lab_table(lab_table: Path) -> None:
    compiled = import_table(
        lab_table,
        ImportOptions(
            ["campaign"],
            ["Ligand", "Additive", "Ni source", "Solvent"],
            "yield",
            ee_col="ee",
            dataset="my_screen",
        ),
    )
    assert compiled.questions
    assert compiled.qc["my_screen"]["groups"] == 3  # one reaction per campaign
    assert all(t["rows"] <= 12 for t in compiled.tables)  # larger campaigns are sliced
    q = compiled.questions[0]
    assert q["meta"]["dataset"] == "my_screen"
    assert q["meta"]["scores"][0]["ee"] is not None
    with pytest.raises(DataError, match="Yield"):
        import_table(lab_table, ImportOptions(["campaign"], ["Ligand"], "Yield"))


def test_cli_compile_run_leaderboard(lab_table: Path, tmp_path: Path) -> None:
    app = _app()
    out = tmp_path / "q.jsonl"
    result = runner.invoke(
        app,
        [
            "conditions",
            "compile",
            "--table",
            str(lab_table),
            "--reaction-cols",
            "campaign",
            "--condition-cols",
            "Ligand,Additive,Ni source,Solvent",
            "--yield-col",
            "yield",
            "--ee-col",
            "ee",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["n_questions"] == len(load_questions(out))
    assert (tmp_path / "q.jsonl.spec.json").is_file()
    store = tmp_path / "s.db"
    for agent in ("random", "ranker"):
        r = runner.invoke(
            app,
            [
                "conditions",
                "run",
                "--questions",
                str(out),
                "--agent",
                agent,
                "--store",
                str(store),
                "--json",
            ],
        )
        assert r.exit_code == 0, r.output
    board = runner.invoke(app, ["conditions", "leaderboard", "--store", str(store), "--json"])
    assert board.exit_code == 0
    assert len(json.loads(board.output)["runs"]) == 2
    preds = tmp_path / "preds.jsonl"
    qs = load_questions(out)
    preds.write_text(
        "".join(
            json.dumps({"id": q["id"], "text": "Answer: 1"}) + "\n"
            for q in qs
            if q["question_type"] != "fib_all"
        )
    )
    scored = runner.invoke(
        app, ["conditions", "score", "--questions", str(out), "--predictions", str(preds), "--json"]
    )
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output)["missing_predictions"] > 0


def test_cli_compile_dataset_and_errors(tmp_path: Path, data_dir: Path) -> None:
    app = _app()
    out = tmp_path / "d.jsonl"
    r = runner.invoke(
        app,
        [
            "conditions",
            "compile",
            "--dataset",
            "edbo_mitsunobu",
            "--out",
            str(out),
            "--data-dir",
            str(data_dir),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    counts = json.loads(r.output)["counts"]["edbo_mitsunobu"]
    assert counts["mc_all"] >= 1 and counts["mc_single"] >= counts["mc_all"]
    bad = runner.invoke(app, ["conditions", "compile", "--dataset", "nope", "--out", str(out)])
    assert bad.exit_code != 0
    assert "unknown conditions dataset" in str(bad.exception)
