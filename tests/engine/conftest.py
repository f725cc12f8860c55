"""Fixtures for the engine tests: a real conditions question file (one screening dataset)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labreplay.records.sources import resolve_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set")
    return resolve_data_dir()


@pytest.fixture(scope="session")
def question_file(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The edbo_mitsunobu questions (a few hundred), compiled from the real table."""
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.report import write_compiled

    compiled = compile_datasets(["edbo_mitsunobu"], data_dir, seed=0)
    path = tmp_path_factory.mktemp("engine") / "mitsunobu.jsonl"
    write_compiled(compiled, path)
    return path
