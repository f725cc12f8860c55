"""A spec whose bytes were modified refuses to run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from labreplay.compile.spec import load_spec, write_spec
from labreplay.errors import SpecError
from labreplay.records import Record


def test_modified_spec_refuses_to_load(pg_specs, tmp_path: Path):
    path = tmp_path / "long-1.json"
    write_spec(pg_specs[0], path)
    assert load_spec(path).spec_hash == pg_specs[0].spec_hash
    text = path.read_text(encoding="utf-8")
    # Change one recorded outcome inside the evaluator section.
    tampered = text.replace('"unreacted"', '"transformed"', 1)
    assert tampered != text
    path.write_text(tampered, encoding="utf-8")
    with pytest.raises(SpecError, match="does not match its recorded spec_hash"):
        load_spec(path)
    path.write_text(text.replace("{", "{ ", 1), encoding="utf-8")
    with pytest.raises(SpecError, match="canonical form"):
        load_spec(path)
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_spec(path)


def test_cli_run_refuses_tampered_spec(pg_specs, tmp_path: Path):
    import json

    from tests.reliability.conftest import run_cli_in_process

    from labreplay.suites.campaign.compiler import write_specs

    index = {
        "assignments": [{"id": "long-1", "file": "long-1.json", "spec_hash": pg_specs[0].spec_hash}]
    }
    write_specs(tmp_path / "specs", index, pg_specs[:1])
    # The recorded outcomes live in the sealed evaluator file beside the agent-visible spec.
    spec_file = tmp_path / "specs" / "sealed" / "long-1.sealed.json"
    assert '"valid":true' not in (tmp_path / "specs" / "long-1.json").read_text()
    spec_file.write_text(spec_file.read_text().replace('"valid":true', '"valid":false', 1))
    proc = run_cli_in_process(
        "campaign", "run", "--specs", str(tmp_path / "specs"), "--agent", "random",
        "--store", str(tmp_path / "s.sqlite"),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "refusing to run" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert json.loads((tmp_path / "specs" / "index.json").read_text())["assignments"]


# ------------------------------------------------------------------ firewall: outcome flips
# What may differ between two compiles whose records differ only in the held-out outcomes (every
# candidate and query of every assignment, and the withheld rest of the panel): nothing an agent
# can read. Every file outside sealed/ (the spec files and index.json) is byte-identical; the
# data-file and card hashes, the spec hashes, the targets and a table's QC are sealed.
def assert_only_sealed_files_differ(a: Path, b: Path) -> list[Path]:
    """The agent-visible files of two compile directories (all but sealed/), each identical in
    both; some sealed file differs (the flip reached the evaluator)."""
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    visible = [p for p in files if "sealed" not in p.parts]
    for rel in visible:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    sealed = [p for p in files if "sealed" in p.parts]
    assert any((a / p).read_bytes() != (b / p).read_bytes() for p in sealed)
    return visible


def _flipped(records: list[Record], ids: set[str]) -> list[Record]:
    """The same records with every listed experiment's recorded outcome changed: a valid one
    gets another reaction category, a physical failure becomes valid."""
    cats = ["completely_reacted", "transformed", "partially_reacted", "unreacted"]
    out = []
    for r in records:
        if r.record_id in ids:
            category = r.outcome.get("category")
            if r.outcome.get("valid") is True and category in cats:
                new = {**r.outcome, "category": cats[(cats.index(category) + 1) % len(cats)]}
            else:
                new = {**r.outcome, "valid": True, "category": "unreacted"}
            r = dataclasses.replace(r, outcome=new)
        out.append(r)
    return out


@pytest.mark.parametrize("record", ["precursor-genome", "alab-pipeline"])
def test_agent_visible_files_are_byte_identical_when_held_out_outcomes_change(
    record: str, request: pytest.FixtureRequest, data_dir: Path, tmp_path: Path
) -> None:
    from labreplay.compile.spec import load_spec
    from labreplay.suites.campaign.api import compile_specs, load_records
    from labreplay.suites.campaign.compiler import write_specs

    if record == "precursor-genome":
        records = request.getfixturevalue("pg_records")
        part, specs, index = request.getfixturevalue("pg_compiled")
    else:
        records = load_records(record, data_dir)
        part, specs, index = compile_specs(record=record, seed=0, records=records)
    panel = set(part.panel)  # every candidate and held-out query of every assignment
    _, flipped_specs, flipped_index = compile_specs(
        record=record, seed=0, records=_flipped(records, panel)
    )
    # The flip reaches the evaluator: outcomes, the acceleration target and the spec hashes.
    assert [s.spec_hash for s in specs] != [s.spec_hash for s in flipped_specs]
    assert specs[0].body["acceleration_target"] != flipped_specs[0].body["acceleration_target"]
    write_specs(tmp_path / "a", index, specs)
    write_specs(tmp_path / "b", flipped_index, flipped_specs)
    visible = assert_only_sealed_files_differ(tmp_path / "a", tmp_path / "b")
    assert len(visible) == len(specs) + 1  # every spec file and index.json
    # Each side still rejoins into its own full spec, target included.
    first = index["assignments"][0]["file"]
    assert load_spec(tmp_path / "a" / first).spec_hash == specs[0].spec_hash
    assert load_spec(tmp_path / "b" / first).spec_hash == flipped_specs[0].spec_hash
    assert "acceleration_target" not in json.loads((tmp_path / "a" / first).read_text())["body"]


# A lab table the code has never seen, generated here (not read from the data dir), through a
# record card of each table rule: `bins` (a numeric outcome cut into bins) and `columns` (a
# category column with a validity column).
_CARD = """\
card_version = 1
name = "flip-plate"
grouping = ["catalyst"]
sources = [{{ path = "plate.csv", sha256 = "{sha}" }}]
table = {{ file = "plate.csv" }}
experiment = {{ id = "sample", descriptors = ["catalyst", "solvent", "temp"] }}
{outcome}
[[evidence]]
kind = "assay"
reveals = "{reveals}"
shows = "the measured outcome"
budget = "evidence"
price = 1
"""
_OUTCOMES = {
    "bins": (
        'outcome = { rule = "bins", column = "conversion", bins = [{ category = "low", '
        'below = 30 }, { category = "mid", below = 70 }, { category = "high" }] }',
        "conversion",
    ),
    "columns": (
        'outcome = { rule = "columns", category_column = "phase", valid_column = "ok", '
        'categories = ["amorphous", "crystalline", "mixed"] }',
        "phase",
    ),
}
_PHASES = ["amorphous", "crystalline", "mixed"]


def _plate_rows(n: int = 480) -> list[dict[str, str]]:
    import random

    rng = random.Random(46)
    rows = []
    for i in range(n):
        catalyst = f"cat{i % 8}"
        conversion = min(99.99, max(0.0, rng.gauss(15 + 8 * (i % 8), 20)))
        rows.append(
            {
                "sample": f"S{i:04d}",
                "catalyst": catalyst,
                "solvent": ["dmf", "thf", "meoh"][i % 3],
                "temp": str(40 + 10 * (i % 5)),
                "conversion": f"{conversion:.2f}" if i % 23 else "",
                "phase": _PHASES[int(conversion) % 3],
                "ok": "false" if i % 19 == 0 else "true",
            }
        )
    return rows


def _flip_row(row: dict[str, str]) -> dict[str, str]:
    """Another outcome under either rule: conversion + 40 (mod 100) leaves its bin (low -> mid,
    mid -> high or low, high -> low or mid); the phase rotates; a failed row becomes valid."""
    conversion = f"{(float(row['conversion']) + 40) % 100:.2f}" if row["conversion"] else ""
    phase = _PHASES[(_PHASES.index(row["phase"]) + 1) % 3]
    return {**row, "conversion": conversion, "phase": phase, "ok": "true"}


def _write_plate(folder: Path, rule: str, rows: list[dict[str, str]]) -> Path:
    import csv
    import hashlib

    folder.mkdir()
    with (folder / "plate.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    sha = hashlib.sha256((folder / "plate.csv").read_bytes()).hexdigest()
    outcome, reveals = _OUTCOMES[rule]
    card = folder / "flip-plate.card.toml"
    card.write_text(_CARD.format(sha=sha, outcome=outcome, reveals=reveals), encoding="utf-8")
    return card


@pytest.mark.parametrize("rule", sorted(_OUTCOMES))
def test_card_compile_visible_files_identical_when_held_out_outcomes_change(
    rule: str, tmp_path: Path
) -> None:
    from labreplay.cli.main import run
    from labreplay.suites.campaign.api import compile_specs

    rows = _plate_rows()
    card = _write_plate(tmp_path / "lab", rule, rows)
    part, specs, index = compile_specs(record_card=card, seed=0, context_detail="rows")
    panel = set(part.panel)
    assert len(panel) >= 40 and len(specs) >= 2
    flipped = [_flip_row(r) if r["sample"] in panel else r for r in rows]
    assert flipped != rows
    flipped_card = _write_plate(tmp_path / "flipped-lab", rule, flipped)
    _, flipped_specs, flipped_index = compile_specs(
        record_card=flipped_card, seed=0, context_detail="rows"
    )
    # The flip reaches the evaluator and the QC (the held-out queries' base-rate scores).
    assert [s.spec_hash for s in specs] != [s.spec_hash for s in flipped_specs]
    assert index["qc"] != flipped_index["qc"]
    for folder, path in (("a", card), ("b", flipped_card)):
        assert run(["campaign", "compile", "--record-card", str(path), "--seed", "0",
                    "--context-detail", "rows", "--out", str(tmp_path / folder)]) == 0  # fmt: skip
    visible = assert_only_sealed_files_differ(tmp_path / "a", tmp_path / "b")
    assert len(visible) == len(specs) + 1  # every spec file and index.json
    shown = json.loads((tmp_path / "a" / "index.json").read_text(encoding="utf-8"))
    assert "qc" not in shown and "data_files" not in shown
    sealed = json.loads((tmp_path / "a" / "sealed" / "index.sealed.json").read_text("utf-8"))
    assert sealed["qc"] == json.loads(json.dumps(index["qc"]))
