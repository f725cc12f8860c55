"""`store verify` on a conditions store: a headline score UPDATEd in place (to 0.99), a
status demoted to failed and an edited summary detail each fail, naming run, table and field;
the summary detail and the status are re-derived (nothing left unverifiable). Real questions
from the real table."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from labreplay.cli.main import run as cli

FORGERIES = {
    "score": (
        "UPDATE scores SET value=0.99 WHERE metric=(SELECT MIN(metric) FROM scores "
        "WHERE value IS NOT NULL)",
        "table scores, field ",
    ),
    "status": ("UPDATE runs SET status='failed'", "table runs, field status"),
    "summary-detail": (
        "UPDATE scores SET detail=replace(detail, '\"n\":', '\"n\":1') WHERE metric='summary'",
        "field summary.detail",
    ),
}


def test_forged_conditions_figures_fail_verify(
    question_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "c.sqlite"
    args = ["conditions", "run", "--questions", str(question_file), "--limit", "20"]
    assert cli([*args, "--agent", "ranker", "--store", str(store)]) == 0
    capsys.readouterr()
    assert cli(["store", "verify", "--store", str(store), "--json"]) == 0
    clean = json.loads(capsys.readouterr().out)
    assert clean["problems"] == [] and clean["unverifiable"] == [], clean
    for name, (sql, expected) in FORGERIES.items():
        forged = shutil.copy(store, tmp_path / f"{name}.sqlite")
        conn = sqlite3.connect(forged)
        with conn:
            assert conn.execute(sql).rowcount >= 1, name
        conn.close()
        assert cli(["store", "verify", "--store", str(forged), "--json"]) == 1, name
        problems = json.loads(capsys.readouterr().out)["problems"]
        assert any(expected in p for p in problems), (name, problems)


def _rekey(
    conn: sqlite3.Connection, agent: str, params: dict[str, object], isolation: str | None = None
) -> None:
    """The run's agent, parameters (and isolation) rewritten and its id recomputed with the
    public function, its events, scores and calls moved along: only the header can tell."""
    from labreplay.store.sqlite import run_isolation, run_key

    run_id, spec_hash, seed, branch, provenance = conn.execute(
        "SELECT run_id, spec_hash, seed, branch, provenance FROM runs"
    ).fetchone()
    recorded = json.loads(provenance)
    if isolation is not None:
        recorded["agent_isolation"] = isolation
        conn.execute(
            "UPDATE runs SET provenance=? WHERE run_id=?",
            (json.dumps(recorded, sort_keys=True, separators=(",", ":")), run_id),
        )
    fake = run_key(spec_hash, agent, params, seed, branch, run_isolation(recorded))
    for table in ("events", "scores", "llm_calls", "runs"):
        conn.execute(f"UPDATE {table} SET run_id=? WHERE run_id=?", (fake, run_id))
    conn.execute(
        "UPDATE runs SET agent=?, agent_params=? WHERE run_id=?",
        (agent, json.dumps(params, sort_keys=True, separators=(",", ":")), fake),
    )


def test_a_conditions_row_forged_with_its_id_recomputed_fails_on_the_header(
    question_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "c.sqlite"
    args = ["conditions", "run", "--questions", str(question_file), "--limit", "20"]
    assert cli([*args, "--agent", "ranker", "--store", str(store)]) == 0
    conn = sqlite3.connect(store)
    (kind, text), params = (
        conn.execute("SELECT kind, payload FROM events WHERE seq=0").fetchone(),
        json.loads(conn.execute("SELECT agent_params FROM runs").fetchone()[0]),
    )
    conn.close()
    assert kind == "header" and json.loads(text)["agent"] == "ranker_leave_table_out"
    forgeries = {
        # the runner records a run's isolation where the store keys it (provenance)
        "isolation": ("ranker_leave_table_out", params, "subprocess", "field isolation"),
        "agent": ("my-agent", params, None, "field agent: 'my-agent'"),
    }
    capsys.readouterr()
    for name, (agent, forged_params, isolation, expected) in forgeries.items():
        forged = shutil.copy(store, tmp_path / f"{name}.sqlite")
        conn = sqlite3.connect(forged)
        with conn:
            _rekey(conn, agent, forged_params, isolation)
        conn.close()
        assert cli(["store", "verify", "--store", str(forged), "--json"]) == 1, name
        problems = json.loads(capsys.readouterr().out)["problems"]
        assert problems and all("header event" in p for p in problems), (name, problems)
        assert any(expected in p for p in problems), (name, problems)


def test_a_partial_conditions_run_stored_before_headers_resumes_without_one(
    question_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed before headers existed (answers from seq 0, `running`) continues from its
    stored answers without gaining a header, and verifies with its header noted missing."""
    from labreplay.runtime.trajectory import Trajectory

    store = tmp_path / "c.sqlite"
    args = ["conditions", "run", "--questions", str(question_file), "--limit", "20"]
    assert cli([*args, "--agent", "ranker", "--store", str(store)]) == 0
    conn = sqlite3.connect(store)
    with conn:
        run_id, spec_hash = conn.execute("SELECT run_id, spec_hash FROM runs").fetchone()
        answers = conn.execute(
            "SELECT kind, payload FROM events WHERE run_id=? AND kind='answer' ORDER BY seq",
            (run_id,),
        ).fetchall()
        chain = Trajectory(spec_hash)
        for kind, payload in answers[:7]:
            chain.append(kind, json.loads(payload))
        conn.execute("DELETE FROM events WHERE run_id=?", (run_id,))
        conn.execute("DELETE FROM scores WHERE run_id=?", (run_id,))
        conn.execute(
            "UPDATE runs SET status='running', finished=NULL, summary=NULL WHERE run_id=?",
            (run_id,),
        )
        for e in chain.events:
            conn.execute(
                "INSERT INTO events VALUES (?,?,?,?,?,?)",
                (run_id, e["seq"], e["kind"], chain.texts[e["seq"]], e["prev_hash"], e["hash"]),
            )
    conn.close()
    assert cli([*args, "--agent", "ranker", "--store", str(store)]) == 0
    conn = sqlite3.connect(store)
    kinds = [k for (k,) in conn.execute("SELECT kind FROM events WHERE run_id=?", (run_id,))]
    (status,) = conn.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()
    conn.close()
    assert status == "complete" and kinds == ["answer"] * len(answers)
    capsys.readouterr()
    assert cli(["store", "verify", "--store", str(store), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["problems"] == [] and any("no header event" in n for n in report["unverifiable"])
