"""`store verify` catches what a hash chain alone does not: a truncated chain, a forged and
re-hashed last event, a forged score row and a forged `runs.agent` (each exit 1, naming run,
table and field). Real campaign runs on the real data; the forgeries are plain SQL edits."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from labreplay.runtime.trajectory import event_hash

from .conftest import copy_of
from .conftest import run_cli_in_process as run_cli


@pytest.fixture(scope="module")
def clean_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verify")
    specs = root / "specs"
    assert run_cli("campaign", "compile", "--out", str(specs)).returncode == 0
    first = json.loads((specs / "index.json").read_text(encoding="utf-8"))["assignments"][0]
    store = root / "store.sqlite"
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--store", str(store),
        "--agent", "no-evidence", "--only", first["id"], "--controls", "random",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return store


def _adaptive(conn: sqlite3.Connection) -> tuple[str, str]:
    row = conn.execute("SELECT run_id, spec_hash FROM runs WHERE branch='adaptive'").fetchone()
    return str(row[0]), str(row[1])


def _truncate(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    (last,) = conn.execute("SELECT MAX(seq) FROM events WHERE run_id=?", (run_id,)).fetchone()
    conn.execute("DELETE FROM events WHERE run_id=? AND seq>?", (run_id, last - 4))


def _forge_last_event(conn: sqlite3.Connection) -> None:
    run_id, spec_hash = _adaptive(conn)
    seq, kind, payload, prev = conn.execute(
        "SELECT seq, kind, payload, prev_hash FROM events WHERE run_id=? ORDER BY seq DESC",
        (run_id,),
    ).fetchone()
    body = json.loads(payload)
    body["forged"] = True
    new_hash = event_hash(prev, seq, kind, body, spec_hash)
    conn.execute(
        "UPDATE events SET payload=?, hash=? WHERE run_id=? AND seq=?",
        (json.dumps(body, sort_keys=True, separators=(",", ":")), new_hash, run_id, seq),
    )


def _forge_score(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    conn.execute("UPDATE scores SET value=3.95 WHERE run_id=? AND metric='adaptive_auc'", (run_id,))


def _forge_agent(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    conn.execute("UPDATE runs SET agent='bayes' WHERE run_id=?", (run_id,))


FORGERIES: dict[str, tuple[Callable[[sqlite3.Connection], None], str]] = {
    "truncated": (_truncate, "table events"),
    "rehashed-last-event": (_forge_last_event, "table events"),
    "forged-score": (_forge_score, "table scores, field adaptive_auc"),
    "forged-agent": (_forge_agent, "table runs, fields agent"),
}


def test_clean_store_verifies(clean_store: Path) -> None:
    proc = run_cli("store", "verify", "--store", str(clean_store))
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_verify_exits_1_naming_run_table_and_field(
    forgery: str, clean_store: Path, tmp_path: Path
) -> None:
    edit, expected = FORGERIES[forgery]
    store = copy_of(clean_store, tmp_path / "forged.sqlite")
    conn = sqlite3.connect(store)
    with conn:
        edit(conn)
        run_id, _ = _adaptive(conn)
    conn.close()
    proc = run_cli("store", "verify", "--store", str(store))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert run_id in proc.stderr and expected in proc.stderr, proc.stderr
    board = run_cli("store", "verify", "--store", str(store), "--json")
    assert board.returncode == 1 and json.loads(board.stdout)["problems"]
