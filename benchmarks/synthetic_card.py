"""A seeded synthetic reaction table of N rows and its record card, written into a folder.

Descriptors: ligand (the grouping column, N / 200 levels, at least 24), base, solvent
(categorical), temperature_c and concentration_m (numeric); the yield depends on them and is
binned into three categories. Nothing is committed: benchmarks write it into a temporary folder.

    python benchmarks/synthetic_card.py ROWS FOLDER   # prints the card's path
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

CARD = """\
card_version = 1
name = "synthetic-{rows}"
grouping = ["ligand"]
[[sources]]
path = "table.csv"
sha256 = "{sha}"
[table]
file = "table.csv"
[experiment]
id = "well"
descriptors = ["ligand", "base", "solvent", "temperature_c", "concentration_m"]
[outcome]
rule = "bins"
column = "yield"
bins = [{{ category = "low", below = 10 }}, {{ category = "mid", below = 50 }}, {{ category = "high" }}]
[[evidence]]
kind = "yield_assay"
reveals = "yield"
shows = "the measured yield (%)"
budget = "evidence"
price = 1
"""


def write_card(folder: Path, rows: int, seed: int = 0, protocol: str = "") -> Path:
    """Writes `table.csv` and `synthetic-ROWS.card.toml` (with the table's sha256) into `folder`;
    `protocol`: a `[protocol]` section's lines to add (e.g. a campaign's size)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    i = np.arange(rows)
    ligands = max(24, rows // 200)
    ligand = i % ligands
    base, solvent = rng.integers(0, 5, rows), rng.integers(0, 7, rows)
    temperature = 40 + 20 * rng.integers(0, 4, rows)
    concentration = rng.uniform(0.05, 1.0, rows).round(3)
    effect = rng.normal(0, 20, ligands)[ligand] + 8 * base - 5 * solvent + 0.3 * temperature
    yields = np.clip(effect + 10 * concentration + rng.normal(0, 15, rows), 0, 100).round(2)
    table = pd.DataFrame({
        "well": [f"W{k:07d}" for k in i], "ligand": [f"L{k}" for k in ligand],
        "base": [f"B{k}" for k in base], "solvent": [f"S{k}" for k in solvent],
        "temperature_c": temperature, "concentration_m": concentration, "yield": yields,
    })  # fmt: skip
    path = folder / "table.csv"
    table.to_csv(path, index=False)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    card = folder / f"synthetic-{rows}.card.toml"
    text = CARD.format(rows=rows, sha=sha) + (f"[protocol]\n{protocol}" if protocol else "")
    card.write_text(text, encoding="utf-8")
    return card


if __name__ == "__main__":
    print(write_card(Path(sys.argv[2]), int(sys.argv[1])))
