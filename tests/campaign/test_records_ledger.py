"""The official-ledger loader agrees with the reconstruction loader on real samples.

The Zenodo ledger is not reachable here, so the fixture writes real `pg_samples.jsonl` rows in
the documented official layout (first refinement case of the first scan = the snapshot
refinement; the active case named by `active_scan_index` / `active_case_index`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from labreplay.records import Missing
from labreplay.records.sources import resolve_data_dir
from labreplay.suites.campaign.records_ledger import load_official_ledger
from labreplay.suites.campaign.records_pg import load_precursor_genome


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR not set")
    return resolve_data_dir()


def _phase_key(phases: list[dict[str, Any]]) -> list[tuple[str, float]]:
    return sorted((p["name"], round(p["weight_fraction"], 4)) for p in phases)


def _weights(phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": p["name"], "weight_fraction": p["weight_fraction"]} for p in phases]


def ledger_sample(row: dict[str, Any]) -> dict[str, Any]:
    full = row["phases_full"] or []
    snapshot = {"rank": None, "origin": None, "rwp": row["snapshot_refinement_rwp"]}
    snapshot["phase_weights"] = _weights(full)
    scan: dict[str, Any] = {"status": "valid", "is_active": True, "refinement_cases": []}
    sample: dict[str, Any] = {
        "sample_id": row["sample_id"],
        "target_compound": row["target"],
        "target_stoichiometry": row["target_stoichiometry"],
        "precursors": [{"formula": row["precursor_1"]}, {"name": row["precursor_2"]}],
        "synthesis": {"heating_temperature": row["temperature_c"], "heating_time": row["time_min"]},
        "reaction_energy_ev_per_atom": row["reaction_energy_ev_per_atom"],
        "outcome": {
            "reaction_category": row["reaction_category"],
            "phases": [
                {"name": p["name"], "weight_percent": 100 * p["weight_fraction"]} for p in full
            ],
        },
        "characterization": {"xrd": {"scans": [scan]}},
    }
    if row.get("active_refinement_rwp") is None:
        if row["snapshot_refinement_rwp"] is not None or full:
            scan["refinement_cases"] = [snapshot]
        return sample
    active = {
        "rank": row["active_refinement_rank"],
        "origin": row["active_refinement_origin"],
        "rwp": row["active_refinement_rwp"],
        "phase_weights": _weights(row["active_phases"]),
        "verification": {
            "human_quality_score": row["human_quality_score"],
            "human_quality_score_history": row["human_quality_score_history"],
        },
    }
    same_phases = _phase_key(full) == _phase_key(row["active_phases"])
    if same_phases and row["snapshot_refinement_rwp"] == row["active_refinement_rwp"]:
        scan["refinement_cases"], scan["active_case_index"] = [active], 0
    else:
        if same_phases:  # the recorded phase list is the active refinement's, not case 0's
            snapshot["phase_weights"] = None
        scan["refinement_cases"], scan["active_case_index"] = [snapshot, active], 1
    sample["active_scan_index"] = 0
    return sample


def test_official_layout_gives_the_same_records(data_dir: Path, tmp_path: Path) -> None:
    rows = [
        json.loads(line)
        for line in (data_dir / "precursor_genome" / "pg_samples.jsonl").read_text().splitlines()
    ]
    ledger = tmp_path / "ledger_precursor_genome.json"
    ledger.write_text(json.dumps({"samples": [ledger_sample(r) for r in rows]}))
    from_ledger = load_official_ledger(ledger)
    reconstructed = load_precursor_genome(data_dir, with_pipeline=False)
    assert len(from_ledger) == len(reconstructed) == 1035
    for a, b in zip(from_ledger, reconstructed, strict=True):
        assert a.record_id == b.record_id
        assert a.descriptors == b.descriptors, a.record_id
        assert a.outcome == b.outcome, a.record_id
        assert a.evidence["refinement"] == b.evidence["refinement"], a.record_id
        assert a.evidence["expert_review"] == b.evidence["expert_review"], a.record_id
    assert sum(isinstance(r.evidence["expert_review"], list) for r in from_ledger) == 500


def test_percent_weights_and_unknown_selection(tmp_path: Path) -> None:
    sample = {
        "sample_id": "PG_TEST",
        "target_compound": "Ag2B2H6O7",
        "precursors": [{"formula": "Ag2O"}, {"formula": "B(OH)3"}],
        "synthesis": {"heating_temperature": 200.0, "heating_time": None},
        "reaction_energy_ev_per_atom": 0.0,
        "outcome": {"reaction_category": "transformed", "phases": []},
        "characterization": {
            "xrd": {
                "scans": [
                    {
                        "refinement_cases": [
                            {"rwp": 6.56, "phase_weights": {"Ag": 60.0, "Ag2O": 40.0}}
                        ]
                    }
                ]
            }
        },
    }
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps({"samples": [sample]}))
    (record,) = load_official_ledger(path)
    content = record.evidence["refinement"][0]["content"]
    assert content["phases"] == [
        {"name": "Ag", "weight_fraction": 0.6},
        {"name": "Ag2O", "weight_fraction": 0.4},
    ]
    assert content["selected"] is None  # the sample names no active case
    assert record.descriptors["time_min"] == Missing("not recorded in ledger")
    assert record.descriptors["target_stoichiometry"] == Missing("not recorded in ledger")
    assert isinstance(record.evidence["expert_review"], Missing)
