"""Shared fixtures: the real data directory and one compilation of every dataset per session."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from labreplay.records.sources import resolve_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set")
    return resolve_data_dir()


@pytest.fixture(scope="session")
def compiled_all(data_dir: Path) -> Any:
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.datasets import dataset_names

    return compile_datasets(dataset_names(), data_dir, seed=0)


@pytest.fixture(scope="session")
def questions_file(compiled_all: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from labreplay.suites.conditions.report import write_compiled

    path = tmp_path_factory.mktemp("conditions") / "questions.jsonl"
    write_compiled(compiled_all, path)
    return path
