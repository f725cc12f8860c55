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
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
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


@cache
def _code_hash() -> str:
    """The labreplay source the inputs are compiled by: a changed line compiles afresh."""
    digest = hashlib.sha256()
    root = Path(labreplay.__file__).parent
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".toml", ".yaml", ".json") and path.is_file():
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _data_fingerprint(data_dir: Path) -> str:
    """Names, sizes and modification times of the data files: the data a compile reads,
    without hashing 100 MB per run (compile itself checks the hashes)."""
    stats = [
        (str(path.relative_to(data_dir)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(data_dir.rglob("*"))
        if path.is_file()
    ]
    return hashlib.sha256(json.dumps([str(data_dir.resolve()), stats]).encode()).hexdigest()


def _input_key(*parts: object) -> str:
    """A name for what `parts` (options, data directory) compile to with this code."""
    data_dir = os.environ.get("LABREPLAY_DATA_DIR")
    if not data_dir:
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    key = json.dumps([[str(p) for p in parts], _data_fingerprint(Path(data_dir)), _code_hash()])
    return hashlib.sha256(key.encode()).hexdigest()[:24]


@pytest.fixture(scope="session")
def made_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, Callable[[Path], None]], Path]:
    """made_once(key, make) -> path: `make(path)` run once per test run for the xdist workers
    together (pytest-xdist's recipe: the run's temporary root, shared by the workers, and a
    file lock; flock, so no extra dependency). The first worker to ask makes it, the others
    wait and read it; a make that failed is tried again by the next."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "made-once"
    root.mkdir(exist_ok=True)

    def made(key: str, make: Callable[[Path], None]) -> Path:
        path, done = root / key, root / f"{key}.done"
        with (root / f"{key}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not done.exists():
                if path.is_dir():
                    shutil.rmtree(path)
                path.unlink(missing_ok=True)
                make(path)
                done.touch()
        return path

    return made


MadeOnce = Callable[[str, Callable[[Path], None]], Path]
CompiledCampaign = Callable[..., tuple[Any, list[EnvironmentSpec], dict[str, Any]]]


@pytest.fixture(scope="session")
def compiled_campaign(made_once: MadeOnce) -> CompiledCampaign:
    """compiled(**options) -> `compile_specs(**options)` (partition, specs, index), compiled
    once per test run for the xdist workers together, kept by options, data and code. Each call
    returns a fresh copy, so a test may change what it gets."""

    def compiled(**options: Any) -> tuple[Any, list[EnvironmentSpec], dict[str, Any]]:
        from labreplay.suites.campaign.api import compile_specs

        def make(path: Path) -> None:
            path.write_bytes(pickle.dumps(compile_specs(**options)))

        key = _input_key(sorted(options.items()))
        loaded: tuple[Any, list[EnvironmentSpec], dict[str, Any]] = pickle.loads(
            made_once(f"campaign-{key}.pickle", make).read_bytes()
        )
        return loaded

    return compiled


@pytest.fixture(scope="session")
def campaign_specs_source(made_once: MadeOnce) -> Path:
    """`labreplay campaign compile --out DIR` at its defaults (Precursor Genome, seed 0), once
    per test run. Read it only: a test that writes into specs uses `copy_campaign_specs`."""
    args = ("campaign", "compile")
    return made_once(
        f"specs-{_input_key(*args)}", lambda out: _compile_with_cli(*args, "--out", str(out))
    )


@pytest.fixture(scope="session")
def copy_campaign_specs(campaign_specs_source: Path) -> Callable[[Path], Path]:
    """copy(target) -> target: a private copy of the session's compiled specs, the same files
    `campaign compile --out target` writes, for a test that changes or adds files."""

    def copy(target: Path) -> Path:
        shutil.copytree(campaign_specs_source, target)
        return target

    return copy


@pytest.fixture(scope="session")
def buchwald_questions(made_once: MadeOnce) -> Path:
    """`labreplay conditions compile --dataset buchwald_hartwig --out FILE`, once per test run
    (read only: the tests take their first lines or pass `--limit`)."""
    args = ("conditions", "compile", "--dataset", "buchwald_hartwig")
    return made_once(
        f"questions-{_input_key(*args)}.jsonl",
        lambda out: _compile_with_cli(*args, "--out", str(out)),
    )


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


@pytest.fixture
def natural_width() -> Any:
    """stdout at the width a file or a pipe gets (no COLUMNS): tables whole. The CLI's console
    reads COLUMNS once, at import, and pytest-xdist's workers run with COLUMNS=80, so a test
    that reads a whole table must say the width it reads at."""
    from labreplay.cli._common import NATURAL_WIDTH, console

    before = console.width
    console.width = NATURAL_WIDTH
    yield console
    console.width = before


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (bound, then released: nobody listens)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
