"""Card fields for a table with several outcome columns (`outcome.column` chooses the claim's,
`outcome.secondary` records the others behind the firewall). Each table is written here; a bad
value exits 2 with one line naming the card, the field and the value (`refused_card`)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from tests.campaign.conftest import plate_card, refused_card

from labreplay.cli.main import run
from labreplay.suites.campaign.api import compile_specs

CARD = plate_card(
    "toy-ee",
    """\
[experiment]
id = {{ row_number = true }}
descriptors = {descriptors}

[outcome]
rule = "bins"
column = "{outcome}"
bins = [{{ category = "low", below = 50 }}, {{ category = "high" }}]
{extra}
[[evidence]]
kind = "assay"
reveals = "{outcome}"
shows = "the measured value (%)"
budget = "evidence"
price = 1
""",
)


def plate(folder: Path, ee=None, rows: int = 480) -> str:
    """A plate with two outcome columns, yield and ee; `ee(i, value)` may replace row i's ee.
    Returns the file's sha256."""
    rng = np.random.default_rng(5)
    path = folder / "plate.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["ligand", "base", "solvent", "yield", "ee"])
        for i in range(rows):
            y, e = f"{rng.uniform(0, 100):.1f}", f"{rng.uniform(0, 100):.1f}"
            out.writerow([f"L{i % 12}", f"B{i % 5}", f"S{i % 2}", y, ee(i, e) if ee else e])
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_card(folder: Path, sha: str, *, outcome: str = "yield", extra: str = "",
               descriptors: str = '["ligand", "base", "solvent"]', table: str = "") -> Path:  # fmt: skip
    path = folder / "toy-ee.card.toml"
    text = CARD.format(sha=sha, outcome=outcome, extra=extra, descriptors=descriptors, table=table)
    path.write_text(text, encoding="utf-8")
    return path


def _visible_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*.json"))
            if "sealed" not in p.relative_to(out).parts}  # fmt: skip


def test_secondary_outcome_is_recorded_sealed_and_never_shown(tmp_path):
    """An outcome flip: other ee values change the sealed records, no agent-visible byte."""
    outs = []
    for name, ee in (("a", None), ("b", lambda i, e: f"{100 - float(e):.1f}")):
        folder = tmp_path / name
        folder.mkdir()
        card = write_card(folder, plate(folder, ee), extra='secondary = ["ee"]')
        out = folder / "specs"
        assert run(["campaign", "compile", "--record-card", str(card), "--out", str(out)]) == 0
        outs.append(out)
        _, specs, _ = compile_specs(record_card=card, seed=0)
        evaluator = specs[0].body["evaluator"]
        assert all(set(r["secondary"]) == {"ee"} for r in evaluator.values())
        assert "ee" not in json.dumps(specs[0].body["context_rows"])
    visible = [_visible_files(o) for o in outs]
    assert visible[0] and visible[0] == visible[1]
    sealed = [sorted((o / "sealed").rglob("*.json")) for o in outs]
    assert [p.read_bytes() for p in sealed[0]] != [p.read_bytes() for p in sealed[1]]


def test_the_card_chooses_which_outcome_column_is_the_claims(tmp_path):
    sha = plate(tmp_path)
    by_yield = compile_specs(record_card=write_card(tmp_path, sha), seed=0)[1]
    card = write_card(tmp_path, sha, outcome="ee", extra='secondary = ["yield"]')
    by_ee = compile_specs(record_card=card, seed=0)[1]

    def outcomes(specs):  # fmt: skip
        return [r["outcome"] for s in specs for r in s.body["evaluator"].values()]

    assert outcomes(by_yield) != outcomes(by_ee)
    assert all("yield" in r["secondary"] for s in by_ee for r in s.body["evaluator"].values())


@pytest.mark.parametrize(
    "edit, field, value",
    [
        ({"descriptors": '["ligand", "base", "ee"]'}, "experiment.descriptors[2]", "ee"),
        ({"table": 'filter = { ee = "50.0" }'}, "table.filter.ee", "ee"),
        ({"extra": 'secondary = ["yield"]'}, "outcome.secondary[0]", "yield"),
        ({"extra": 'secondary = ["ee", "ee"]'}, "outcome.secondary[1]", "ee"),
        ({"extra": 'secondary = ["purity"]'}, "outcome.secondary[0]", "purity"),
        ({"extra": "secondary = []"}, "outcome.secondary", "[]"),
    ],
)
def test_bad_secondary_outcome_isrefused_card(edit, field, value, tmp_path, capsys):
    card = write_card(tmp_path, plate(tmp_path), **{"extra": 'secondary = ["ee"]', **edit})
    err = refused_card(card, field, value, capsys)
    if field.startswith("experiment"):
        assert "secondary outcome" in err


# A table published without a header row: `header = false`, its names in `table.columns`.
NAMES = '["ligand", "base", "solvent", "yield", "ee"]'


def headerless(folder: Path, extra_cell_at: int | None = None) -> str:
    """`plate`'s rows without its header line (a row may get an extra cell)."""
    plate(folder)
    path = folder / "plate.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[1:]
    if extra_cell_at is not None:
        lines[extra_cell_at] = lines[extra_cell_at].rstrip("\r\n") + ",9\r\n"
    path.write_text("".join(lines), encoding="utf-8", newline="")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_headerless_table_is_read_with_the_cards_column_names(tmp_path):
    sha = headerless(tmp_path)
    card = write_card(tmp_path, sha, table=f"header = false\ncolumns = {NAMES}\n")
    _, specs, index = compile_specs(record_card=card, seed=0)
    assert index["qc"]["rows"] == 480  # the first line is a row, not a header
    (with_header := tmp_path / "h").mkdir()
    _, reference, _ = compile_specs(record_card=write_card(with_header, plate(with_header)), seed=0)
    assert [s.body["candidates"] for s in specs] == [s.body["candidates"] for s in reference]


@pytest.mark.parametrize(
    "table, field, value",
    [
        (
            'header = false\ncolumns = ["ligand", "base", "solvent", "yield"]\n',
            "table.columns",
            "ligand",
        ),
        (
            'header = false\ncolumns = ["ligand", "base", "solvent", "yield", "ee", "x"]\n',
            "table.columns",
            "ee",
        ),
        (
            'header = false\ncolumns = ["ligand", "base", "solvent", "yield", "base"]\n',
            "table.columns",
            "base",
        ),
        ("header = false\n", "table.header", "False"),
        (f"columns = {NAMES}\n", "table.columns", "ligand"),
        ("header = false\ncolumns = []\n", "table.columns", "[]"),
    ],
)
def test_bad_headerless_declaration_isrefused_card(table, field, value, tmp_path, capsys):
    card = write_card(tmp_path, headerless(tmp_path), table=table)
    err = refused_card(card, field, value, capsys)
    if "cells" in err:
        assert "line 1 of plate.csv has 5 cells" in err


def test_headerless_row_with_an_extra_cell_isrefused_card(tmp_path, capsys):
    card = write_card(tmp_path, headerless(tmp_path, extra_cell_at=6), table=f"header = false\ncolumns = {NAMES}\n")  # fmt: skip
    err = refused_card(card, "table.columns", "ligand", capsys)
    assert "line 7 of plate.csv has 6 cells but table.columns names 5" in err
