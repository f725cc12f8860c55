"""Shared fixtures: the real data directory and one small, declared pipeline setting.

Small setting (so the area runs in a few minutes on two shared cores): n_total = 200 materials,
60 OOD candidates, r in {0, 0.5}, n in {4, 6}, s in {1, 2, 3} (12 configurations). The pipeline
cache is shared by the tests of one session through a temporary directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from labreplay.records.sources import resolve_data_dir
from labreplay.suites.configsearch.cache import ENV_CACHE_DIR
from labreplay.suites.configsearch.pipeline import PipelineSettings
from labreplay.suites.configsearch.space import ConfigSpace

SMALL_SETTINGS = PipelineSettings(n_total=200, n_ood=60)
SMALL_SPACE = ConfigSpace(r_values=(0.0, 0.5), n_values=(4, 6), s_values=(1, 2, 3), s_cap=())


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.skip("LABREPLAY_DATA_DIR is not set")
    return resolve_data_dir(None)


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("configsearch-cache")
    before = os.environ.get(ENV_CACHE_DIR)
    os.environ[ENV_CACHE_DIR] = str(path)  # the CLI tests read the cache location from here
    yield path / "configsearch"
    if before is None:
        os.environ.pop(ENV_CACHE_DIR, None)
    else:
        os.environ[ENV_CACHE_DIR] = before
