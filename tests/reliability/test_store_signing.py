"""Signed runs (`store keygen`, `store sign`, `store verify --public-key`): a signed store
verifies; a one-byte edit anywhere in a signed run, a forgery with every public hash
recomputed, a deleted or added run and another key each fail verify; bad key files are one
line, exit 2, store byte-identical; the private key is in no stored, exported or printed byte.
Real campaign runs on the real data; the forgeries are plain SQL edits."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from labreplay.runtime.trajectory import event_hash
from labreplay.store.sqlite import run_isolation, run_key

from .conftest import assert_one_line_error, copy_of, digest
from .conftest import run_cli_in_process as run_cli

PRIVATE = "labreplay-signing-key.pem"
PUBLIC = "labreplay-signing-key.pub.pem"


@pytest.fixture(scope="module")
def signed(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> tuple[Path, Path]:
    """(a signed store, the key directory)."""
    root = tmp_path_factory.mktemp("signed")
    specs = copy_campaign_specs(root / "specs")
    first = json.loads((specs / "index.json").read_text(encoding="utf-8"))["assignments"][0]
    store = root / "store.sqlite"
    proc = run_cli(
        "campaign", "run", "--specs", str(specs), "--store", str(store),
        "--agent", "no-evidence", "--only", first["id"], "--controls", "random",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    keys = root / "keys"
    made = run_cli("store", "keygen", "--out", str(keys))
    assert made.returncode == 0, made.stderr
    signing = run_cli("store", "sign", "--store", str(store), "--key", str(keys / PRIVATE))
    assert signing.returncode == 0, signing.stderr
    assert "signed 4 run(s)" in signing.stdout
    return store, keys


def _verify(store: Path, keys: Path) -> tuple[int, str]:
    """(exit code, every problem on its own line)."""
    proc = run_cli(
        "store", "verify", "--store", str(store), "--public-key", str(keys / PUBLIC), "--json"
    )  # fmt: skip
    assert "Traceback" not in proc.stderr
    if not proc.stdout.strip():
        return proc.returncode, proc.stderr
    return proc.returncode, "\n".join(json.loads(proc.stdout)["problems"])


def test_keygen_writes_a_private_key_only_its_owner_reads(signed: tuple[Path, Path]) -> None:
    _, keys = signed
    assert (keys / PRIVATE).stat().st_mode & 0o777 == 0o600
    assert (keys / PUBLIC).read_text(encoding="ascii").startswith("-----BEGIN PUBLIC KEY")
    before = digest(keys / PRIVATE)
    again = run_cli("store", "keygen", "--out", str(keys))
    assert "exists; not overwriting" in assert_one_line_error(again)
    assert digest(keys / PRIVATE) == before


def test_signed_store_verifies_and_export_carries_the_signatures(
    signed: tuple[Path, Path], tmp_path: Path
) -> None:
    store, keys = signed
    code, err = _verify(store, keys)
    assert code == 0, err
    out = tmp_path / "export"
    done = run_cli("export", "--store", str(store), "--out", str(out), "--formats", "jsonl")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (out / "signatures.jsonl").read_text().splitlines()]
    runs = (out / "runs.jsonl").read_text().splitlines()
    assert len(rows) == len(runs) + 1  # one per run and the manifest
    # the exported signature verifies the exported message with the public key alone
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    public = load_pem_public_key((keys / PUBLIC).read_bytes())
    for row in rows:
        public.verify(base64.b64decode(row["signature"]), row["message"].encode("ascii"))  # type: ignore[union-attr, call-arg]


def test_the_private_key_is_in_no_stored_exported_or_printed_byte(
    signed: tuple[Path, Path], tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization

    store, keys = signed
    pem = (keys / PRIVATE).read_bytes()
    key = serialization.load_pem_private_key(pem, password=None)
    raw = key.private_bytes(  # the 32 secret bytes, in every form they could leak
        serialization.Encoding.Raw,
        serialization.PrivateFormat.Raw,
        serialization.NoEncryption(),
    )
    body = b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))
    forms = [raw, raw.hex().encode(), base64.b64encode(raw), body]
    out = tmp_path / "export"
    assert run_cli("export", "--store", str(store), "--out", str(out)).returncode == 0
    printed = run_cli("store", "sign", "--store", str(copy_of(store, tmp_path / "c.sqlite")),
                      "--key", str(keys / PRIVATE), "--json")  # fmt: skip
    blobs = [store.read_bytes(), printed.stdout.encode(), printed.stderr.encode()]
    blobs += [p.read_bytes() for p in out.iterdir()]
    for blob in blobs:
        assert not any(form in blob for form in forms)


def _adaptive(conn: sqlite3.Connection) -> tuple[str, str]:
    row = conn.execute("SELECT run_id, spec_hash FROM runs WHERE branch='adaptive'").fetchone()
    return str(row[0]), str(row[1])


def _flip(text: str) -> str:
    """`text` with one character changed, the one nearest its middle whose change keeps a JSON
    text valid JSON (a forger's edit, not damage the store reports as unreadable)."""
    middle = len(text) // 2
    for i in sorted(range(len(text)), key=lambda k: abs(k - middle)):
        flipped = text[:i] + ("0" if text[i] != "0" else "1") + text[i + 1 :]
        try:
            json.loads(text)
        except ValueError:
            return flipped  # not JSON: any character will do
        try:
            json.loads(flipped)
        except ValueError:
            continue
        return flipped
    raise AssertionError("no one-character edit keeps this text valid JSON")


def _one_byte(table: str, column: str) -> Callable[[sqlite3.Connection], None]:
    """Flip one character of a text cell of the adaptive run (a one-byte edit)."""

    def edit(conn: sqlite3.Connection) -> None:
        run_id, _ = _adaptive(conn)
        rowid, text = conn.execute(
            f"SELECT rowid, {column} FROM {table} WHERE run_id=? AND {column} IS NOT NULL "
            "ORDER BY rowid LIMIT 1",
            (run_id,),
        ).fetchone()
        conn.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", (_flip(text), rowid))

    return edit


def _rewrite_everything(conn: sqlite3.Connection) -> None:
    """What an unkeyed chain cannot stop: an event forged, the chain re-hashed from there on
    and the finished record (event count, head hash) rewritten to match."""
    run_id, spec_hash = _adaptive(conn)
    rows = conn.execute(
        "SELECT seq, kind, payload, prev_hash FROM events WHERE run_id=? ORDER BY seq", (run_id,)
    ).fetchall()
    prev = rows[0][3]
    for n, (seq, kind, payload, _) in enumerate(rows):
        body = json.loads(payload)
        if n == 1:
            body["forged"] = True
        new = event_hash(prev, seq, kind, body, spec_hash)
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        conn.execute(
            "UPDATE events SET payload=?, prev_hash=?, hash=? WHERE run_id=? AND seq=?",
            (text, prev, new, run_id, seq),
        )
        prev = new
    (summary,) = conn.execute("SELECT summary FROM runs WHERE run_id=?", (run_id,)).fetchone()
    body = json.loads(summary)
    body["chain"]["head_hash"] = prev
    conn.execute(
        "UPDATE runs SET summary=? WHERE run_id=?",
        (json.dumps(body, sort_keys=True, separators=(",", ":")), run_id),
    )


def _delete_control(conn: sqlite3.Connection) -> None:
    (run_id,) = conn.execute("SELECT run_id FROM runs WHERE branch!='adaptive'").fetchone()
    for table in ("events", "scores", "llm_calls", "runs"):
        conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))


def _fake_seed(conn: sqlite3.Connection) -> None:
    """A signed run duplicated under a new id, as another seed."""
    run_id, _ = _adaptive(conn)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    values = conn.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
    row = dict(zip(cols, values, strict=True))
    # the id a forger computes with the public function, so the row's id check passes
    seed = int(row["seed"]) + 1
    fake_id = run_key(row["spec_hash"], row["agent"], json.loads(row["agent_params"]), seed,
                      row["branch"], run_isolation(json.loads(row["provenance"])))  # fmt: skip
    row.update(run_id=fake_id, seed=seed)
    for table in ("events", "scores"):
        tcols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        for values in conn.execute(f"SELECT * FROM {table} WHERE run_id=?", (run_id,)).fetchall():
            copy = dict(zip(tcols, values, strict=True), run_id=fake_id)
            marks = ",".join("?" * len(tcols))
            conn.execute(f"INSERT INTO {table} VALUES ({marks})", list(copy.values()))
    conn.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(cols))})", list(row.values()))


def _score_by_one_bit(conn: sqlite3.Connection) -> None:
    run_id, _ = _adaptive(conn)
    (value,) = conn.execute(
        "SELECT value FROM scores WHERE run_id=? AND value IS NOT NULL AND value != 0", (run_id,)
    ).fetchone()
    nudged = float.fromhex(float(value).hex()[:-1] + ("0" if value.hex()[-1] != "0" else "1"))
    conn.execute("UPDATE scores SET value=? WHERE run_id=? AND value=?", (nudged, run_id, value))


EDITS: dict[str, Callable[[sqlite3.Connection], None]] = {
    "runs.agent": _one_byte("runs", "agent"),
    "runs.started": _one_byte("runs", "started"),
    "runs.provenance": _one_byte("runs", "provenance"),
    "scores.detail": _one_byte("scores", "detail"),
    "scores.value-one-bit": _score_by_one_bit,
    "events.rewritten-and-rehashed": _rewrite_everything,
    "deleted-control-run": _delete_control,
    "duplicated-as-fake-seed": _fake_seed,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edit_of_a_signed_store_fails_verify(
    edit: str, signed: tuple[Path, Path], tmp_path: Path
) -> None:
    store, keys = signed
    forged = copy_of(store, tmp_path / "forged.sqlite")
    conn = sqlite3.connect(forged)
    with conn:
        EDITS[edit](conn)
    conn.close()
    code, err = _verify(forged, keys)
    assert code == 1, err
    assert "table signatures" in err, err


def test_another_key_and_an_unsigned_store_fail(signed: tuple[Path, Path], tmp_path: Path) -> None:
    store, _ = signed
    other = tmp_path / "other"
    assert run_cli("store", "keygen", "--out", str(other)).returncode == 0
    code, err = _verify(store, other)
    assert code == 1 and "not by" in err, err
    # a store written before signing existed (no signatures table) reads, and is unsigned
    old = copy_of(store, tmp_path / "old.sqlite")
    conn = sqlite3.connect(old)
    conn.execute("DROP TABLE signatures")
    conn.commit()
    conn.close()
    assert run_cli("store", "verify", "--store", str(old)).returncode == 0
    code, err = _verify(old, other)
    assert code == 1 and "is not signed" in err, err


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def _bad_keys(root: Path, keys: Path) -> dict[str, tuple[str, Path, str]]:
    """name -> (option, file, what the one line says)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    ec_key = ec.generate_private_key(ec.SECP256R1())
    ec_pem = ec_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    ec_pub = ec_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    encrypted = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"passphrase"),
    )
    loose = _write(root / "loose.pem", (keys / PRIVATE).read_bytes(), 0o644)
    unreadable = _write(root / "unreadable.pem", (keys / PRIVATE).read_bytes(), 0o000)
    return {
        "missing": ("--key", root / "nope.pem", "not found"),
        "directory": ("--key", root, "not a regular file"),
        "empty": ("--key", _write(root / "empty.pem", b""), "not a PEM private key"),
        "garbage": ("--key", _write(root / "junk.pem", b"\x00\xff junk"), "not a PEM private"),
        "huge": ("--key", _write(root / "huge.pem", b"A" * 100_000), "over its 64.0 KiB limit"),
        "ec-private": ("--key", _write(root / "ec.pem", ec_pem), "not an Ed25519 key"),
        "encrypted": ("--key", _write(root / "enc.pem", encrypted), "is encrypted"),
        "public-as-private": ("--key", keys / PUBLIC, "holds a public key"),
        "loose-permissions": ("--key", loose, "readable by others"),
        "unreadable": ("--key", unreadable, "cannot be read" if os.geteuid() else "readable"),
        "ec-public": ("--public-key", _write(root / "ecpub.pem", ec_pub), "not an Ed25519 key"),
        "private-as-public": ("--public-key", keys / PRIVATE, "holds a private key"),
        "garbage-public": ("--public-key", root / "junk.pem", "not a PEM public key"),
        "missing-public": ("--public-key", root / "nope.pub", "not found"),
    }


def test_bad_key_files_are_one_line_and_leave_the_store_byte_identical(
    signed: tuple[Path, Path], tmp_path: Path
) -> None:
    store, keys = signed
    target = copy_of(store, tmp_path / "target.sqlite")
    before = digest(target)
    for name, (option, path, says) in _bad_keys(tmp_path, keys).items():
        if name == "unreadable" and os.geteuid() == 0:
            continue  # root reads a 0000 file: nothing to refuse
        command = "sign" if option == "--key" else "verify"
        proc = run_cli("store", command, "--store", str(target), option, str(path))
        line = assert_one_line_error(proc)
        assert says in line, (name, line)
        assert "PRIVATE KEY" not in line and "BEGIN" not in line
        assert digest(target) == before, name
        assert sorted(p.name for p in target.parent.glob("target.sqlite*")) == ["target.sqlite"]


def test_a_board_with_a_public_key_ranks_only_a_signed_store(
    signed: tuple[Path, Path], tmp_path: Path
) -> None:
    store, keys = signed
    pub = str(keys / PUBLIC)
    board = run_cli("campaign", "leaderboard", "--store", str(store), "--public-key", pub)
    assert board.returncode == 0, board.stderr
    forged = copy_of(store, tmp_path / "forged.sqlite")
    conn = sqlite3.connect(forged)
    with conn:
        _rewrite_everything(conn)  # passes the unkeyed checks; the signature stops it
    conn.close()
    assert run_cli("store", "verify", "--store", str(forged)).returncode == 0
    refused = run_cli("campaign", "leaderboard", "--store", str(forged), "--public-key", pub)
    line = assert_one_line_error(refused, code=1)
    assert "table signatures" in line, line
