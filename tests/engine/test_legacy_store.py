"""A store written before the campaign's `forecasts` table left the core schema stays readable,
and resetting one of its runs clears that run's legacy rows too."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from labreplay.store.sqlite import Store

RUN = {
    "suite": "campaign",
    "spec_hash": "e" * 64,
    "spec_id": "legacy",
    "branch": "adaptive",
    "agent": "scripted",
    "agent_params": {},
    "seed": 1,
}


def test_a_store_with_the_old_forecasts_table_stays_readable(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with Store(path) as store:
        run_id, _ = store.open_run(**RUN)  # type: ignore[arg-type]
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE forecasts (run_id TEXT NOT NULL, seq INTEGER NOT NULL, scope TEXT NOT NULL,"
        " step INTEGER, payload TEXT NOT NULL, PRIMARY KEY (run_id, seq, scope));"
    )
    conn.execute("INSERT INTO forecasts VALUES (?, 0, 'panel', 0, '{}')", (run_id,))
    conn.commit()
    conn.close()
    with Store(path, readonly=True) as store:
        assert [r.run_id for r in store.runs()] == [run_id]
    with Store(path) as store:
        store.reset_run(run_id)
        assert store.run(run_id).status == "running"
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM forecasts").fetchone() == (0,)
    conn.close()
