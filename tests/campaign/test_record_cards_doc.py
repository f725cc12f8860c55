"""The cards in docs/record-cards.md ("Compile your own lab record" and its worked example)
compile as written, each on a generated table of its columns (the public table is not here)."""

from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path

import numpy as np

from labreplay.cli.main import run

DOC = Path(__file__).resolve().parents[2] / "docs" / "record-cards.md"


def test_doc_card_compiles(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- card: .*? -->\n```toml\n(.*?)```", text, re.S)
    assert block is not None, "the card block is gone from docs/record-cards.md"
    rng = np.random.default_rng(3)
    table = tmp_path / "my_screen.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["well", "ligand", "base", "temperature_c", "yield"])
        for i in range(600):
            out.writerow([f"A{i}", f"lig{i % 8}", f"base{i % 3}", 80, f"{rng.uniform(0, 100):.1f}"])
    sha = hashlib.sha256(table.read_bytes()).hexdigest()
    card = tmp_path / "my-screen.card.toml"
    card.write_text(block.group(1).replace("PUT-THE-SHA256-OF-my_screen.csv-HERE", sha))
    out_dir = tmp_path / "specs"
    assert run(["campaign", "compile", "--record-card", str(card), "--seeds", "0-4",
                "--out", str(out_dir)]) == 0  # fmt: skip
    assert sorted(p.name for p in out_dir.iterdir()) == [f"seed{s}" for s in range(5)]


def test_worked_example_card_compiles(tmp_path):
    """The worked example's card, on a generated table with the public file's name and columns
    (its sha256 replaced by the generated file's)."""
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- worked card: .*? -->\n```toml\n(.*?)```", text, re.S)
    assert block is not None, "the worked example's card block is gone from docs/record-cards.md"
    rng = np.random.default_rng(5)
    table = tmp_path / "Denmark_cleaned.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["Catalyst", "Imine", "Thiol", "Delta_Delta_G"])
        for c in range(12):
            for i in range(5):
                for t in range(5):
                    out.writerow([f"cat{c}", f"imine{i}", f"thiol{t}", f"{rng.normal(1, 0.7):.4f}"])
    published = re.search(r'sha256 = "([0-9a-f]{64})"', block.group(1))
    assert published is not None
    sha = hashlib.sha256(table.read_bytes()).hexdigest()
    card = tmp_path / "denmark-cpa-thiol.card.toml"
    card.write_text(block.group(1).replace(published.group(1), sha))
    out_dir = tmp_path / "specs"
    assert run(["campaign", "compile", "--record-card", str(card), "--seeds", "0-2",
                "--out", str(out_dir)]) == 0  # fmt: skip
    assert sorted(p.name for p in out_dir.iterdir()) == [f"seed{s}" for s in range(3)]
