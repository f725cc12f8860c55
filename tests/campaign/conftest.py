"""Shared fixtures for the campaign suite tests: the real records, compiled once."""

from __future__ import annotations

import os
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
def pg_compiled(pg_records: list[Record]) -> tuple[Any, list[EnvironmentSpec], dict[str, Any]]:
    from labreplay.suites.campaign.api import compile_specs

    return compile_specs(record="precursor-genome", seed=0, records=pg_records)


@pytest.fixture(scope="session")
def pg_specs(
    pg_compiled: tuple[Any, list[EnvironmentSpec], dict[str, Any]],
) -> list[EnvironmentSpec]:
    return pg_compiled[1]
