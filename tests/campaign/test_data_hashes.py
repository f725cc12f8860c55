"""Specs and runs record the sha256 of the files actually read; a modified file stops the compile
unless explicitly allowed, and then every board marks the spec as unverified data."""

from __future__ import annotations

import pytest

from labreplay.errors import DataError
from labreplay.records.manifest import get_source
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.datafiles import PG_FILE, data_provenance
from labreplay.suites.campaign.leaderboard import leaderboard
from labreplay.suites.campaign.runner import run_assignment


def test_real_hashes_match_the_manifest(data_dir):
    data = data_provenance("precursor-genome", data_dir)
    manifest = {e.path: e.sha256 for e in get_source("precursor-genome").files}
    assert data["verified"] and not data["modified"]
    assert data["files"][PG_FILE] == manifest[PG_FILE]
    assert len(data["files"]) > 1000  # the pipeline tables and XRD files are read too


def test_modified_data_file_is_refused_or_marked(modified_data_dir, pg_specs, tmp_path):
    root = modified_data_dir
    with pytest.raises(DataError, match=r"precursor_genome/pg_samples\.jsonl"):
        compile_specs(seed=0, data_dir=root)
    _, specs, index = compile_specs(seed=0, data_dir=root, allow_modified_data=True)
    assert index["data_verified"] is False and index["modified_files"] == [PG_FILE]
    record = specs[0].body["record"]
    assert record["data_verified"] is False and record["modified_files"] == [PG_FILE]
    genuine = pg_specs[0].body["record"]
    assert genuine["data_verified"] is True
    assert (
        record["dataset_hashes"]["precursor-genome"]
        != genuine["dataset_hashes"]["precursor-genome"]
    )
    assert record["dataset_hashes"]["alab-pipeline"] == genuine["dataset_hashes"]["alab-pipeline"]
    with Store(tmp_path / "runs.sqlite") as store:
        result = run_assignment(specs[0], BayesAgent, store, 0, ("random",))
        run = store.run(result["branches"]["adaptive"]["run_id"])
        assert run.provenance["data_verified"] is False
        board = leaderboard(store)
    assert board["unverified_data"] == [specs[0].spec_id]
