"""Embedded SQLite results store.

WAL mode, one short transaction per logical write, so a process killed mid-run loses at most the
write in flight and never leaves a half-written row. Runs are keyed by a deterministic id (spec,
agent, parameters, seed, branch), so a second invocation finds an unfinished run and resumes it
instead of duplicating it. Only the driver process writes (SQLite has one writer); workers return
results to it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay._closing import Closing
from labreplay._files import path_kind
from labreplay._hashing import canonical_json, sha256_json
from labreplay._provenance import base_provenance, scrub_secrets, scrub_text, utc_now
from labreplay.errors import StoreError

if TYPE_CHECKING:  # (the runtime package imports this module: no import at run time)
    from labreplay.runtime.event_types import JsonObject, JsonValue

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS specs (
    spec_hash TEXT PRIMARY KEY, suite TEXT NOT NULL, protocol TEXT NOT NULL,
    spec_id TEXT NOT NULL, body TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, suite TEXT NOT NULL, spec_hash TEXT NOT NULL,
    spec_id TEXT NOT NULL, branch TEXT NOT NULL, parent_run_id TEXT,
    agent TEXT NOT NULL, agent_params TEXT NOT NULL, model TEXT, endpoint TEXT,
    seed INTEGER NOT NULL, status TEXT NOT NULL, provenance TEXT NOT NULL,
    started TEXT NOT NULL, finished TEXT, summary TEXT);
CREATE INDEX IF NOT EXISTS runs_by_spec ON runs(spec_hash);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL,
    prev_hash TEXT NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS scores (
    run_id TEXT NOT NULL, metric TEXT NOT NULL, value REAL, detail TEXT,
    PRIMARY KEY (run_id, metric));
CREATE TABLE IF NOT EXISTS llm_calls (
    run_id TEXT NOT NULL, call_index INTEGER NOT NULL, request_hash TEXT NOT NULL,
    model TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL,
    finish_reason TEXT, retries INTEGER, error TEXT, cached INTEGER,
    purpose TEXT, cached_tokens INTEGER, resolved_model TEXT, parse_error TEXT,
    max_tokens INTEGER, prompt_chars INTEGER, reply_chars INTEGER, cost_usd REAL,
    PRIMARY KEY (run_id, call_index));
CREATE TABLE IF NOT EXISTS response_cache (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS superseded (
    run_id TEXT PRIMARY KEY, suite TEXT NOT NULL, spec_id TEXT NOT NULL, branch TEXT NOT NULL,
    agent TEXT NOT NULL, status TEXT NOT NULL, head_hash TEXT, removed TEXT NOT NULL,
    reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS contents (
    sha256 TEXT PRIMARY KEY, kind TEXT NOT NULL, content BLOB NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS signatures (
    subject TEXT PRIMARY KEY, key_id TEXT NOT NULL, message TEXT NOT NULL,
    signature TEXT NOT NULL, signed TEXT NOT NULL);
"""


# Tables every store of this schema version has had since version 1 was written: one missing is
# a damaged store, refused (a writer does not recreate it empty: `DROP TABLE scores` would pass
# for a store without scores). Tables added since (superseded, contents, signatures) are added
# to an older store by a writer.
CORE_TABLES = ("meta", "specs", "runs", "events", "scores", "llm_calls", "response_cache")

# Stored JSON columns (table, key shown in a refusal, column): a writer checks them all before
# its first write, so a store with a damaged row is refused byte-identical instead of being
# written to until a read trips on the row.
_JSON_COLUMNS = (
    ("runs", "run_id", "agent_params"),
    ("runs", "run_id", "provenance"),
    ("runs", "run_id", "summary"),
    ("events", "run_id || ' seq ' || seq", "payload"),
    ("scores", "run_id || ' metric ' || metric", "detail"),
    ("response_cache", "key", "response"),
)

# Per-run tables older schema versions created and this one does not (see `_legacy_tables`).
LEGACY_RUN_TABLES = ("forecasts",)


def _text(value: object) -> str:
    """Canonical JSON as stored: never holding a credential (see `scrub_text`)."""
    return scrub_text(canonical_json(value))


def _clean(value: object) -> object:
    """A column value as stored: a text without any credential (see `scrub_text`); numbers
    and NULL as they are. Every text column a run writes passes here or through `_text`."""
    return scrub_text(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    suite: str
    spec_hash: str
    spec_id: str
    branch: str
    parent_run_id: str | None
    agent: str
    agent_params: dict[str, Any]
    model: str | None
    endpoint: str | None
    seed: int
    status: str
    provenance: dict[str, Any]
    started: str
    finished: str | None
    summary: dict[str, Any] | None
    # The chain as it stood when the run finished (`events`, `head_hash`); None for a run
    # not finished, or finished by a version that did not record it.
    chain: dict[str, Any] | None = None


@dataclass(frozen=True)
class SignatureRow:
    """One Ed25519 signature (`labreplay.store.signing`): `subject` is a run id or the store
    manifest; `message` the exact bytes signed (ASCII JSON); `signature` base64."""

    subject: str
    key_id: str
    message: str
    signature: str


@dataclass(frozen=True)
class RunOpening:
    """What a run row records of how the run was opened, beside its identity."""

    model: str | None
    endpoint: str | None
    extra_provenance: Mapping[str, JsonValue] | None


def _provenance(extra: Mapping[str, JsonValue] | None) -> dict[str, JsonValue]:
    """A run row's provenance: this process's (versions, commit) and the run's own."""
    return {**base_provenance(), **scrub_secrets(dict(extra or {}))}


IN_PROCESS = "in-process"
# A cell as SQLite returns it.
StoredCell = str | int | float | bytes | None


def run_key(
    spec_hash: str,
    agent: str,
    agent_params: Mapping[str, JsonValue],
    seed: int,
    branch: str,
    isolation: str = IN_PROCESS,
) -> str:
    """Deterministic run id: the same work always lands on the same row (resume, no dupes).

    How the agent ran is part of the identity: an isolated (`subprocess`) run never finds,
    resumes or passes for an in-process one, nor the reverse. (In-process ids are unchanged
    from earlier versions, so existing stores resume.)"""
    identity: dict[str, object] = {
        "spec": spec_hash,
        # as stored (scrubbed of credentials), so that the stored row gives its id back
        "agent": _clean(agent),
        # an agent's params() are whatever it returns: strict JSON text refuses a non-JSON value
        "params": json.loads(_text(scrub_secrets(dict(agent_params)))),
        "seed": seed,
        "branch": branch,
    }
    if isolation != IN_PROCESS:
        identity["isolation"] = isolation
    return sha256_json(identity)[:24]


def run_isolation(provenance: Mapping[str, JsonValue]) -> str:
    """The isolation a run recorded (runs from before it was recorded ran in-process)."""
    return str(provenance.get("agent_isolation", IN_PROCESS))


def _required_columns() -> dict[str, list[str]]:
    """Table -> column names of the current schema, read from an in-memory copy of it."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
    finally:
        conn.close()


_COLUMNS = _required_columns()
# How long a statement waits for another process's lock before "database is locked".
_BUSY_TIMEOUT_S = 30.0
# Tables whose newer columns are appended at the end (with their SQL type), so a store written
# before them is upgraded in place instead of refused as damaged. The llm_calls accounting
# columns are nullable: older calls simply have no value for them.
_GROWN = frozenset({"llm_calls"})


class Store(Closing):
    """A results store at `path`.

    `readonly=True` (every command that only reads: leaderboards, export, report) opens the file
    with SQLite's `mode=ro`, so nothing can be written to it. A writable store is created when
    the path is missing or empty (0 bytes), and only then. An existing file is checked to be a
    labreplay store of this schema version BEFORE anything is written to it (no WAL switch, no
    table, no version stamp): a file we refuse stays byte-identical.
    """

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        kind = path_kind(self.path)
        if kind not in (None, "a regular file"):  # SQLite would block on a FIFO, write a device
            raise StoreError(f"store path {self.path} is {kind}; give a regular file path")
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if fresh and readonly:
            what = "does not exist" if not self.path.exists() else "is empty (0 bytes)"
            raise StoreError(f"store {self.path} {what}; no runs to read")
        self._conn = self._connect(fresh)
        try:
            if fresh:
                self._create()
            else:
                self._check_ours()
                if not readonly:
                    self._switch_to_wal()
                    # A store of this version may predate a table added since: add it (the file
                    # has passed the version check, so it is ours).
                    self._conn.executescript(_SCHEMA)
            if not readonly:
                self._conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException as exc:
            # Close the handle so the caller can remove or replace the file.
            self._conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"store {self.path} cannot be used: {exc}") from exc
            raise

    def _connect(self, fresh: bool) -> sqlite3.Connection:
        try:
            if fresh:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                return sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
            # Whose file is it? Asked through an immutable, read-only handle first: SQLite then
            # takes no lock and creates no -wal/-shm file, so a foreign file we refuse (even a
            # WAL-mode one) is left exactly as it was, side files included.
            self._probe_ownership()
            uri = self.path.resolve().as_uri() + ("?mode=ro" if self.readonly else "?mode=rw")
            if self.readonly and not Path(f"{self.path}-wal").exists():
                # No writer is at work (a WAL writer keeps its -wal file while connected): read
                # it as immutable, so a reader leaves no -wal/-shm file beside the store.
                uri += "&immutable=1"
            conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
            if self.readonly and not os.access(self.path.parent, os.W_OK):
                # A WAL store in a read-only directory cannot create its -shm file; nobody can
                # write there either, so reading it as immutable is safe.
                try:
                    conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                except sqlite3.OperationalError:
                    conn.close()
                    conn = sqlite3.connect(
                        uri + "&immutable=1",
                        uri=True,
                        timeout=_BUSY_TIMEOUT_S,
                        isolation_level=None,
                    )
            return conn
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"store {self.path} cannot be opened: {exc}") from exc

    def _probe_ownership(self) -> None:
        """Refuse a file that is not ours before opening it for real (see `_check_ours`).

        With a `-wal` file beside it the main file may lack committed pages (a writer is at
        work): that probe opens normally, read-only; the side files exist already."""
        wal_present = Path(f"{self.path}-wal").exists()
        uri = self.path.resolve().as_uri() + ("?mode=ro" if wal_present else "?mode=ro&immutable=1")
        probe = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            self._conn = probe
            # An empty database (another process may be creating this store right now: the
            # file exists, its tables are not committed yet) has no rows to check.
            if not self._check_ours(probe_only=True) and not self.readonly:
                self._check_json_rows()
        finally:
            probe.close()
        if self.readonly:
            return
        # Ours: a writer also needs to write the file and its directory (SQLite keeps its
        # journal beside the file). Said as such, not as "not a labreplay store".
        if not os.access(self.path, os.W_OK):
            raise StoreError(f"store {self.path} is a labreplay store but the file is read-only")
        if not os.access(self.path.parent, os.W_OK):
            raise StoreError(
                f"store {self.path} is a labreplay store but its directory "
                f"{self.path.parent} is read-only (SQLite writes its journal beside the file); "
                "read commands still work, or copy the store elsewhere to add runs"
            )

    def _switch_to_wal(self) -> None:
        """`PRAGMA journal_mode=WAL`, waiting out another process switching the same file.

        SQLite answers "database is locked" to this pragma at once, without calling the busy
        handler, while another connection holds the lock the switch needs (two processes
        creating one store at the same moment): retry it, for as long as other statements wait.
        """
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        pause = 0.005
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)

    def _create(self) -> None:
        """A new store: schema and version stamp in one transaction (WAL first: it cannot be
        switched inside a transaction)."""
        self._switch_to_wal()
        script = (
            "BEGIN IMMEDIATE;"
            + _SCHEMA
            + f"INSERT OR IGNORE INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}');COMMIT;"
        )
        try:
            self._conn.executescript(script)
        except sqlite3.Error:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _check_ours(self, probe_only: bool = False) -> bool:
        """Refuse, without writing, a file that is not a labreplay store of this version;
        True when the file is an empty database (made a store unless `probe_only`).

        Only a file with nothing in it (no table, view, index or trigger, user_version and
        application_id 0) is made a store; one holding only a view is someone else's."""
        where = f"store {self.path}"
        try:
            entries = self._conn.execute("SELECT type, name FROM sqlite_master").fetchall()
            stamps = [
                int(self._conn.execute(f"PRAGMA {p}").fetchone()[0])
                for p in ("user_version", "application_id")
            ]
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{where} is not a labreplay SQLite store (not SQLite: {exc})"
            ) from exc
        tables = {name for kind, name in entries if kind == "table"}
        if not entries and not any(stamps):
            if self.readonly:
                raise StoreError(f"{where} is not a labreplay SQLite store (an empty database)")
            if not probe_only:
                # An SQLite file with nothing at all holds nothing to protect: make it a store
                # (`_create` waits for, and tolerates, a process creating it at the same time).
                self._create()
            return True
        if not tables:
            kinds = sorted({kind for kind, _ in entries})
            detail = f"it holds only {', '.join(kinds)} entries" if kinds else "no tables"
            raise StoreError(
                f"{where} is not a labreplay SQLite store ({detail}; user_version {stamps[0]})"
            )
        if "meta" not in tables or "runs" not in tables:
            raise StoreError(
                f"{where} is not a labreplay SQLite store (no labreplay meta/runs tables)"
            )
        try:
            found = self._conn.execute(
                "SELECT value FROM meta WHERE key='schema_version'"
            ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(
                f"{where} is not a labreplay SQLite store (table meta: {exc})"
            ) from exc
        if found is None:
            raise StoreError(
                f"{where} is not a labreplay SQLite store (meta has no schema_version)"
            )
        if str(found[0]) != str(SCHEMA_VERSION):
            raise StoreError(
                f"{where} has schema version {found[0]!r}, this labreplay reads {SCHEMA_VERSION}"
            )
        missing_tables = [t for t in CORE_TABLES if t not in tables]
        if missing_tables:
            raise StoreError(
                f"{where} is damaged: table(s) {', '.join(missing_tables)} missing "
                "(a labreplay store has had them since schema version 1)"
            )
        grown: list[tuple[str, list[str]]] = []
        for table in sorted(tables & set(_COLUMNS)):
            have = [r[1] for r in self._conn.execute(f"PRAGMA table_info({table})")]
            if table in _GROWN and have == _COLUMNS[table][: len(have)]:
                grown.append((table, have))
                continue
            if have != _COLUMNS[table]:
                missing = sorted(set(_COLUMNS[table]) - set(have))
                detail = f"missing column(s) {missing}" if missing else f"columns {have}"
                raise StoreError(f"{where}: table {table!r} is damaged ({detail})")
        if probe_only:
            return False  # the ownership probe only reads; the real (writable) open grows tables
        for table, have in grown:  # only once every table has passed
            self._grow(table, have)
        return False

    def _check_json_rows(self) -> None:
        """Refuse a store holding a stored JSON value that does not parse (SQLite's
        `json_valid`, one scan per column in C), naming the first such row."""
        for table, key, column in _JSON_COLUMNS:
            try:
                row = self._conn.execute(
                    f"SELECT {key} FROM {table} "
                    f"WHERE {column} IS NOT NULL AND NOT json_valid({column}) LIMIT 1"
                ).fetchone()
            except sqlite3.OperationalError as exc:
                if "no such function" in str(exc):
                    return  # an SQLite built without JSON: reads still check every row
                raise
            if row is not None:
                raise StoreError(
                    f"store {self.path}: table {table}, row {row[0]}, field {column}: "
                    "damaged JSON; refusing to write to a damaged store"
                )

    def _grow(self, table: str, have: list[str]) -> None:
        """A store written before columns were appended to `table`: add them (writable), or
        read it as it is (read-only: the missing columns read as absent)."""
        if self.readonly:
            return
        for column in _COLUMNS[table][len(have) :]:
            self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; any exception rolls the whole write back.

        SQLite refusals (a duplicate key, a locked or read-only file) become StoreError naming
        the store, so the CLI reports one line instead of a traceback.
        """
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path} refused a write: {exc}") from exc
        try:
            yield self._conn
        except BaseException as exc:
            self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"store {self.path} refused a write: {exc}") from exc
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"store {self.path} could not commit: {exc}") from exc

    # ------------------------------------------------------------------ specs
    def put_spec(self, suite: str, protocol: str, spec_id: str, spec_hash: str, body: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO specs VALUES (?,?,?,?,?,?)",
                (spec_hash, suite, protocol, spec_id, body, utc_now()),
            )

    def spec_names(self) -> set[tuple[str, str]]:
        """(suite, spec id) of every stored spec."""
        rows = self._conn.execute("SELECT suite, spec_id FROM specs").fetchall()
        return {(str(suite), str(spec_id)) for suite, spec_id in rows}

    def get_spec(self, spec_hash: str) -> str:
        row = self._conn.execute(
            "SELECT body FROM specs WHERE spec_hash=?", (spec_hash,)
        ).fetchone()
        if row is None:
            raise StoreError(f"store {self.path}: no spec with hash {spec_hash}")
        return str(row[0])

    # ------------------------------------------------------------------ contents
    def put_content(self, kind: str, data: bytes) -> str:
        """Keep `data` under its sha256 (a file a spec content-addresses, e.g. a conditions
        question file), so `store verify` can recompute scores from the store alone."""
        digest = hashlib.sha256(data).hexdigest()
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO contents VALUES (?,?,?,?)",
                (digest, kind, sqlite3.Binary(data), utc_now()),
            )
        return digest

    def content(self, sha256: str) -> bytes | None:
        """The bytes kept under `sha256` (verified), or None (absent, or a store written
        before contents were kept)."""
        try:
            row = self._conn.execute(
                "SELECT content FROM contents WHERE sha256=?", (sha256,)
            ).fetchone()
        except sqlite3.OperationalError:  # an older store opened read-only: no such table
            return None
        if row is None:
            return None
        data = bytes(row[0])
        if hashlib.sha256(data).hexdigest() != sha256:
            raise StoreError(f"store {self.path}: table contents, {sha256[:16]}...: bytes differ")
        return data

    # ------------------------------------------------------------------ runs
    def open_run(
        self,
        *,
        suite: str,
        spec_hash: str,
        spec_id: str,
        branch: str,
        agent: str,
        agent_params: Mapping[str, JsonValue],
        seed: int,
        model: str | None = None,
        endpoint: str | None = None,
        parent_run_id: str | None = None,
        extra_provenance: Mapping[str, JsonValue] | None = None,
    ) -> tuple[str, bool]:
        """Create the run row, or find the existing one. Returns (run_id, already_existed)."""
        params = scrub_secrets(dict(agent_params))
        provenance = _provenance(extra_provenance)
        run_id = run_key(spec_hash, agent, params, seed, branch, run_isolation(provenance))
        with self.transaction() as conn:
            row = conn.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()
            if row is not None:
                return run_id, True
            conn.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    suite,
                    spec_hash,
                    spec_id,
                    branch,
                    parent_run_id,
                    _clean(agent),
                    _text(params),
                    _clean(model),
                    _clean(endpoint),
                    seed,
                    "running",
                    _text(provenance),
                    utc_now(),
                    None,
                    None,
                ),
            )
        return run_id, False

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, object]) -> None:
        """Mark a run finished. The summary also records the chain as it stands (event count
        and head hash), so `store verify` sees a truncated or re-hashed chain."""
        with self.transaction() as conn:
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM events WHERE run_id=?", (run_id,)
            ).fetchone()
            head = conn.execute(
                "SELECT hash FROM events WHERE run_id=? ORDER BY seq DESC LIMIT 1", (run_id,)
            ).fetchone()
            chain = {"events": int(count), "head_hash": head[0] if head else None}
            conn.execute(
                "UPDATE runs SET status=?, finished=?, summary=? WHERE run_id=?",
                (status, utc_now(), _text({**dict(summary), "chain": chain}), run_id),
            )

    def reset_run(self, run_id: str, reopened: RunOpening | None = None) -> None:
        """Forget a run's events and scores (used when its stored prefix cannot be replayed).
        `reopened`: how the run is opened again (a failed run redone), so its row describes
        the run it will hold (model, endpoint, provenance: the sandbox may differ), as the
        header its fresh chain starts with does."""
        with self.transaction() as conn:
            for table in ("events", "scores", "llm_calls", *self._legacy_tables(conn)):
                conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
            self._drop_signature(conn, run_id)
            conn.execute(
                "UPDATE runs SET status='running', finished=NULL, summary=NULL WHERE run_id=?",
                (run_id,),
            )
            if reopened is not None:
                conn.execute(
                    "UPDATE runs SET model=?, endpoint=?, provenance=? WHERE run_id=?",
                    (
                        _clean(reopened.model),
                        _clean(reopened.endpoint),
                        _text(_provenance(reopened.extra_provenance)),
                        run_id,
                    ),
                )

    def remove_runs(self, run_ids: Sequence[str], reason: str) -> list[RunInfo]:
        """Remove runs (rows, events, scores, calls) so they can be redone, and record each in
        `superseded` (what it was, its chain head, when and why), so `store verify` can say
        what a redo replaced. The response cache is kept: a redo repeats no completed call
        (a failed call is never cached)."""
        removed = [self.run(r) for r in dict.fromkeys(run_ids)]
        with self.transaction() as conn:
            for run in removed:
                head = conn.execute(
                    "SELECT hash FROM events WHERE run_id=? ORDER BY seq DESC LIMIT 1",
                    (run.run_id,),
                ).fetchone()
                conn.execute(
                    "INSERT OR REPLACE INTO superseded VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        run.run_id,
                        run.suite,
                        run.spec_id,
                        run.branch,
                        run.agent,
                        run.status,
                        head[0] if head else None,
                        utc_now(),
                        reason,
                    ),
                )
                for table in ("events", "scores", "llm_calls", *self._legacy_tables(conn)):
                    conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run.run_id,))
                self._drop_signature(conn, run.run_id)
                conn.execute("DELETE FROM runs WHERE run_id=?", (run.run_id,))
        return removed

    def superseded(self) -> list[dict[str, StoredCell]]:
        """Runs removed by `remove_runs`, oldest first ([] for a store written before)."""
        try:
            return self.table("superseded")
        except (sqlite3.OperationalError, StoreError):  # an older store opened read-only
            return []

    def run(self, run_id: str) -> RunInfo:
        rows = self.runs(run_id=run_id)
        if not rows:
            raise StoreError(f"store {self.path}: no run {run_id}")
        return rows[0]

    def runs(
        self,
        *,
        suite: str | None = None,
        branch: str | None = None,
        status: str | None = None,
        spec_hash: str | None = None,
        agent: str | None = None,
        run_id: str | None = None,
    ) -> list[RunInfo]:
        """Runs in start order, filtered by any of the given fields (equality, all ANDed)."""
        filters = {
            "suite": suite,
            "branch": branch,
            "status": status,
            "spec_hash": spec_hash,
            "agent": agent,
            "run_id": run_id,
        }
        given = {k: v for k, v in filters.items() if v is not None}
        # column names come from the fixed keys above, never from the caller
        where = " AND ".join(f"{k}=?" for k in given) or "1=1"
        cursor = self._conn.execute(
            f"SELECT * FROM runs WHERE {where} ORDER BY started, run_id", tuple(given.values())
        )
        out = []
        for r in cursor.fetchall():
            summary = self._json(r[15], "runs", r[0], "summary") if r[15] else None
            chain = summary.pop("chain", None) if isinstance(summary, dict) else None
            out.append(
                RunInfo(
                    run_id=r[0],
                    suite=r[1],
                    spec_hash=r[2],
                    spec_id=r[3],
                    branch=r[4],
                    parent_run_id=r[5],
                    agent=r[6],
                    agent_params=self._json(r[7], "runs", r[0], "agent_params"),
                    model=r[8],
                    endpoint=r[9],
                    seed=r[10],
                    status=r[11],
                    provenance=self._json(r[12], "runs", r[0], "provenance"),
                    started=r[13],
                    finished=r[14],
                    summary=summary,
                    chain=chain if isinstance(chain, dict) else None,
                )
            )
        return out

    def _json(self, text: Any, table: str, key: object, field: str) -> Any:
        """A stored JSON column, or one line naming store, table, row and field if damaged."""
        from labreplay.safe_json import JsonLimitError, loads_strict

        try:
            return loads_strict(str(text))
        except (JsonLimitError, ValueError) as exc:
            raise StoreError(
                f"store {self.path}: table {table}, run {key}, field {field}: damaged JSON "
                f"({' '.join(str(exc).split())})"
            ) from exc

    # ------------------------------------------------------------------ events
    def append_events(
        self,
        run_id: str,
        events: Iterable[Mapping[str, Any]],
        payload_texts: Iterable[str | None] | None = None,
    ) -> None:
        """Append hash-chained events atomically. Each event: seq, kind, payload, prev_hash, hash.
        `payload_texts` may give each payload's canonical JSON already made and scrubbed, as
        `Trajectory.append` makes it (None: make it here, scrubbed).

        An event another process already wrote with the same hash is skipped (two identical
        invocations on one store compute the same deterministic events); a different event under
        the same seq is refused in one line.
        """
        given = list(events)
        texts = list(payload_texts) if payload_texts is not None else [None] * len(given)
        if not given:
            return
        seqs = [int(e["seq"]) for e in given]
        with self.transaction() as conn:
            existing = dict(
                conn.execute(
                    "SELECT seq, hash FROM events WHERE run_id=? AND seq BETWEEN ? AND ?",
                    (run_id, min(seqs), max(seqs)),
                ).fetchall()
            )
            rows = []
            for e, text in zip(given, texts, strict=True):
                found = existing.get(e["seq"])
                if found is not None:
                    if found != e["hash"]:
                        raise StoreError(
                            f"store {self.path}: run {run_id} event {e['seq']} was written by "
                            "another process with different content; run one writer per run, or "
                            "rerun with --restart"
                        )
                    continue
                # A given text was made (and scrubbed, before it was hashed) by
                # `Trajectory.append` a moment ago: scrubbing it twice would double the cost.
                payload = text if text is not None else _text(e["payload"])
                rows.append((run_id, e["seq"], e["kind"], payload, e["prev_hash"], e["hash"]))
            conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)", rows)

    def events(self, run_id: str) -> list[dict[str, Any]]:
        cursor = self._conn.execute(
            "SELECT seq, kind, payload, prev_hash, hash FROM events WHERE run_id=? ORDER BY seq",
            (run_id,),
        )
        return [
            {
                "seq": s,
                "kind": k,
                "payload": self._json(p, "events", f"{run_id} seq {s}", "payload"),
                "prev_hash": ph,
                "hash": h,
            }
            for s, k, p, ph, h in cursor.fetchall()
        ]

    def event_count(self, run_id: str | None = None) -> int:
        if run_id is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])
        return int(
            self._conn.execute("SELECT COUNT(*) FROM events WHERE run_id=?", (run_id,)).fetchone()[
                0
            ]
        )

    @staticmethod
    def _legacy_tables(conn: sqlite3.Connection) -> list[str]:
        """Per-run tables of older stores that the current schema no longer has (the campaign's
        `forecasts` table: its rows are in the checkpoint and forecast events): kept readable,
        and cleared with the run they belong to."""
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return [t for t in LEGACY_RUN_TABLES if t in names]

    # ------------------------------------------------------------------ scores
    def put_scores(
        self,
        run_id: str,
        scores: Mapping[str, float | None],
        details: Mapping[str, object] | None = None,
    ) -> None:
        """Scalar metrics with optional JSON details; a detail without a scalar (a curve, a
        count table) is stored under its own name with a NULL value."""
        details = details or {}
        names = list(scores) + [name for name in details if name not in scores]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO scores VALUES (?,?,?,?)",
                [
                    (
                        run_id,
                        metric,
                        scores.get(metric),
                        _text(details[metric]) if metric in details else None,
                    )
                    for metric in names
                ],
            )

    def scores(self, run_id: str) -> dict[str, float | None]:
        cursor = self._conn.execute("SELECT metric, value FROM scores WHERE run_id=?", (run_id,))
        return {m: v for m, v in cursor.fetchall()}

    def score_details(self, run_id: str) -> dict[str, Any]:
        cursor = self._conn.execute(
            "SELECT metric, detail FROM scores WHERE run_id=? AND detail IS NOT NULL", (run_id,)
        )
        return {m: self._json(d, "scores", f"{run_id} metric {m}", "detail") for m, d in cursor}

    # ------------------------------------------------------------------ LLM bookkeeping
    def cached_response(self, key: str) -> JsonObject | None:
        row = self._conn.execute(
            "SELECT response FROM response_cache WHERE key=?", (key,)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def cached_responses(self) -> dict[str, JsonObject]:
        """The whole response cache (key -> response), the snapshot workers answer from."""
        rows = self._conn.execute("SELECT key, response FROM response_cache").fetchall()
        return {k: json.loads(r) for k, r in rows}

    def cache_response(self, key: str, model: str, response: JsonObject) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO response_cache VALUES (?,?,?,?)",
                (key, _clean(model), _text(dict(response)), utc_now()),
            )

    def record_llm_calls(self, run_id: str, calls: Iterable[Mapping[str, object]]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO llm_calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        run_id,
                        c["call_index"],
                        c["request_hash"],
                        _clean(c.get("model")),
                        c.get("prompt_tokens"),
                        c.get("completion_tokens"),
                        c.get("latency_s"),
                        _clean(c.get("finish_reason")),
                        c.get("retries", 0),
                        scrub_text(str(c["error"])) if c.get("error") else None,
                        int(bool(c.get("cached", False))),
                        _clean(c.get("purpose")),
                        c.get("cached_tokens"),
                        # the model id the server answered with: a server can echo the key here
                        _clean(c.get("resolved_model")),
                        scrub_text(str(c["parse_error"])) if c.get("parse_error") else None,
                        c.get("max_tokens"),
                        c.get("prompt_chars"),
                        c.get("reply_chars"),
                        c.get("cost_usd"),
                    )
                    for c in calls
                ],
            )

    def llm_calls(self, run_id: str) -> list[dict[str, StoredCell]]:
        cursor = self._conn.execute(
            "SELECT * FROM llm_calls WHERE run_id=? ORDER BY call_index", (run_id,)
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # ------------------------------------------------------------------ signatures
    def has_table(self, name: str) -> bool:
        """Whether the file has table `name` (a store written before it was added, opened
        read-only, has not)."""
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        return row is not None

    def rows_of(self, name: str, run_id: str) -> list[dict[str, StoredCell]]:
        """A run's rows of table `name` (runs, scores, llm_calls, events), exactly as stored,
        in key order: what a signature covers."""
        order = {"runs": "run_id", "scores": "metric", "llm_calls": "call_index", "events": "seq"}
        if name not in order:
            raise StoreError(f"unknown per-run table {name!r}")
        cursor = self._conn.execute(
            f"SELECT * FROM {name} WHERE run_id=? ORDER BY {order[name]}", (run_id,)
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def signatures(self) -> list[SignatureRow]:
        """Every stored signature ([] for a store written before signing existed)."""
        if not self.has_table("signatures"):
            return []
        cursor = self._conn.execute(
            "SELECT subject, key_id, message, signature FROM signatures ORDER BY subject"
        )
        return [SignatureRow(str(a), str(b), str(c), str(d)) for a, b, c, d in cursor]

    def replace_signatures(self, rows: Sequence[SignatureRow]) -> None:
        """Replace every stored signature by `rows`, in one transaction."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM signatures")
            conn.executemany(
                "INSERT INTO signatures VALUES (?,?,?,?,?)",
                [(r.subject, r.key_id, r.message, r.signature, utc_now()) for r in rows],
            )

    def _drop_signature(self, conn: sqlite3.Connection, run_id: str) -> None:
        """A run reset or removed is no longer what was signed: its signature goes with it
        (the manifest then no longer verifies until the store is signed again)."""
        if self.has_table("signatures"):
            conn.execute("DELETE FROM signatures WHERE subject=?", (run_id,))

    # ------------------------------------------------------------------ export
    def table(self, name: str) -> list[dict[str, StoredCell]]:
        cursor = self._conn.execute(f"SELECT * FROM {self._exportable(name)}")
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    @staticmethod
    def schema_columns(name: str) -> list[str]:
        """Column names of an exportable table in this version's schema (for a table an
        older store lacks, exported empty)."""
        return list(_COLUMNS[Store._exportable(name)])

    def columns(self, name: str) -> list[str]:
        """Column names of an exportable table (known even when it has no rows)."""
        cursor = self._conn.execute(f"SELECT * FROM {self._exportable(name)} LIMIT 0")
        return [d[0] for d in cursor.description]

    @staticmethod
    def _exportable(name: str) -> str:
        known = {"runs", "specs", "events", "scores", "llm_calls", "superseded", "signatures"}
        if name not in known:
            raise StoreError(f"unknown table {name!r}")
        return name
