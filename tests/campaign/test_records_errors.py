"""Bad input -> a DataError naming file, record, field and value; nothing half-written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from labreplay.errors import DataError
from labreplay.records.sources import resolve_data_dir
from labreplay.suites.campaign.records_alab import load_alab_pipeline
from labreplay.suites.campaign.records_ledger import load_official_ledger
from labreplay.suites.campaign.records_pg import load_precursor_genome

PG = "precursor_genome/pg_samples.jsonl"


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR not set")
    return resolve_data_dir()


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("LABREPLAY_CACHE_DIR", str(cache))
    return cache


def _pg_copy(data_dir: Path, tmp_path: Path, lines: list[str]) -> Path:
    target = tmp_path / "data"
    (target / "precursor_genome").mkdir(parents=True)
    (target / PG).write_text("\n".join(lines) + "\n")
    return target


def _real_lines(data_dir: Path, n: int = 5) -> list[str]:
    return (data_dir / PG).read_text().splitlines()[:n]


def test_missing_pg_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"pg_samples\.jsonl.*not found"):
        load_precursor_genome(tmp_path, with_pipeline=False)


def test_truncated_pg_line(data_dir: Path, tmp_path: Path) -> None:
    lines = _real_lines(data_dir)
    lines[3] = lines[3][: len(lines[3]) // 2]  # a line cut in the middle of a write
    root = _pg_copy(data_dir, tmp_path, lines)
    with pytest.raises(DataError, match=r"pg_samples\.jsonl, record line 4.*corrupt or truncated"):
        load_precursor_genome(root, with_pipeline=False)


def test_pg_missing_field(data_dir: Path, tmp_path: Path) -> None:
    lines = _real_lines(data_dir)
    row = json.loads(lines[2])
    del row["reaction_category"]
    lines[2] = json.dumps(row)
    root = _pg_copy(data_dir, tmp_path, lines)
    with pytest.raises(DataError) as caught:
        load_precursor_genome(root, with_pipeline=False)
    assert caught.value.record == row["sample_id"]
    assert caught.value.field == "reaction_category"
    assert "pg_samples.jsonl" in str(caught.value.file)


def test_pg_bad_category_value(data_dir: Path, tmp_path: Path) -> None:
    lines = _real_lines(data_dir)
    row = json.loads(lines[0])
    row["reaction_category"] = "exploded"
    lines[0] = json.dumps(row)
    root = _pg_copy(data_dir, tmp_path, lines)
    with pytest.raises(DataError) as caught:
        load_precursor_genome(root, with_pipeline=False)
    assert (caught.value.field, caught.value.value) == ("reaction_category", "exploded")
    assert caught.value.record == row["sample_id"]


def test_pg_unparseable_precursor(data_dir: Path, tmp_path: Path) -> None:
    lines = _real_lines(data_dir)
    row = json.loads(lines[1])
    row["precursor_2"] = "not a formula!"
    lines[1] = json.dumps(row)
    root = _pg_copy(data_dir, tmp_path, lines)
    with pytest.raises(DataError) as caught:
        load_precursor_genome(root, with_pipeline=False)
    assert (caught.value.field, caught.value.value) == ("precursors", "not a formula!")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("temperature_c", "900 C"),
        ("precursor_1", 3),
        ("snapshot_refinement_rwp", True),
        ("phases_full", [{"name": "NiO", "weight_fraction": "0.5"}]),
        ("human_quality_score_history", "2"),
    ],
)
def test_pg_wrong_json_type(data_dir: Path, tmp_path: Path, field: str, value: object) -> None:
    lines = _real_lines(data_dir)
    row = json.loads(lines[1])
    row[field], row["human_quality_score"] = value, 2
    lines[1] = json.dumps(row)
    root = _pg_copy(data_dir, tmp_path, lines)
    with pytest.raises(DataError) as caught:
        load_precursor_genome(root, with_pipeline=False)
    assert (caught.value.record, caught.value.field) == (row["sample_id"], field)


def test_ledger_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="ledger file not found"):
        load_official_ledger(tmp_path / "absent.json")
    truncated = tmp_path / "truncated.json"
    truncated.write_text('{"samples": [{"sample_id": "PG_0102", "target_comp')
    with pytest.raises(DataError, match=r"truncated\.json.*corrupt or truncated JSON at line 1"):
        load_official_ledger(truncated)
    no_samples = tmp_path / "no_samples.json"
    no_samples.write_text('{"rows": []}')
    with pytest.raises(DataError) as caught:
        load_official_ledger(no_samples)
    assert caught.value.field == "samples"
    missing_field = tmp_path / "missing_field.json"
    missing_field.write_text(json.dumps({"samples": [{"sample_id": "PG_0102"}]}))
    with pytest.raises(DataError) as caught:
        load_official_ledger(missing_field)
    assert (caught.value.record, caught.value.field) == ("PG_0102", "target_compound")
    sample = {"sample_id": "PG_0102", "target_compound": "NiWO4", "outcome": {},
              "precursors": [{"formula": "NiO"}, {"formula": "WO3"}],
              "synthesis": {"heating_temperature": "900 C"}, "reaction_energy_ev_per_atom": None}  # fmt: skip
    text_temperature = tmp_path / "text_temperature.json"
    text_temperature.write_text(json.dumps({"samples": [sample]}))
    with pytest.raises(DataError) as caught:
        load_official_ledger(text_temperature)
    assert caught.value.field == "synthesis.heating_temperature"


def _pipeline_copy(data_dir: Path, tmp_path: Path) -> Path:
    """Parquet tables copied (small); XRD files left out so the build stays fast."""
    root = tmp_path / "data"
    shutil.copytree(data_dir / "alab_pipeline" / "parquet", root / "alab_pipeline" / "parquet")
    (root / "alab_pipeline" / "xrd").mkdir()
    for p in (root / "alab_pipeline" / "parquet").iterdir():
        p.chmod(0o644)
    return root


def test_alab_missing_table(data_dir: Path, tmp_path: Path, isolated_cache: Path) -> None:
    root = _pipeline_copy(data_dir, tmp_path)
    (root / "alab_pipeline" / "parquet" / "workflow_tasks.parquet").unlink()
    with pytest.raises(DataError, match=r"workflow_tasks\.parquet.*not found"):
        load_alab_pipeline(root)


def test_alab_missing_column(data_dir: Path, tmp_path: Path, isolated_cache: Path) -> None:
    root = _pipeline_copy(data_dir, tmp_path)
    table = root / "alab_pipeline" / "parquet" / "powder_doses.parquet"
    pd.read_parquet(table).drop(columns=["actual_mass"]).to_parquet(table)
    with pytest.raises(DataError) as caught:
        load_alab_pipeline(root)
    assert caught.value.field == "actual_mass"
    assert "powder_doses.parquet" in str(caught.value.file)
    assert not list(isolated_cache.glob("*.json"))  # nothing cached from a failed build


def test_alab_corrupt_refinement_and_pattern(
    data_dir: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    root = _pipeline_copy(data_dir, tmp_path)
    xrd = root / "alab_pipeline" / "xrd"
    (xrd / "PG_1848-1_result.json").write_text('{"experiment_name": "PG_1848-1", "succ')
    with pytest.raises(DataError, match=r"PG_1848-1_result\.json.*unreadable automated"):
        load_alab_pipeline(root)
    (xrd / "PG_1848-1_result.json").unlink()
    (xrd / "PG_1848-1.xy.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    with pytest.raises(DataError, match=r"PG_1848-1\.xy\.gz.*unreadable XRD pattern"):
        load_alab_pipeline(root)
    assert not list(isolated_cache.glob("*.json"))


def test_alab_without_raw_files_keeps_typed_missing(
    data_dir: Path, tmp_path: Path, isolated_cache: Path
) -> None:
    records = load_alab_pipeline(_pipeline_copy(data_dir, tmp_path))
    assert len(records) == 592
    reasons = {r.evidence["xrd_scan"].reason for r in records}
    assert reasons == {"no XRD pattern file in the pipeline export"}
    assert all(r.outcome["valid"] is not True for r in records)  # no XRD: not characterizable
