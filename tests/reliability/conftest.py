"""Shared helpers of the reliability tests: the CLI as a user runs it, and hostile files.

The CLI runs as a real subprocess, so exit codes and stderr are exactly what a user sees.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


def run_cli(
    *args: str, timeout: float = 180.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    child = dict(os.environ)
    child["COLUMNS"] = "200"
    child.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child,
        check=False,
    )


def run_cli_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (`labreplay.cli.main.run`): the exit code, stdout and stderr a
    user sees, without an interpreter start per call. A bug escapes as the exception itself."""
    from labreplay.cli.main import run

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = run(list(args))
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The promise for bad input: exit `code`, one line on stderr, no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr, proc.stdout[-500:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("labreplay: error: "), lines[0]
    return lines[0]


def copy_of(source: Path, target: Path) -> Path:
    """A private copy (file or directory) for a test to damage."""
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy(source, target)
    return target


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sibling_names(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir()}


def make_foreign_sqlite(path: Path) -> Path:
    """Another application's database, with its own `meta(key, value)` table."""
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('app', 'someone else');"
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
        "INSERT INTO notes VALUES (1, 'keep me');"
    )
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def data_env() -> None:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.fail("LABREPLAY_DATA_DIR is not set; point it at the shared real data directory")


# The compiled campaign specs and their first assignment, for the end-to-end LLM failure and
# secrets tests (one compile per test module; a module may define its own).
@pytest.fixture(scope="module")
def specs_dir(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    return copy_campaign_specs(tmp_path_factory.mktemp("specs") / "specs")


@pytest.fixture(scope="module")
def smallest_assignment(specs_dir: Path) -> str:
    """The assignment with the fewest experiments, then candidates: a whole run (every kind
    of call, a checkpoint per closure) for the fewest model calls."""
    index = json.loads((specs_dir / "index.json").read_text(encoding="utf-8"))
    entries = index["assignments"]
    return str(min(entries, key=lambda a: (a["budgets"]["experiments"], a["candidates"]))["id"])


@pytest.fixture(scope="session")
def fuzz_seeds(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> dict[str, Path]:
    """Real inputs to mutate, made once per session (in-process CLI): the compiled campaign
    specs and a store holding one real campaign (random agent and control), checkpointed into one
    file so that a copy is the whole store."""
    root = tmp_path_factory.mktemp("fuzz-seeds")
    specs = copy_campaign_specs(root / "specs")  # the session's `campaign compile`
    index = json.loads((specs / "index.json").read_text(encoding="utf-8"))
    first = str(index["assignments"][0]["id"])
    store = root / "store.sqlite"
    done = run_cli_in_process(
        "campaign",
        *("run", "--specs", str(specs), "--store", str(store), "--agent", "random"),
        *("--only", first, "--controls", "random"),
    )
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    questions = root / "questions.jsonl"
    done = run_cli_in_process(
        "conditions", "compile", "--out", str(questions), "--dataset", "summit_reizman"
    )
    assert done.returncode == 0, done.stderr
    return {"specs": specs, "store": store, "root": root, "questions": questions}
