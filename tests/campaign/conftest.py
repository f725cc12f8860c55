"""Shared fixtures for the campaign suite tests: the real records, compiled once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec
from labreplay.records import Record


@pytest.fixture(scope="session")
def data_dir() -> Path:
    value = os.environ.get("LABREPLAY_DATA_DIR")
    if not value:
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    return Path(value)


@pytest.fixture(scope="session")
def pg_records(data_dir: Path) -> list[Record]:
    from labreplay.suites.campaign.api import load_records

    return load_records("precursor-genome", data_dir)


@pytest.fixture(scope="session")
def pg_compiled(
    compiled_campaign: Callable[..., tuple[Any, list[EnvironmentSpec], dict[str, Any]]],
) -> tuple[Any, list[EnvironmentSpec], dict[str, Any]]:
    return compiled_campaign(record="precursor-genome", seed=0)


@pytest.fixture(scope="session")
def pg_specs(
    pg_compiled: tuple[Any, list[EnvironmentSpec], dict[str, Any]],
) -> list[EnvironmentSpec]:
    return pg_compiled[1]


@pytest.fixture
def modified_data_dir(data_dir: Path, tmp_path: Path) -> Path:
    """A data dir whose Precursor Genome file has one outcome changed; the (large, untouched)
    pipeline folder is linked, not copied."""
    root = tmp_path / "data"
    (root / "precursor_genome").mkdir(parents=True)
    (root / "alab_pipeline").symlink_to(data_dir / "alab_pipeline", target_is_directory=True)
    from labreplay.suites.campaign.datafiles import PG_FILE

    lines = (data_dir / PG_FILE).read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["reaction_category"] = (
        "unreacted" if row["reaction_category"] != "unreacted" else "transformed"
    )
    lines[0] = json.dumps(row)
    (root / PG_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root
