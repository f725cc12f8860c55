"""The header event binds a run's row to its chain: a forger who edits the `runs` row and
recomputes every public id (run ids, parent links) still fails `store verify`, because the
row no longer equals the header in the chain. Each forgery below rewrites the whole
assignment consistently (ids, children, scores, events moved), so nothing but the header
catches it. Runs stored before headers read back, verify, and are listed as unverifiable.

Real campaign and conditions runs on the real data; the forgeries are plain SQL edits."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from labreplay.runtime.trajectory import Trajectory
from labreplay.store.sqlite import run_isolation, run_key

from .conftest import copy_of
from .conftest import run_cli_in_process as run_cli

_TABLES_WITH_RUN_ID = ("events", "scores", "llm_calls")


@pytest.fixture(scope="module")
def clean_store(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    root = tmp_path_factory.mktemp("header")
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


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _rewrite_runs(conn: sqlite3.Connection, change: Callable[[dict[str, Any]], None], *,
                  copy: bool) -> None:  # fmt: skip
    """Apply `change` to every runs row, recompute each run id as the public function gives
    it, and move (or, with `copy`, duplicate) its events, scores and calls and its children's
    parent links onto the new ids: a forgery consistent everywhere but in the chain."""
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    rows = [dict(zip(cols, v, strict=True)) for v in conn.execute("SELECT * FROM runs")]
    new_ids: dict[str, str] = {}
    for row in rows:
        params, provenance = json.loads(row["agent_params"]), json.loads(row["provenance"])
        fields = {"agent": row["agent"], "params": params, "seed": row["seed"],
                  "provenance": provenance}  # fmt: skip
        change(fields)
        row.update(agent=fields["agent"], seed=fields["seed"],
                   agent_params=_dump(fields["params"]), provenance=_dump(fields["provenance"]))  # fmt: skip
        new_ids[row["run_id"]] = run_key(
            row["spec_hash"], row["agent"], fields["params"], row["seed"], row["branch"],
            run_isolation(fields["provenance"]),
        )  # fmt: skip
    for row in rows:
        old = row["run_id"]
        row["run_id"] = new_ids[old]
        if row["parent_run_id"] is not None:
            row["parent_run_id"] = new_ids[row["parent_run_id"]]
        if not copy:
            conn.execute("DELETE FROM runs WHERE run_id=?", (old,))
        conn.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(cols))})", list(row.values()))
        for table in _TABLES_WITH_RUN_ID:
            if copy:
                rest = ", ".join(r[1] for r in conn.execute(f"PRAGMA table_info({table})"))
                rest = rest.removeprefix("run_id, ")
                conn.execute(
                    f"INSERT INTO {table} SELECT ?, {rest} FROM {table} WHERE run_id=?",
                    (new_ids[old], old),
                )
            else:
                conn.execute(f"UPDATE {table} SET run_id=? WHERE run_id=?", (new_ids[old], old))


def _rename_agent(conn: sqlite3.Connection) -> None:
    def rename(fields: dict[str, Any]) -> None:
        fields["agent"] = "my-agent"

    _rewrite_runs(conn, rename, copy=False)


def _claim_subprocess(conn: sqlite3.Connection) -> None:
    def claim(fields: dict[str, Any]) -> None:
        fields["provenance"]["agent_isolation"] = "subprocess"

    _rewrite_runs(conn, claim, copy=False)


def _duplicate_as_seed(conn: sqlite3.Connection) -> None:
    def reseed(fields: dict[str, Any]) -> None:
        fields["seed"] = int(fields["seed"]) + 1

    _rewrite_runs(conn, reseed, copy=True)


def _edit_params(conn: sqlite3.Connection) -> None:
    def edit(fields: dict[str, Any]) -> None:
        fields["params"] = {**fields["params"], "temperature": 0.0}

    _rewrite_runs(conn, edit, copy=False)


FORGERIES: dict[str, tuple[Callable[[sqlite3.Connection], None], str]] = {
    "renamed-agent": (_rename_agent, "field agent: 'my-agent', but the run's header event"),
    "isolation-subprocess": (_claim_subprocess, "field isolation: 'subprocess', but the run's"),
    "duplicated-as-fake-seed": (_duplicate_as_seed, "field seed: 1, but the run's header"),
    "edited-params": (_edit_params, "field agent_params:"),
}


def test_every_run_of_a_clean_store_has_a_header_that_verifies(clean_store: Path) -> None:
    conn = sqlite3.connect(clean_store)
    try:
        rows = conn.execute("SELECT run_id, agent, seed, branch, provenance FROM runs").fetchall()
        for run_id, agent, seed, branch, provenance in rows:
            kinds = [k for (k,) in conn.execute(
                "SELECT kind FROM events WHERE run_id=? ORDER BY seq LIMIT 2", (run_id,))]  # fmt: skip
            assert kinds == ["reset", "header"], kinds
            (text,) = conn.execute(
                "SELECT payload FROM events WHERE run_id=? AND seq=1", (run_id,)
            ).fetchone()
            header = json.loads(text)
            assert (header["agent"], header["seed"], header["branch"]) == (agent, seed, branch)
            assert header["isolation"] == "in-process" and header["sandbox"] == "none"
            assert json.loads(provenance)["agent_sandbox"] == "none"
    finally:
        conn.close()
    proc = run_cli("store", "verify", "--store", str(clean_store), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and not report["problems"], report
    assert not any("header" in note for note in report["unverifiable"]), report


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_row_forged_with_its_ids_recomputed_fails_verify_on_the_header(
    forgery: str, clean_store: Path, tmp_path: Path
) -> None:
    edit, expected = FORGERIES[forgery]
    store = copy_of(clean_store, tmp_path / "forged.sqlite")
    conn = sqlite3.connect(store)
    with conn:
        edit(conn)
    conn.close()
    proc = run_cli("store", "verify", "--store", str(store), "--json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    problems = json.loads(proc.stdout)["problems"]
    # the run id, the parent links and every figure agree: the header is what catches it
    assert all("header event" in p for p in problems), problems
    assert any(expected in p for p in problems), problems


def _rechain(
    conn: sqlite3.Connection, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
) -> None:
    """Every run's events passed through `edit`, the chain re-hashed and the finished record
    updated to match (what a store written by other code would hold)."""
    for run_id, spec_hash, summary in conn.execute(
        "SELECT run_id, spec_hash, summary FROM runs"
    ).fetchall():
        events = [
            {"kind": k, "payload": json.loads(p)}
            for k, p in conn.execute(
                "SELECT kind, payload FROM events WHERE run_id=? ORDER BY seq", (run_id,)
            )
        ]
        chain = Trajectory(spec_hash)
        for event in edit(events):
            chain.append(event["kind"], event["payload"])
        conn.execute("DELETE FROM events WHERE run_id=?", (run_id,))
        for e in chain.events:
            conn.execute(
                "INSERT INTO events (run_id, seq, kind, payload, prev_hash, hash) "
                "VALUES (?,?,?,?,?,?)",
                (run_id, e["seq"], e["kind"], chain.texts[e["seq"]], e["prev_hash"], e["hash"]),
            )
        record = {
            **json.loads(summary),
            "head_hash": chain.head,
            "chain": {"events": len(chain.events), "head_hash": chain.head},
        }
        conn.execute("UPDATE runs SET summary=? WHERE run_id=?", (_dump(record), run_id))


def _strip_headers(conn: sqlite3.Connection) -> None:
    """Every run as a store from before headers holds it: no header event."""
    _rechain(conn, lambda events: [e for e in events if e["kind"] != "header"])


def test_a_headerless_run_reads_back_and_is_unverifiable_not_failed(
    clean_store: Path, tmp_path: Path
) -> None:
    store = copy_of(clean_store, tmp_path / "old.sqlite")
    conn = sqlite3.connect(store)
    with conn:
        _strip_headers(conn)
    conn.close()
    proc = run_cli("store", "verify", "--store", str(store), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and not report["problems"], report
    assert sum("no header event" in n for n in report["unverifiable"]) == report["runs"], report
    # the board reads it back and marks it; a forged row there rests on the row alone
    board = run_cli("campaign", "leaderboard", "--store", str(store), "--verified")
    assert board.returncode == 0, board.stderr


def _partial(store: Path, edit: Callable[[sqlite3.Connection], None]) -> None:
    """The store as a killed run leaves it (after `edit`): chains cut short, `running`, no
    finished record and no scores."""
    conn = sqlite3.connect(store)
    with conn:
        edit(conn)
        for (run_id,) in conn.execute("SELECT run_id FROM runs").fetchall():
            conn.execute("DELETE FROM events WHERE run_id=? AND seq>=20", (run_id,))
            conn.execute("DELETE FROM scores WHERE run_id=?", (run_id,))
            conn.execute("DELETE FROM llm_calls WHERE run_id=?", (run_id,))
            conn.execute(
                "UPDATE runs SET status='running', finished=NULL, summary=NULL WHERE run_id=?",
                (run_id,),
            )
    conn.close()


def _resumed_after(
    rewrite: Callable[[sqlite3.Connection], None],
    executor: str,
    clean_store: Path,
    tmp_path: Path,
) -> tuple[Path, Path]:
    """(a partial store resumed by `campaign run` on `executor`, the complete store it was cut
    from), both with their chains rewritten by `rewrite` as an older version wrote them."""
    complete = copy_of(clean_store, tmp_path / "complete.sqlite")
    conn = sqlite3.connect(complete)
    with conn:
        rewrite(conn)
    conn.close()
    store = copy_of(complete, tmp_path / "partial.sqlite")
    _partial(store, rewrite)
    specs = clean_store.parent / "specs"  # compiled by the fixture
    first = json.loads((specs / "index.json").read_text(encoding="utf-8"))["assignments"][0]
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--store", str(store),
        "--agent", "no-evidence", "--only", first["id"], "--controls", "random",
        "--executor", executor,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return store, complete


@pytest.mark.parametrize("executor", ["in-process", "threads"])
def test_a_partial_run_stored_before_headers_resumes_without_one(
    executor: str, clean_store: Path, tmp_path: Path
) -> None:
    """Replayed in-process, or recomputed on a worker (which records a header) and adopted:
    either way the resumed chain stays headerless and equals the stripped complete one."""
    from labreplay.store.sqlite import Store

    store, complete = _resumed_after(_strip_headers, executor, clean_store, tmp_path)
    with Store(store, readonly=True) as resumed, Store(complete, readonly=True) as whole:
        runs = resumed.runs()
        assert runs and all(r.status == "complete" for r in runs)
        for run in runs:
            events = resumed.events(run.run_id)
            assert all(e["kind"] != "header" for e in events)
            assert [e["hash"] for e in events] == [e["hash"] for e in whole.events(run.run_id)]
    report = json.loads(run_cli("store", "verify", "--store", str(store), "--json").stdout)
    assert not report["problems"], report


def _strip_model(conn: sqlite3.Connection) -> None:
    """Every header as one written before headers named the model holds it."""

    def strip(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {**e, "payload": {k: v for k, v in e["payload"].items() if k != "model"}}
            if e["kind"] == "header"
            else e
            for e in events
        ]

    _rechain(conn, strip)


@pytest.mark.parametrize("executor", ["in-process", "threads"])
def test_a_partial_run_whose_header_predates_the_model_resumes_without_it(
    executor: str, clean_store: Path, tmp_path: Path
) -> None:
    """A header gained `model` later: a run whose stored header lacks it resumes (replayed
    in-process, or recomputed on a worker and adopted) under that header, unchanged."""
    from labreplay.store.sqlite import Store

    store, complete = _resumed_after(_strip_model, executor, clean_store, tmp_path)
    with Store(store, readonly=True) as resumed, Store(complete, readonly=True) as whole:
        runs = resumed.runs()
        assert runs and all(r.status == "complete" for r in runs)
        for run in runs:
            events = resumed.events(run.run_id)
            assert [e["hash"] for e in events] == [e["hash"] for e in whole.events(run.run_id)]
            assert all("model" not in e["payload"] for e in events if e["kind"] == "header")
    report = json.loads(run_cli("store", "verify", "--store", str(store), "--json").stdout)
    assert not report["problems"] and not report["unverifiable"], report


def _claim_bwrap(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {**e, "payload": {**e["payload"], "sandbox": "bwrap"}} if e["kind"] == "header" else e
        for e in events
    ]


def test_a_partial_run_opened_under_another_sandbox_is_refused_not_mixed(
    clean_store: Path, tmp_path: Path
) -> None:
    """Resuming must not chain work done without the sandbox onto a run opened in it."""
    store = copy_of(clean_store, tmp_path / "partial.sqlite")
    _partial(store, lambda conn: _rechain(conn, _claim_bwrap))
    specs = clean_store.parent / "specs"  # compiled by the fixture
    first = json.loads((specs / "index.json").read_text(encoding="utf-8"))["assignments"][0]
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--store", str(store),
        "--agent", "no-evidence", "--only", first["id"], "--controls", "random",
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "opened with sandbox 'bwrap', this run has 'none'" in proc.stderr, proc.stderr
    assert "--restart" in proc.stderr
