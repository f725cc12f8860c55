"""The results store: crash safety under SIGKILL, resume, typed errors, export round trips."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from labreplay._hashing import sha256_json
from labreplay.errors import StoreError
from labreplay.records.sources import data_file
from labreplay.store import Store, run_key
from labreplay.store.export import FORMATS, TABLES, export_store

from .conftest import CliRunner, run_labreplay

RUN: dict[str, Any] = {
    "suite": "campaign",
    "spec_hash": "f" * 64,
    "spec_id": "crash-test",
    "branch": "adaptive",
    "agent": "scripted",
    "agent_params": {"temperature": 0.0, "api_key": "sk-never-stored"},
    "seed": 17,
}

# The child: one run, one event per transaction, each seq printed only after its COMMIT
# returned. The payload is a real record line, so rows have realistic size and content.
CHILD = textwrap.dedent(
    """
    import json, sys
    from labreplay._hashing import sha256_json
    from labreplay.store import Store

    store_path, records_path, run_json = sys.argv[1], sys.argv[2], sys.argv[3]
    records = [json.loads(line) for line in open(records_path, encoding="utf-8")]
    store = Store(store_path)
    run_id, existed = store.open_run(**json.loads(run_json))
    start = store.event_count(run_id)
    prev = store.events(run_id)[-1]["hash"] if start else "genesis"
    print("run", run_id, existed, start, flush=True)
    for seq in range(start, start + 100000):
        payload = {"record": records[seq % len(records)], "step": seq}
        digest = sha256_json({"prev": prev, "seq": seq, "kind": "reveal", "payload": payload})
        store.append_events(run_id, [
            {"seq": seq, "kind": "reveal", "payload": payload, "prev_hash": prev, "hash": digest}
        ])
        prev = digest
        print(seq, flush=True)
    """
)


def _spawn_child(store_path: Path, records: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store_path), str(records), json.dumps(RUN)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_after(child: subprocess.Popen[str], commits: int) -> tuple[str, list[int]]:
    """Read the child's reports until `commits` seqs are committed, SIGKILL it, collect all."""
    assert child.stdout is not None
    header = child.stdout.readline()
    assert header.startswith("run "), header + (child.stderr.read() if child.stderr else "")
    reported: list[int] = []
    while len(reported) < commits:
        line = child.stdout.readline()
        assert line, "child ended early: " + (child.stderr.read() if child.stderr else "")
        reported.append(int(line))
    os.kill(child.pid, signal.SIGKILL)
    # Lines already printed were committed before the kill too: read them through the same
    # text stream (`communicate` reads the raw pipe and would skip what `readline` has already
    # buffered ahead, so a fast child's reports went missing).
    rest = child.stdout.read()
    child.wait(timeout=30)
    if child.stderr is not None:
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    reported += [int(line) for line in rest.splitlines() if line.strip()]
    return header, reported


def _assert_intact_chain(events: list[dict[str, Any]]) -> None:
    prev = "genesis"
    for expected_seq, event in enumerate(events):
        assert event["seq"] == expected_seq
        assert event["prev_hash"] == prev
        recomputed = sha256_json(
            {"prev": prev, "seq": event["seq"], "kind": event["kind"], "payload": event["payload"]}
        )
        assert event["hash"] == recomputed, f"row {expected_seq} is not what was written"
        prev = event["hash"]


def test_sigkill_loses_no_committed_event_and_the_run_resumes(
    tmp_path: Path, data_dir: Path
) -> None:
    store_path = tmp_path / "runs.sqlite"
    records = data_file(data_dir, "precursor_genome/pg_samples.jsonl")

    header, reported = _kill_after(_spawn_child(store_path, records), commits=150)
    assert header.split()[2:] == ["False", "0"]  # a new run

    with sqlite3.connect(store_path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Store(store_path) as store:
        (run,) = store.runs()
        events = store.events(run.run_id)
        stored = [e["seq"] for e in events]
        assert set(reported) <= set(stored), "a seq the child saw committed is gone"
        # at most the one transaction in flight may have committed without being reported
        assert len(stored) - len(reported) in (0, 1)
        _assert_intact_chain(events)
        assert run.status == "running"
        assert "api_key" not in run.agent_params
        assert run.run_id == run_key(
            RUN["spec_hash"], RUN["agent"], RUN["agent_params"], RUN["seed"], RUN["branch"]
        )
        again, existed = store.open_run(**RUN)
        assert (again, existed) == (run.run_id, True)
        assert len(store.runs()) == 1

    # a second child resumes the same run where the first one stopped
    header, more = _kill_after(_spawn_child(store_path, records), commits=20)
    assert header.split()[1:] == [run.run_id, "True", str(len(stored))]
    assert more[0] == len(stored)
    with Store(store_path) as store:
        events = store.events(run.run_id)
        assert set(reported + more) <= {e["seq"] for e in events}
        _assert_intact_chain(events)


def test_a_failed_batch_writes_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        run_id, _ = store.open_run(**RUN)
        event = {"seq": 0, "kind": "k", "payload": {"x": 1}, "prev_hash": "g", "hash": "h0"}
        store.append_events(run_id, [event])
        batch = [
            {**event, "seq": 1, "hash": "h1"},
            {**event, "seq": 2, "hash": "h2"},
            {**event, "seq": 0, "hash": "dup"},  # primary key clash: the whole batch is refused
        ]
        with pytest.raises(StoreError, match=r"s\.sqlite: run \w+ event 0 was written"):
            store.append_events(run_id, batch)
        assert [e["seq"] for e in store.events(run_id)] == [0]
        with pytest.raises(ValueError, match="non-finite"):  # bad payload: nothing written
            store.append_events(run_id, [{**event, "seq": 1, "payload": {"v": float("nan")}}])
        assert store.event_count(run_id) == 1


def test_a_file_that_is_not_sqlite_is_a_store_error(tmp_path: Path, data_dir: Path) -> None:
    not_sqlite = tmp_path / "results.sqlite"
    not_sqlite.write_bytes(data_file(data_dir, "precursor_genome/pg_coverage.json").read_bytes())
    with pytest.raises(StoreError, match=r"results\.sqlite is not a labreplay SQLite store"):
        Store(not_sqlite)
    with pytest.raises(StoreError, match="is a directory"):
        Store(tmp_path)


def test_a_foreign_sqlite_database_is_a_store_error(tmp_path: Path) -> None:
    foreign = tmp_path / "other-app.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE meta (name TEXT, payload BLOB)")
    with pytest.raises(StoreError, match=r"other-app\.db is not a labreplay SQLite store"):
        Store(foreign)
    os.replace(foreign, tmp_path / "moved.db")  # the handle was closed: the file is free


def test_a_newer_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError, match="schema version '99'"):
        Store(path)


def test_cli_export_of_a_non_store_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.sqlite"
    bogus.write_text("definitely not a database\n" * 50)
    done = cli("export", "--store", str(bogus), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "bogus.sqlite is not a labreplay SQLite store" in done.stderr


def _filled_store(path: Path, data_dir: Path) -> Store:
    """A store holding real screening rows as event payloads; llm_calls deliberately empty."""
    table = pd.read_csv(data_file(data_dir, "reactions/pypi_summit/reizman_suzuki_case_1.csv"))
    rows = table.iloc[1:].to_dict(orient="records")  # row 0 is summit's TYPE header
    store = Store(path)
    store.put_spec("conditions", "mc-single", "reizman-1", "a" * 64, json.dumps({"rows": 10}))
    for seed in (1, 2):
        run_id, _ = store.open_run(**{**RUN, "seed": seed})
        prev = "genesis"
        for seq, row in enumerate(rows):
            digest = sha256_json([prev, seq, row])
            store.append_events(
                run_id,
                [{"seq": seq, "kind": "row", "payload": row, "prev_hash": prev, "hash": digest}],
            )
            prev = digest
        store.put_scores(run_id, {"accuracy": 0.5, "missing": None}, {"accuracy": {"n": 4}})
        store.finish_run(run_id, "done", {"events": len(rows)})
    return store


def test_export_round_trips_row_counts_in_every_format(tmp_path: Path, data_dir: Path) -> None:
    with _filled_store(tmp_path / "runs.sqlite", data_dir) as store:
        expected = {name: len(store.table(name)) for name in TABLES}
        columns = {name: store.columns(name) for name in TABLES}
        written = export_store(store, tmp_path / "export")
    assert expected["events"] > 50 and expected["runs"] == 2 and expected["llm_calls"] == 0
    assert len(written) == len(TABLES) * len(FORMATS)
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == sorted(
        p.name for p in written
    )  # no temporary files left behind
    for name in TABLES:
        parquet = pd.read_parquet(tmp_path / "export" / f"{name}.parquet")
        csv = pd.read_csv(tmp_path / "export" / f"{name}.csv")
        lines = (tmp_path / "export" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(parquet) == len(csv) == len(lines) == expected[name], name
        assert list(parquet.columns) == list(csv.columns) == columns[name], name
    events = pd.read_parquet(tmp_path / "export" / "events.parquet")
    first = json.loads(events.sort_values(["run_id", "seq"]).iloc[0]["payload"])
    assert set(first) == {
        "NAME",
        "catalyst",
        "t_res",
        "temperature",
        "catalyst_loading",
        "ton",
        "yld",
    }


def test_cli_export_writes_the_requested_formats(tmp_path: Path, data_dir: Path) -> None:
    _filled_store(tmp_path / "runs.sqlite", data_dir).close()
    out = tmp_path / "exported"
    done = run_labreplay(
        "export", "--store", str(tmp_path / "runs.sqlite"), "--out", str(out),
        "--formats", "csv,jsonl", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 2 * len(TABLES)
    assert len(pd.read_csv(out / "runs.csv")) == 2
    bad = run_labreplay(
        "export", "--store", str(tmp_path / "runs.sqlite"), "--out", str(out), "--formats", "xml"
    )
    assert bad.returncode == 2 and "unknown export format" in bad.stderr
