"""The Precursor Genome's spec hashes on partition seeds 0-4, recorded before record cards.

The hashes in `pg_spec_hashes_seeds0-4.json` were computed on main before the record-card
compile path existed: compiling through the built-in card must keep every one of them (and
the protocol numbers: 6 evaluation precursors, 255-pair panel, 6 long x 32, 6 short covering
63, 780 context, budgets 12/36/3).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labreplay.suites.campaign.api import compile_specs

RECORDED = json.loads(
    (Path(__file__).parent / "pg_spec_hashes_seeds0-4.json").read_text(encoding="utf-8")
)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_pg_spec_hashes_and_numbers_unchanged(seed, pg_records):
    part, specs, index = compile_specs(record="precursor-genome", seed=seed, records=pg_records)
    assert {s.body["assignment"]["id"]: s.spec_hash for s in specs} == RECORDED[str(seed)]
    assert len(part.eval_precursors) == 6
    assert (index["panel_size"], index["context_size"]) == (255, 780)
    assert (index["long_experiments"], index["short_experiments"]) == (192, 63)
    kinds = [a["kind"] for a in index["assignments"]]
    assert kinds.count("long") == 6 and kinds.count("short") == 6
    long = [a for a in index["assignments"] if a["kind"] == "long"]
    assert {a["candidates"] for a in long} == {32}
    assert {tuple(sorted(a["budgets"].items())) for a in long} == {
        (("evidence", 36), ("experiments", 12), ("reviews", 3))
    }
