"""Signed runs: Ed25519 signatures over each finished run and over the store's set of runs.

`store verify` alone recomputes what it can from the events and the spec, but every hash it
checks is public and unkeyed: whoever can write the store can rewrite a run's events, re-hash
the chain, recompute the scores and pass. A signature closes that for everyone holding the
public key: `labreplay store sign --key KEY` signs, for each finished run, a digest of every
byte a board reads of it (the `runs` row, the chain's head hash and length, which bind every
event, the `scores` rows with their details, the `llm_calls` rows), and one manifest naming
every signed run with its digest (so a deleted or added run is seen, not only an edited one)
and the digest of the `superseded` rows (so a removal record added after signing is seen).
`store verify --public-key PUB` checks them all, and that each stored `message` is the one
the rows give now.

Only the signatures and the public key's id are stored; the private key never enters the
store, an export or an output. Messages are exact: floats are encoded by `float.hex`, not by
the 12-digit canonical form of spec hashes, so a one-bit edit of a score changes the digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labreplay._files import FileKindError, read_file, writable_dir
from labreplay._hashing import sha256_bytes
from labreplay.errors import LabreplayError
from labreplay.store.sqlite import RunInfo, SignatureRow, Store, StoredCell

if TYPE_CHECKING:  # `cryptography` is imported lazily: only signing needs it
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

RUN_FORMAT = "labreplay-run-signature/1"
# /2 also signs the `superseded` rows (what `store remove` removed); /1 manifests, signed
# before, still verify on a store that has none (they cannot vouch for any)
MANIFEST_FORMAT = "labreplay-store-signature/2"
_MANIFEST_V1 = "labreplay-store-signature/1"
# The manifest's subject in the `signatures` table (run ids are 24 hex digits: no clash).
MANIFEST_SUBJECT = "*store*"
PRIVATE_KEY_NAME = "labreplay-signing-key.pem"
PUBLIC_KEY_NAME = "labreplay-signing-key.pub.pem"
# A PEM Ed25519 key is about 120 bytes; anything far larger is not one (and is not read whole).
_MAX_KEY_BYTES = 64 * 1024

Cell = StoredCell


class KeyFileError(LabreplayError):
    """A key file is missing, unreadable, too open, or not an Ed25519 key of the right kind."""


@dataclass(frozen=True)
class SignReport:
    signed: int
    # runs still running: their chain can still grow, so they are not signed (said, not hidden)
    skipped_running: list[str]
    key_id: str


def _crypto_missing() -> KeyFileError:
    return KeyFileError(
        "signing needs the `cryptography` package (pip install 'labreplay[sign]'); it is not "
        "importable in this environment"
    )


# ------------------------------------------------------------------ keys
def key_id(public_key: Ed25519PublicKey) -> str:
    """A short public name of the key: sha256 of its 32 raw bytes, first 16 hex digits."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def _read_key_file(path: Path, option: str) -> bytes:
    """A key file's bytes: a regular file of at most `_MAX_KEY_BYTES` (`labreplay._files`)."""
    try:
        return read_file(path, f"{option} key file", _MAX_KEY_BYTES)
    except FileKindError as exc:
        raise KeyFileError(str(exc)) from None


def load_private_key(path: str | Path, option: str = "--key") -> Ed25519PrivateKey:
    """The Ed25519 private key in the PEM file `path`, or one line saying why not. The file
    must not be readable by group or others (as ssh insists). No message quotes its bytes."""
    try:
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError as exc:
        raise _crypto_missing() from exc
    key_path = Path(path)
    data = _read_key_file(key_path, option)
    if b"PUBLIC KEY-----" in data and b"PRIVATE KEY-----" not in data:
        raise KeyFileError(f"{option}: {key_path} holds a public key; give the private key")
    if os.name == "posix":
        mode = stat.S_IMODE(key_path.stat().st_mode)
        if mode & 0o077:
            raise KeyFileError(
                f"{option}: private key file {key_path} is readable by others (mode "
                f"{mode:04o}); chmod 600 it"
            )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:  # a passphrase-protected key
        raise KeyFileError(
            f"{option}: private key file {key_path} is encrypted; labreplay reads unencrypted "
            "Ed25519 keys (protect the file by its permissions)"
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:  # bad PEM, unknown algorithm: unquoted
        raise KeyFileError(
            f"{option}: {key_path} is not a PEM private key ({type(exc).__name__})"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(
            f"{option}: {key_path} holds a {type(key).__name__.lstrip('_')}, not an Ed25519 key"
        )
    return key


def load_public_key(path: str | Path, option: str = "--public-key") -> Ed25519PublicKey:
    """The Ed25519 public key in the PEM file `path`, or one line saying why not. A private
    key is refused: verifying needs only the public half, and a private key passed around to
    verifiers is a private key leaked."""
    try:
        from cryptography.exceptions import UnsupportedAlgorithm
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError as exc:
        raise _crypto_missing() from exc
    key_path = Path(path)
    data = _read_key_file(key_path, option)
    if b"PRIVATE KEY-----" in data:
        raise KeyFileError(
            f"{option}: {key_path} holds a private key; give the public key "
            f"({PUBLIC_KEY_NAME} from `labreplay store keygen`)"
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFileError(
            f"{option}: {key_path} is not a PEM public key ({type(exc).__name__})"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(
            f"{option}: {key_path} holds a {type(key).__name__.lstrip('_')}, not an Ed25519 key"
        )
    return key


def generate_key_pair(out_dir: str | Path) -> tuple[Path, Path, str]:
    """Write a new Ed25519 key pair into `out_dir` (created 0700 if missing): the private key
    0600 from its creation (never world-readable, not even for an instant), the public key
    0644. Existing key files are never overwritten. Returns (private, public, key id)."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError as exc:
        raise _crypto_missing() from exc
    out = writable_dir(out_dir)
    private_path, public_path = out / PRIVATE_KEY_NAME, out / PUBLIC_KEY_NAME
    for existing in (private_path, public_path):
        if existing.exists() or existing.is_symlink():
            raise KeyFileError(f"--out: {existing} exists; not overwriting a key")
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write_new(private_path, private_pem, 0o600)
    try:
        _write_new(public_path, public_pem, 0o644)
    except BaseException:
        private_path.unlink(missing_ok=True)  # a pair or nothing
        raise
    return private_path, public_path, key_id(key.public_key())


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create `path` with `mode` (O_EXCL: never through a planted file or link), or fail."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, mode)
    try:
        if hasattr(os, "fchmod"):  # exactly `mode`, whatever the umask
            os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


# ------------------------------------------------------------------ messages
def _exact(value: Cell) -> dict[str, str] | str | int | None:
    """A stored cell as signed: a float by its exact hex form (a one-bit edit changes it),
    bytes by base64, the rest as stored."""
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode("ascii")}
    return value


def _digest_rows(rows: Sequence[Mapping[str, Cell]]) -> str:
    body = [{k: _exact(v) for k, v in sorted(row.items())} for row in rows]
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def run_message(store: Store, run: RunInfo) -> bytes:
    """What a run's signature covers, as exact bytes: its `runs` row as stored, the chain
    (event count and head hash; each event's hash binds its payload and all before it), and
    digests of its `scores` and `llm_calls` rows (ordered by key)."""
    events = store.events(run.run_id)
    message = {
        "format": RUN_FORMAT,
        "run_id": run.run_id,
        "row": _digest_rows(store.rows_of("runs", run.run_id)),
        "chain": {"events": len(events), "head_hash": events[-1]["hash"] if events else None},
        "scores": _digest_rows(store.rows_of("scores", run.run_id)),
        "llm_calls": _digest_rows(store.rows_of("llm_calls", run.run_id)),
    }
    return json.dumps(message, sort_keys=True, separators=(",", ":")).encode("ascii")


def _manifest_message(
    run_digests: Mapping[str, str],
    superseded: Sequence[Mapping[str, Cell]] | None,
) -> bytes:
    """The manifest: every signed run's digest and a digest of the `superseded` rows (in run
    id order); `superseded` None gives the /1 form, which had none."""
    body: dict[str, object] = {"runs": dict(sorted(run_digests.items()))}
    if superseded is None:
        body["format"] = _MANIFEST_V1
    else:
        body["format"] = MANIFEST_FORMAT
        body["superseded"] = _digest_rows(sorted(superseded, key=lambda r: str(r["run_id"])))
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("ascii")


# ------------------------------------------------------------------ sign and verify
def sign_store(store: Store, private_key: Ed25519PrivateKey) -> SignReport:
    """Sign every finished run and the manifest of them, replacing earlier signatures (of any
    key) in one transaction."""
    kid = key_id(private_key.public_key())
    rows: list[SignatureRow] = []
    digests: dict[str, str] = {}
    skipped = []
    for run in store.runs():
        if run.status == "running":
            skipped.append(run.run_id)
            continue
        message = run_message(store, run)
        digests[run.run_id] = sha256_bytes(message)
        rows.append(_signature_row(run.run_id, kid, message, private_key))
    manifest = _manifest_message(digests, store.superseded())
    rows.append(_signature_row(MANIFEST_SUBJECT, kid, manifest, private_key))
    store.replace_signatures(rows)
    return SignReport(len(digests), skipped, kid)


def _signature_row(
    subject: str, kid: str, message: bytes, private_key: Ed25519PrivateKey
) -> SignatureRow:
    signature = base64.b64encode(private_key.sign(message)).decode("ascii")
    return SignatureRow(
        subject=subject, key_id=kid, message=message.decode("ascii"), signature=signature
    )


def _valid(public_key: Ed25519PublicKey, row: SignatureRow, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature

    try:
        public_key.verify(base64.b64decode(row.signature, validate=True), message)
    except (InvalidSignature, ValueError):
        return False
    return True


def verify_signatures(store: Store, public_key: Ed25519PublicKey) -> list[str]:
    """Problems with the store's signatures under `public_key`: a run unsigned, signed by
    another key, changed since it was signed, or a manifest that does not name exactly the
    runs present (a signed run deleted, an unsigned one added). [] when every run verifies."""
    kid = key_id(public_key)
    stored = {row.subject: row for row in store.signatures()}
    manifest = stored.pop(MANIFEST_SUBJECT, None)
    if manifest is None:
        return [f"table signatures: the store is not signed (no manifest signed by key {kid})"]
    problems = []
    digests: dict[str, str] = {}
    for run in store.runs():
        where = f"run {run.run_id} ({run.suite}, {run.spec_id}, {run.branch})"
        row = stored.get(run.run_id)
        message = run_message(store, run)
        digests[run.run_id] = sha256_bytes(message)
        if row is None:
            problems.append(f"{where}: table signatures: the run is not signed")
        elif row.key_id != kid:
            problems.append(f"{where}: table signatures: signed by key {row.key_id}, not by {kid}")
        elif not _valid(public_key, row, message):
            changed = row.message.encode("utf-8", "replace") != message
            problems.append(
                f"{where}: table signatures: the signature does not verify with key {kid} "
                + (
                    "(the run's rows, events, scores or calls changed since it was signed)"
                    if changed
                    else "(forged or damaged signature)"
                )
            )
        elif row.message != message.decode("ascii"):
            problems.append(f"{where}: {_EDITED_MESSAGE}")
    problems += _manifest_problems(store, public_key, manifest, digests)
    return problems


# the signed bytes are recomputed from the rows; a stored message that differs was edited
# (an export reader who trusts it would read what nobody signed)
_EDITED_MESSAGE = (
    "table signatures, field message: is not the message the signature covers (the stored "
    "rows give another one: an edited message)"
)


def _manifest_problems(
    store: Store, public_key: Ed25519PublicKey, manifest: SignatureRow, digests: Mapping[str, str]
) -> list[str]:
    """The manifest against the runs present and the `superseded` rows."""
    kid = key_id(public_key)
    superseded = store.superseded()
    expected = _manifest_message(digests, superseded)
    for message in (expected, _manifest_message(digests, None)):
        if manifest.key_id != kid or not _valid(public_key, manifest, message):
            continue
        problems = []
        if message != expected and superseded:  # a /1 manifest vouches for no removal
            problems.append(
                f"table superseded: {len(superseded)} row(s), which the manifest (signed by an "
                f"earlier labreplay, {_MANIFEST_V1}) does not cover; sign the store again"
            )
        if manifest.message != message.decode("ascii"):
            problems.append(f"{_EDITED_MESSAGE} (manifest)")
        return problems
    signed_runs, signed_superseded = _manifest_claims(manifest)
    missing = sorted(set(signed_runs) - set(digests))
    extra = sorted(set(digests) - set(signed_runs))
    fresh_superseded = json.loads(expected)["superseded"]
    detail = (
        f"signed run(s) missing from the store: {', '.join(missing[:5])}"
        if missing
        else f"run(s) added after signing: {', '.join(extra[:5])}"
        if extra
        else "table superseded: rows added, removed or edited since signing"
        if signed_superseded is not None and signed_superseded != fresh_superseded
        else "a run changed since signing, or the manifest was forged"
    )
    return [f"table signatures, manifest: does not verify with key {kid} ({detail})"]


def _manifest_claims(row: SignatureRow) -> tuple[list[str], str | None]:
    """The runs and the superseded digest a stored manifest message names: only a hint for
    the diagnosis (the stored message is not trusted; the signature over the recomputed one
    is)."""
    try:
        body = json.loads(row.message)
        runs, superseded = body.get("runs", {}), body.get("superseded")
    except (ValueError, AttributeError):
        return [], None
    return (
        [str(r) for r in runs] if isinstance(runs, dict) else [],
        superseded if isinstance(superseded, str) else None,
    )
