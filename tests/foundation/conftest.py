"""Shared fixtures of the foundation tests: the real data directory and a CLI runner.

The CLI always runs as a real subprocess (`python -m labreplay.cli.main`), so exit codes,
stdout/stderr separation and import-time behaviour are the ones a user sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from labreplay.records import manifest
from labreplay.records.sources import ENV_DATA_DIR, ENV_MIRROR

CliRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data directory; these tests are about the real files, so it must be set."""
    raw = os.environ.get(ENV_DATA_DIR)
    if not raw:
        pytest.fail(f"{ENV_DATA_DIR} is not set; point it at the shared real data directory")
    path = Path(raw)
    if not (path / "SHA256SUMS").is_file():
        pytest.fail(f"{ENV_DATA_DIR}={raw} has no SHA256SUMS; is it the labreplay data dir?")
    return path


def run_labreplay(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """Run `labreplay ARGS` in a child process; `env` entries override (None-free) os.environ."""
    child_env = {k: v for k, v in os.environ.items() if k != ENV_MIRROR}
    child_env.update(env or {})
    child_env["COLUMNS"] = "200"  # rich tables: keep file names on one line
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        env=child_env,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def cli() -> CliRunner:
    return run_labreplay


def copy_source(name: str, src_dir: Path, dest_dir: Path) -> list[Path]:
    """Copy every manifest file of source `name` into `dest_dir`, same layout, writable."""
    copied = []
    for entry in manifest.get_source(name).files:
        target = dest_dir / entry.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_dir / entry.path, target)
        copied.append(target)
    return copied
