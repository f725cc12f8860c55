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
from labreplay.store.sqlite import run_isolation, run_key

from .conftest import copy_of
from .conftest import run_cli_in_process as run_cli


@pytest.fixture(scope="module")
def clean_store(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    root = tmp_path_factory.mktemp("verify")
    specs = copy_campaign_specs(root / "specs")
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


def _control(conn: sqlite3.Connection) -> str:
    (run_id,) = conn.execute("SELECT run_id FROM runs WHERE branch='random'").fetchone()
    return str(run_id)


def _demote_status(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    conn.execute("UPDATE runs SET status='failed' WHERE run_id=?", (run_id,))


def _delete_score_rows(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    conn.execute("DELETE FROM scores WHERE run_id=? AND metric='adaptive_auc'", (run_id,))


def _edit_curve(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    (detail,) = conn.execute(
        "SELECT detail FROM scores WHERE run_id=? AND metric='curve'", (run_id,)
    ).fetchone()
    curve = json.loads(detail)
    curve[-1] = {**curve[-1], "auc": 0.99} if isinstance(curve[-1], dict) else 0.99
    conn.execute(
        "UPDATE scores SET detail=? WHERE run_id=? AND metric='curve'",
        (json.dumps(curve, sort_keys=True, separators=(",", ":")), run_id),
    )


def _delete_control(conn: sqlite3.Connection) -> None:
    control = _control(conn)
    for table in ("events", "scores", "llm_calls", "runs"):
        conn.execute(f"DELETE FROM {table} WHERE run_id=?", (control,))


def _extra_selection_lift(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    conn.execute("INSERT INTO scores VALUES (?, 'selection_lift', 0.25, NULL)", (run_id,))


def _summary_counts(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    (text,) = conn.execute("SELECT summary FROM runs WHERE run_id=?", (run_id,)).fetchone()
    summary = json.loads(text)
    summary["invalid_actions"] = int(summary["invalid_actions"]) + 3
    summary["llm_calls"], summary["failed_calls"], summary["failed_call_share"] = 10, 0, 0.0
    conn.execute(
        "UPDATE runs SET summary=? WHERE run_id=?",
        (json.dumps(summary, sort_keys=True, separators=(",", ":")), run_id),
    )


def _fake_seed(conn: sqlite3.Connection) -> None:
    """The adaptive run copied under the id a forger computes for another seed."""
    run_id, _ = _adaptive(conn)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    values = conn.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
    row = dict(zip(cols, values, strict=True))
    seed = int(row["seed"]) + 1
    fake = run_key(row["spec_hash"], row["agent"], json.loads(row["agent_params"]), seed,
                   row["branch"], run_isolation(json.loads(row["provenance"])))  # fmt: skip
    row.update(run_id=fake, seed=seed)
    conn.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(cols))})", list(row.values()))
    for table in ("events", "scores"):
        rest = ", ".join(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))
        rest = rest.removeprefix("run_id, ")
        conn.execute(
            f"INSERT INTO {table} SELECT ?, {rest} FROM {table} WHERE run_id=?", (fake, run_id)
        )


def _forge_isolation(conn: sqlite3.Connection) -> None:
    """`isolation: subprocess` claimed, the run id recomputed; the controls still hang from
    the old id (a forger who also rewrites every child passes: only a signature stops that)."""
    run_id, _ = _adaptive(conn)
    row = conn.execute(
        "SELECT spec_hash, agent, agent_params, seed, branch, provenance FROM runs WHERE run_id=?",
        (run_id,),
    ).fetchone()
    provenance = {**json.loads(row[5]), "agent_isolation": "subprocess"}
    fake = run_key(row[0], row[1], json.loads(row[2]), row[3], row[4], "subprocess")
    for table in ("events", "scores"):
        conn.execute(f"UPDATE {table} SET run_id=? WHERE run_id=?", (fake, run_id))
    conn.execute(
        "UPDATE runs SET run_id=?, provenance=? WHERE run_id=?",
        (fake, json.dumps(provenance, sort_keys=True, separators=(",", ":")), run_id),
    )


FORGERIES: dict[str, tuple[Callable[[sqlite3.Connection], None], str]] = {
    "truncated": (_truncate, "table events"),
    "rehashed-last-event": (_forge_last_event, "table events"),
    "forged-score": (_forge_score, "table scores, field adaptive_auc"),
    "forged-agent": (_forge_agent, "table runs, fields agent"),
    "demoted-status": (_demote_status, "table runs, field status"),
    "deleted-score-row": (_delete_score_rows, "field adaptive_auc: no row"),
    "edited-curve": (_edit_curve, "field curve.detail"),
    "deleted-control": (_delete_control, "no 'random' control run"),
    "extra-selection-lift": (_extra_selection_lift, "field selection_lift"),
    "summary-counts": (_summary_counts, "field summary.invalid_actions"),
    "call-accounting": (_summary_counts, "field summary.llm_calls"),
    "duplicated-as-fake-seed": (_fake_seed, "no 'random' control run"),
    "isolation-subprocess": (_forge_isolation, "field parent_run_id"),
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
    board = run_cli("store", "verify", "--store", str(store), "--json")
    problems = json.loads(board.stdout)["problems"]
    assert board.returncode == 1 and problems
    assert any(expected in p for p in problems), problems
    if forgery not in ("deleted-control", "duplicated-as-fake-seed", "isolation-subprocess"):
        assert any(run_id in p and expected in p for p in problems), problems


@pytest.mark.parametrize("forgery", ["demoted-status", "isolation-subprocess", "deleted-control"])
def test_a_verified_board_refuses_to_rank_a_forged_store(
    forgery: str, clean_store: Path, tmp_path: Path
) -> None:
    board = run_cli("campaign", "leaderboard", "--store", str(clean_store), "--verified")
    assert board.returncode == 0, board.stderr
    store = copy_of(clean_store, tmp_path / "forged.sqlite")
    conn = sqlite3.connect(store)
    with conn:
        FORGERIES[forgery][0](conn)
    conn.close()
    refused = run_cli(
        "campaign", "leaderboard", "--store", str(store), "--verified", "--require-isolated"
    )  # fmt: skip
    assert refused.returncode == 1 and "nothing is ranked" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
