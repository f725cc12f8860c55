"""Campaign record loaders on the real Precursor Genome and A-Lab pipeline data."""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labreplay._hashing import canonical_json
from labreplay.records import Missing, Record
from labreplay.records.sources import resolve_data_dir
from labreplay.suites.campaign.records_alab import load_alab_pipeline
from labreplay.suites.campaign.records_pg import CATEGORIES, load_precursor_genome

KINDS = (
    "execution_record",
    "thermal_history",
    "xrd_scan",
    "refinement",
    "automated_refinement",
    "expert_review",
)


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR not set")
    return resolve_data_dir()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private, initially empty evidence cache: the first load below is a cold build."""
    directory = tmp_path_factory.mktemp("evidence-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LABREPLAY_CACHE_DIR", str(directory))
        yield directory


@pytest.fixture(scope="module")
def alab(data_dir: Path, cache_dir: Path) -> list[Record]:
    return load_alab_pipeline(data_dir)  # cold: builds and writes the cache


@pytest.fixture(scope="module")
def pg(data_dir: Path, alab: list[Record]) -> list[Record]:
    return load_precursor_genome(data_dir)  # warm: reads the cache written above


def _by_id(records: list[Record]) -> dict[str, Record]:
    return {r.record_id: r for r in records}


def test_precursor_genome_counts(pg: list[Record]) -> None:
    assert len(pg) == 1035
    assert len({r.record_id for r in pg}) == 1035
    with_temperature = [r for r in pg if not isinstance(r.descriptors["temperature_c"], Missing)]
    assert len(with_temperature) == 981
    categories = Counter(r.outcome["category"] for r in pg if r.outcome["valid"] is True)
    assert categories == {
        "completely_reacted": 143,
        "transformed": 384,
        "partially_reacted": 113,
        "unreacted": 369,
    }
    failures = [r for r in pg if r.outcome["valid"] is False]
    assert len(failures) == 26
    assert all(isinstance(r.outcome["category"], Missing) for r in failures)
    assert sum(isinstance(r.evidence["expert_review"], list) for r in pg) == 500
    joined = [r for r in pg if r.provenance["pipeline_run"] is not None]
    assert len(joined) == 191
    assert all(isinstance(r.evidence["execution_record"], list) for r in joined)


def test_descriptors_shape(pg: list[Record]) -> None:
    for r in pg:
        d = r.descriptors
        assert len(d["precursors"]) == 2
        assert d["elements"] == sorted(set(d["elements"]))
        assert isinstance(d["target"], str) and d["target"]
    first = _by_id(pg)["PG_0102"].descriptors
    assert first["precursors"] == ["Ag2O", "Al(OH)3"]
    assert first["elements"] == ["Ag", "Al", "H", "O"]
    assert first["reaction_energy_ev_per_atom"] == pytest.approx(-0.0509)


def _items(records: list[Record]) -> Iterator[tuple[Record, dict[str, object]]]:
    for r in records:
        assert set(KINDS) <= set(r.evidence), r.record_id
        for kind in KINDS:
            value = r.evidence[kind]
            if isinstance(value, Missing):
                assert value.reason
                continue
            assert isinstance(value, list) and value, (r.record_id, kind)
            for item in value:
                assert item["kind"] == kind
                yield r, item


def _longest_list(value: object) -> int:
    if isinstance(value, dict):
        return max([_longest_list(v) for v in value.values()], default=0)
    if isinstance(value, list):
        return max([len(value), *(_longest_list(v) for v in value)])
    return 0


@pytest.mark.parametrize("which", ["pg", "alab"])
def test_evidence_items_serialisable_unique_compact(
    which: str, request: pytest.FixtureRequest
) -> None:
    records: list[Record] = request.getfixturevalue(which)
    ids: set[str] = set()
    for _, item in _items(records):
        assert set(item) == {"item_id", "kind", "summary", "content"}
        text = json.dumps(item, allow_nan=False)  # plain JSON, no NaN, no custom objects
        assert json.loads(text) == item
        assert isinstance(item["summary"], str) and "\n" not in item["summary"]
        assert _longest_list(item["content"]) <= 60, item["item_id"]
        assert item["item_id"] not in ids
        ids.add(str(item["item_id"]))
    for r in records:
        canonical_json(r.to_json())  # the whole record hashes


def test_no_outcome_value_in_descriptors(pg: list[Record], alab: list[Record]) -> None:
    for r in [*pg, *alab]:
        text = canonical_json(r.to_json()["descriptors"])
        for category in CATEGORIES:
            assert category not in text, r.record_id
        assert not set(r.outcome) & set(r.descriptors)
        assert "valid" not in r.descriptors


def test_heating_conflicts_between_pipeline_and_ledger(pg: list[Record]) -> None:
    conflicts = [c for r in pg for c in r.provenance["conflicts"]]
    kinds = Counter((c["kind"], c["field"]) for c in conflicts)
    # 46 runs record 60 min where the ledger says 240 min; 2 runs record a temperature and a
    # time where the ledger has neither.
    assert kinds == {
        ("values_differ", "time_min"): 46,
        ("ledger_not_recorded", "time_min"): 2,
        ("ledger_not_recorded", "temperature_c"): 2,
    }
    assert len({c["pipeline_run"] for c in conflicts}) == 48
    for r in pg:
        for c in r.provenance["conflicts"]:
            ledger = r.descriptors[c["field"]]  # the descriptor keeps the ledger's value
            assert c["ledger"] == (None if isinstance(ledger, Missing) else ledger)


def test_refinement_selection_and_review(pg: list[Record]) -> None:
    selected_counts = Counter()
    for r in pg:
        refinement = r.evidence["refinement"]
        if isinstance(refinement, Missing):
            continue
        flags = [item["content"]["selected"] for item in refinement]
        selected_counts[flags.count(True)] += 1
        has_review = isinstance(r.evidence["expert_review"], list)
        assert (True in flags) == has_review, r.record_id
        if True not in flags:
            assert flags == [None]
    assert selected_counts[1] == 500
    for r in pg:
        review = r.evidence["expert_review"]
        if isinstance(review, list):
            content = review[0]["content"]
            assert content["accepted"] is (content["final_quality_tier"] in (1, 2))
            assert content["score_history"][-1] == content["final_quality_tier"]


def test_alab_pipeline_records(alab: list[Record]) -> None:
    assert len(alab) == 592
    types = Counter(r.provenance["experiment_type"] for r in alab)
    assert types == {"NSC": 211, "PG": 191, "Na": 157, "MINES": 23, "TRI": 10}
    for r in alab:
        valid, category = r.outcome["valid"], r.outcome["category"]
        assert valid is True or valid is False or isinstance(valid, Missing)
        if valid is not True:
            assert isinstance(category, Missing)
        if isinstance(category, str):
            assert category in CATEGORIES
            dara = r.evidence["automated_refinement"]
            assert isinstance(dara, list) and dara[0]["content"]["success"] is True
    dara_items = [r.evidence["automated_refinement"] for r in alab]
    successes = sum(isinstance(d, list) and d[0]["content"]["success"] for d in dara_items)
    failures = sum(isinstance(d, list) and not d[0]["content"]["success"] for d in dara_items)
    assert (successes, failures) == (80, 496)  # a recorded failure is still an item


def test_alab_outcome_rule_on_recorded_fields(alab: list[Record]) -> None:
    """Validity follows the execution record and the scan's presence; a run without an XRD
    pattern file is Missing (typed), never a physical failure; undecidable cases keep their
    reason."""
    for r in alab:
        execution = r.evidence["execution_record"][0]["content"]
        collected = execution["recovery"]["weight_collected_mg"]
        measured = isinstance(r.evidence["xrd_scan"], list)
        valid = r.outcome["valid"]
        if collected is None or collected < 0:
            assert isinstance(valid, Missing) and "recovered mass" in valid.reason
        elif not measured:
            assert isinstance(valid, Missing) and "no XRD pattern file" in valid.reason
        elif collected == 0:
            assert isinstance(valid, Missing) and "contradictory" in valid.reason
        else:
            assert valid is True, r.record_id
    valid_counts = Counter(
        "missing" if isinstance(r.outcome["valid"], Missing) else r.outcome["valid"] for r in alab
    )
    assert valid_counts == {True: 533, "missing": 59}
    no_scan = [r for r in alab if not isinstance(r.evidence["xrd_scan"], list)]
    assert len(no_scan) == 16 and all(isinstance(r.outcome["valid"], Missing) for r in no_scan)
    categories = Counter(
        r.outcome["category"] for r in alab if isinstance(r.outcome["category"], str)
    )
    assert categories == {
        "completely_reacted": 18,
        "unreacted": 14,
        "transformed": 6,
        "partially_reacted": 4,
    }


def test_pg_runs_share_pipeline_evidence(pg: list[Record], alab: list[Record]) -> None:
    runs = _by_id(alab)
    for r in pg:
        name = r.provenance["pipeline_run"]
        if name is None:
            continue
        for kind in ("execution_record", "thermal_history", "xrd_scan", "automated_refinement"):
            assert r.evidence[kind] == runs[name].evidence[kind]


def test_xrd_summary_matches_raw_pattern(data_dir: Path, alab: list[Record]) -> None:
    record = _by_id(alab)["PG_1848-1"]
    content = record.evidence["xrd_scan"][0]["content"]
    with gzip.open(data_dir / "alab_pipeline" / "xrd" / "PG_1848-1.xy.gz", "rt") as handle:
        raw = np.loadtxt(handle)
    assert content["point_count"] == len(raw)
    assert content["two_theta_min"] == pytest.approx(raw[:, 0].min(), abs=1e-3)
    assert content["two_theta_max"] == pytest.approx(raw[:, 0].max(), abs=1e-3)
    strongest = max(content["peaks"], key=lambda p: p["relative_intensity"])
    assert strongest["counts"] == pytest.approx(raw[:, 1].max(), abs=0.05)
    assert strongest["two_theta"] == pytest.approx(raw[np.argmax(raw[:, 1]), 0], abs=1e-3)


def test_thermal_summary_matches_raw_log(data_dir: Path, alab: list[Record]) -> None:
    logs = pd.read_parquet(data_dir / "alab_pipeline" / "parquet" / "temperature_logs.parquet")
    experiments = pd.read_parquet(data_dir / "alab_pipeline" / "parquet" / "experiments.parquet")
    eid = experiments.loc[experiments["name"] == "PG_1848-1", "experiment_id"].iloc[0]
    log = logs[logs["experiment_id"].astype(str) == eid]
    content = _by_id(alab)["PG_1848-1"].evidence["thermal_history"][0]["content"]
    assert content["point_count"] == len(log)
    assert content["max_temperature_c"] == pytest.approx(float(log["temperature_celsius"].max()))
    assert 0 < content["time_above_reference_minus_50c_min"] <= content["duration_min"]
    assert len(content["profile_min_c"]) <= 40
    with_logs = sum(isinstance(r.evidence["thermal_history"], list) for r in alab)
    assert with_logs == logs["experiment_id"].nunique()


def test_cache_is_written_and_cold_equals_warm(
    data_dir: Path, cache_dir: Path, alab: list[Record]
) -> None:
    assert len(list(cache_dir.glob("alab-pipeline-*.json"))) == 1
    warm = load_alab_pipeline(data_dir)
    uncached = load_alab_pipeline(data_dir, use_cache=False)
    cold_bytes = canonical_json([r.to_json() for r in alab])
    assert canonical_json([r.to_json() for r in warm]) == cold_bytes
    assert canonical_json([r.to_json() for r in uncached]) == cold_bytes
