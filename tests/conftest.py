"""Session-wide test settings: caches go to a temporary directory, never the user cache.

Also the compiled inputs that many test files only read, made once per session by the CLI as
a user runs it (a subprocess): the default campaign specs and the Buchwald-Hartwig questions.
A test that changes files copies them first (`copy_campaign_specs`). And `compiled_campaign`:
`compile_specs` results compiled once per test run and shared by the xdist workers.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import labreplay
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


@cache
def _code_hash() -> str:
    """The labreplay source the specs are compiled by: a changed line compiles afresh."""
    digest = hashlib.sha256()
    root = Path(labreplay.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".toml", ".yaml", ".json") and path.is_file():
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _data_fingerprint(data_dir: Path) -> str:
    """Names, sizes and modification times of the data files (links followed): the data a
    compile reads, without hashing 100 MB per run (compile itself checks the hashes)."""
    stats = [
        (str(path.relative_to(data_dir)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(data_dir.rglob("*"))
        if path.is_file()
    ]
    return hashlib.sha256(json.dumps([str(data_dir.resolve()), stats]).encode()).hexdigest()


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` shared by the xdist workers (pytest-xdist's recipe for a
    session fixture made once per run; flock, so no extra dependency)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


CompiledCampaign = Callable[..., tuple[Any, list[EnvironmentSpec], dict[str, Any]]]


@pytest.fixture(scope="session")
def compiled_campaign(tmp_path_factory: pytest.TempPathFactory) -> CompiledCampaign:
    """compiled(**options) -> `compile_specs(**options)` (partition, specs, index), compiled
    once per test run for the xdist workers together: the first worker to ask compiles into a
    file keyed by the options, the data and the code under the run's temporary root, the others
    read it. Each call returns a fresh copy, so a test may change what it gets."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "compiled-campaign"
    root.mkdir(exist_ok=True)

    def compiled(**options: Any) -> tuple[Any, list[EnvironmentSpec], dict[str, Any]]:
        from labreplay.suites.campaign.api import compile_specs

        data_dir = Path(options.get("data_dir") or os.environ["LABREPLAY_DATA_DIR"])
        key = json.dumps(
            [sorted((k, str(v)) for k, v in options.items()), _data_fingerprint(data_dir)]
        )
        name = hashlib.sha256((key + _code_hash()).encode()).hexdigest()[:24]
        path = root / f"{name}.pickle"
        with _locked(root / f"{name}.lock"):
            if not path.is_file():
                made = compile_specs(**options)
                path.with_suffix(".part").write_bytes(pickle.dumps(made))
                path.with_suffix(".part").rename(path)
        loaded: tuple[Any, list[EnvironmentSpec], dict[str, Any]] = pickle.loads(path.read_bytes())
        return loaded

    return compiled


@pytest.fixture(scope="session")
def small_llm_assignment(compiled_campaign: CompiledCampaign) -> EnvironmentSpec:
    """A short real Precursor Genome assignment with small budgets, for tests that play a real
    (tiny) model: small budgets and small short assignments keep prompts near 3k tokens and the
    calls few. Read only (`plant_canaries` copies the body)."""
    _, specs, _ = compiled_campaign(
        record="precursor-genome",
        seed=0,
        experiment_budget=2,
        evidence_budget=2,
        review_budget=1,
        short_assignments=20,
        min_short_candidates=3,
    )
    return next(s for s in specs if s.body["assignment"]["kind"] == "short")
