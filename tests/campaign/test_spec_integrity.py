"""A spec whose bytes were modified refuses to run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

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
    import subprocess
    import sys

    from labreplay.suites.campaign.compiler import write_specs

    index = {
        "assignments": [{"id": "long-1", "file": "long-1.json", "spec_hash": pg_specs[0].spec_hash}]
    }
    write_specs(tmp_path / "specs", index, pg_specs[:1])
    # The recorded outcomes live in the sealed evaluator file beside the agent-visible spec.
    spec_file = tmp_path / "specs" / "sealed" / "long-1.sealed.json"
    assert '"valid":true' not in (tmp_path / "specs" / "long-1.json").read_text()
    spec_file.write_text(spec_file.read_text().replace('"valid":true', '"valid":false', 1))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "labreplay.cli.main",
            "campaign",
            "run",
            "--specs",
            str(tmp_path / "specs"),
            "--agent",
            "random",
            "--store",
            str(tmp_path / "s.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "refusing to run" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert json.loads((tmp_path / "specs" / "index.json").read_text())["assignments"]


# ------------------------------------------------------------------ firewall: outcome flips
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


def test_agent_visible_files_are_byte_identical_when_held_out_outcomes_change(
    pg_records: list[Record], pg_compiled: Any, tmp_path: Path
) -> None:
    from labreplay.compile.spec import load_spec
    from labreplay.suites.campaign.api import compile_specs
    from labreplay.suites.campaign.compiler import write_specs

    part, specs, index = pg_compiled
    panel = set(part.panel)  # every candidate and held-out query of every assignment
    _, flipped_specs, flipped_index = compile_specs(
        record="precursor-genome", seed=0, records=_flipped(pg_records, panel)
    )
    # The flip reaches the evaluator: outcomes, the acceleration target and the spec hashes.
    assert [s.spec_hash for s in specs] != [s.spec_hash for s in flipped_specs]
    assert specs[0].body["acceleration_target"] != flipped_specs[0].body["acceleration_target"]
    write_specs(tmp_path / "a", index, specs)
    write_specs(tmp_path / "b", flipped_index, flipped_specs)
    visible = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.json"))
    visible = [p for p in visible if p.parts[0] != "sealed"]
    assert len(visible) == len(specs) + 1  # every spec file and index.json
    for rel in visible:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    sealed = [p for p in (tmp_path / "a" / "sealed").iterdir()]
    assert any((tmp_path / "b" / "sealed" / p.name).read_bytes() != p.read_bytes() for p in sealed)
    # Each side still rejoins into its own full spec, target included.
    first = index["assignments"][0]["file"]
    assert load_spec(tmp_path / "a" / first).spec_hash == specs[0].spec_hash
    assert load_spec(tmp_path / "b" / first).spec_hash == flipped_specs[0].spec_hash
    assert "acceleration_target" not in json.loads((tmp_path / "a" / first).read_text())["body"]
