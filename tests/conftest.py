"""Session-wide test settings: caches go to a temporary directory, never the user cache.

Also the compiled inputs that many test files only read, made once per session by the CLI as
a user runs it (a subprocess): the default campaign specs and the Buchwald-Hartwig questions.
A test that changes files copies them first (`copy_campaign_specs`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from labreplay.compile.spec import EnvironmentSpec

# Set at import so that every subprocess a test starts inherits it too.
if not os.environ.get("LABREPLAY_CACHE_DIR"):
    os.environ["LABREPLAY_CACHE_DIR"] = tempfile.mkdtemp(prefix="labreplay-test-cache-")
os.environ.setdefault("MPLBACKEND", "Agg")


def _compile_with_cli(*args: str) -> None:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    proc = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="session")
def campaign_specs_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`labreplay campaign compile --out DIR` at its defaults (Precursor Genome, seed 0), once
    per session. Read it only: a test that writes into specs uses `copy_campaign_specs`."""
    out = tmp_path_factory.mktemp("campaign-specs") / "specs"
    _compile_with_cli("campaign", "compile", "--out", str(out))
    return out


@pytest.fixture(scope="session")
def copy_campaign_specs(campaign_specs_source: Path) -> Callable[[Path], Path]:
    """copy(target) -> target: a private copy of the session's compiled specs, the same files
    `campaign compile --out target` writes, for a test that changes or adds files."""

    def copy(target: Path) -> Path:
        shutil.copytree(campaign_specs_source, target)
        return target

    return copy


@pytest.fixture(scope="session")
def buchwald_questions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`labreplay conditions compile --dataset buchwald_hartwig --out FILE`, once per session
    (read only: the tests take their first lines or pass `--limit`)."""
    out = tmp_path_factory.mktemp("buchwald-questions") / "questions.jsonl"
    _compile_with_cli("conditions", "compile", "--dataset", "buchwald_hartwig", "--out", str(out))
    return out


@pytest.fixture(scope="session")
def small_llm_assignment() -> EnvironmentSpec:
    """A short real Precursor Genome assignment with small budgets, for tests that play a real
    (tiny) model: small budgets and small short assignments keep prompts near 3k tokens and the
    calls few. Read only (`plant_canaries` copies the body)."""
    from labreplay.suites.campaign.api import compile_specs

    _, specs, _ = compile_specs(
        record="precursor-genome",
        seed=0,
        experiment_budget=2,
        evidence_budget=2,
        review_budget=1,
        short_assignments=20,
        min_short_candidates=3,
    )
    return next(s for s in specs if s.body["assignment"]["kind"] == "short")
