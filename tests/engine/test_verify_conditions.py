"""`store verify` on a conditions store: a headline score UPDATEd in place (to 0.99), a
status demoted to failed and an edited summary detail each fail, naming run, table and field;
the summary detail and the status are re-derived (nothing left unverifiable). Real questions
from the real table."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from labreplay.cli.main import run as cli

FORGERIES = {
    "score": (
        "UPDATE scores SET value=0.99 WHERE metric=(SELECT MIN(metric) FROM scores "
        "WHERE value IS NOT NULL)",
        "table scores, field ",
    ),
    "status": ("UPDATE runs SET status='failed'", "table runs, field status"),
    "summary-detail": (
        "UPDATE scores SET detail=replace(detail, '\"n\":', '\"n\":1') WHERE metric='summary'",
        "field summary.detail",
    ),
}


def test_forged_conditions_figures_fail_verify(
    question_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "c.sqlite"
    args = ["conditions", "run", "--questions", str(question_file), "--limit", "20"]
    assert cli([*args, "--agent", "ranker", "--store", str(store)]) == 0
    capsys.readouterr()
    assert cli(["store", "verify", "--store", str(store), "--json"]) == 0
    clean = json.loads(capsys.readouterr().out)
    assert clean["problems"] == [] and clean["unverifiable"] == [], clean
    for name, (sql, expected) in FORGERIES.items():
        forged = shutil.copy(store, tmp_path / f"{name}.sqlite")
        conn = sqlite3.connect(forged)
        with conn:
            assert conn.execute(sql).rowcount >= 1, name
        conn.close()
        assert cli(["store", "verify", "--store", str(forged), "--json"]) == 1, name
        problems = json.loads(capsys.readouterr().out)["problems"]
        assert any(expected in p for p in problems), (name, problems)
