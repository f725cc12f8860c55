"""The frozen environment spec shared by every suite.

A spec is canonical JSON with a sha256 over everything except the hash itself. It is written to
disk as that exact canonical text plus the hash, and refuses to load if the bytes were changed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay._atomic import atomic_write_text
from labreplay._files import FileKindError, path_kind, read_file
from labreplay._hashing import HASH_SCHEME_VERSION, canonical_json, sha256_bytes
from labreplay.errors import SpecError
from labreplay.safe_json import JsonLimitError, loads_strict

if TYPE_CHECKING:
    from labreplay.runtime.event_types import JsonValue


@dataclass(frozen=True)
class EnvironmentSpec:
    """suite/protocol/version identify the rules; body holds roles, budgets, visibility, scoring."""

    suite: str
    protocol: str
    version: str
    spec_id: str
    body: Mapping[str, Any]
    # Where the files the body names by sha256 lie on this machine (sha256 -> path), as the
    # compiler that wrote them left them: outside the hash, the file form and equality, so a
    # spec read back from its file is the same spec, only without this hint.
    attached_files: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def header(self) -> dict[str, str]:
        return {
            "suite": self.suite,
            "protocol": self.protocol,
            "version": self.version,
            "spec_id": self.spec_id,
            "hash_scheme": HASH_SCHEME_VERSION,
        }

    def canonical_text(self) -> str:
        return canonical_json({**self.header(), "body": self.body})

    @property
    def spec_hash(self) -> str:
        cached: str | None = self.__dict__.get("_hash")
        if cached is None:
            cached = sha256_bytes(self.canonical_text().encode("utf-8"))
            object.__setattr__(self, "_hash", cached)
        return cached

    def to_file_text(self) -> str:
        return canonical_json({**self.header(), "body": self.body, "spec_hash": self.spec_hash})


def _from_fields(data: Mapping[str, Any]) -> EnvironmentSpec:
    return EnvironmentSpec(
        suite=data["suite"],
        protocol=data["protocol"],
        version=data["version"],
        spec_id=data["spec_id"],
        body=data["body"],
    )


def spec_from_text(text: str, origin: str = "<memory>") -> EnvironmentSpec:
    try:  # depth- and size-limited, NaN/Infinity refused
        data = loads_strict(text)
    except JsonLimitError as exc:
        reason = str(exc).replace("invalid JSON", "not valid JSON", 1)
        raise SpecError(f"spec {origin}: {reason}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"spec {origin}: expected a JSON object, got {type(data).__name__}")
    if "sealed" in data:
        raise SpecError(
            f"spec {origin}: an agent-visible part of a sealed spec; load it with load_spec from "
            "its file (the sealed evaluator is read from beside it)"
        )
    missing = [
        k for k in ("suite", "protocol", "version", "spec_id", "body", "spec_hash") if k not in data
    ]
    if missing:
        raise SpecError(f"spec {origin}: missing field(s) {missing}")
    if data.get("hash_scheme") != HASH_SCHEME_VERSION:
        raise SpecError(
            f"spec {origin}: hash scheme {data.get('hash_scheme')!r}, this labreplay uses "
            f"{HASH_SCHEME_VERSION!r}"
        )
    for name in ("suite", "protocol", "version", "spec_id", "spec_hash"):
        if not isinstance(data[name], str):
            raise SpecError(f"spec {origin}: field {name!r} must be a string, got {data[name]!r}")
    if not isinstance(data["body"], dict):
        raise SpecError(f"spec {origin}: field 'body' must be a JSON object")
    spec = _from_fields(data)
    if spec.spec_hash != data["spec_hash"]:
        raise SpecError(
            f"spec {origin}: content does not match its recorded spec_hash "
            f"{data['spec_hash'][:16]}... (file modified?); refusing to run"
        )
    if canonical_json(data) != text.strip():
        raise SpecError(f"spec {origin}: bytes are not in canonical form (file modified?)")
    return spec


def spec_from_stored(text: str, spec_hash: str, origin: str = "store") -> EnvironmentSpec:
    """A spec kept in a results store (file form, or canonical text without the hash field),
    checked against the hash it is stored under."""
    data = json.loads(text)
    spec = _from_fields(data)
    if spec.spec_hash != spec_hash:
        raise SpecError(f"{origin}: spec {spec_hash[:16]}... does not match its stored hash")
    return spec


# Sealed spec files. `write_spec(..., seal=("evaluator",))` writes the body fields named in
# `seal` (a suite's recorded outcomes and anything computed from them) to their own file,
# `sealed/<name>.sealed.json`, and the spec file keeps everything else: the agent-visible part.
# A name is a top-level body field (`evaluator`) or one key of a top-level object field
# (`record.dataset_hashes`: the field stays visible, that key is sealed).
# The visible file holds nothing computed from the sealed fields, not even a hash of them (a
# changed held-out outcome leaves it byte-identical). The binding lives on the sealed side: the
# sealed file records the sha256 of the visible file's bytes and the spec_hash, which is the
# hash of the WHOLE spec (so ids, runs and stores are the same as for a single-file spec).
# `load_spec` rejoins and verifies them.
SEALED_DIR = "sealed"
ENV_SEALED_DIR = "LABREPLAY_SEALED_DIR"  # where to look instead of <spec dir>/sealed


def write_spec(spec: EnvironmentSpec, path: str | Path, seal: Sequence[str] = ()) -> None:
    path = Path(path)
    if not seal:
        atomic_write_text(path, spec.to_file_text() + "\n")
        return
    visible = dict(spec.body)
    sealed: dict[str, object] = {}
    for name in seal:
        field, _, key = name.partition(".")
        outer = visible.get(field)
        if key and isinstance(outer, Mapping) and key in outer:
            sealed[name] = outer[key]
            visible[field] = {k: v for k, v in outer.items() if k != key}
        elif not key and field in visible:
            sealed[name] = visible.pop(field)
        else:
            raise SpecError(f"spec {spec.spec_id}: cannot seal missing body field {name!r}")
    sealed_name = f"{SEALED_DIR}/{path.stem}.sealed.json"
    visible_text = canonical_json(
        {
            **spec.header(),
            "body": visible,
            "sealed": {"fields": sorted(seal), "file": sealed_name},
        }
    )
    sealed_text = canonical_json(
        {
            "spec_hash": spec.spec_hash,
            "spec_id": spec.spec_id,
            "visible_sha256": sha256_bytes(visible_text.encode("utf-8")),
            "sealed": sealed,
        }
    )
    atomic_write_text(path.parent / sealed_name, sealed_text + "\n")
    atomic_write_text(path, visible_text + "\n")


def read_spec_text(path: Path, what: str) -> str:
    """The text of a spec-side file (a spec, a sealed file, an index): a regular file of
    bounded size (`labreplay._files`), UTF-8; else one SpecError line naming it."""
    try:
        return read_file(path, what).decode("utf-8")
    except FileKindError as exc:
        raise SpecError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{what} {path}: not valid UTF-8 (byte offset {exc.start})") from exc


def _unseal(data: Mapping[str, JsonValue], text: str, path: Path) -> str:
    """The single-file text of a sealed spec: its sealed fields read back, both hashes checked."""
    seal = data["sealed"]
    file = seal.get("file") if isinstance(seal, dict) else None
    if not (
        isinstance(seal, dict) and isinstance(file, str) and isinstance(seal.get("fields"), list)
    ):
        raise SpecError(f"spec {path}: field 'sealed' needs file and fields")
    if canonical_json(data) != text.strip():
        raise SpecError(f"spec {path}: bytes are not in canonical form (file modified?)")
    rel = Path(file)
    if rel.is_absolute() or ".." in rel.parts:
        raise SpecError(f"spec {path}: sealed file {file!r} leaves the spec directory")
    override = os.environ.get(ENV_SEALED_DIR)
    sealed_path = Path(override) / rel.name if override else path.parent / rel
    if path_kind(sealed_path) is None:
        raise SpecError(
            f"spec {path}: its sealed evaluator file {sealed_path} is missing (the agent-visible "
            f"spec alone cannot be scored; set {ENV_SEALED_DIR} if it is kept elsewhere)"
        )
    sealed_text = read_spec_text(sealed_path, "sealed file")
    try:
        sealed = loads_strict(sealed_text)
    except JsonLimitError as exc:
        raise SpecError(f"sealed file {sealed_path}: {exc}") from exc
    if not isinstance(sealed, dict) or not isinstance(sealed.get("spec_hash"), str):
        raise SpecError(f"sealed file {sealed_path}: field 'spec_hash' is missing")
    if sealed.get("visible_sha256") != sha256_bytes(text.strip().encode("utf-8")):
        raise SpecError(
            f"sealed file {sealed_path}: the sha256 it records for {path} differs from that "
            "file's sha256 (file modified or from another compile); refusing to run"
        )
    fields = sealed.get("sealed")
    body = data.get("body")
    if not isinstance(fields, dict) or not isinstance(body, dict):
        raise SpecError(f"sealed file {sealed_path}: field 'sealed' must be a JSON object")
    whole = {k: v for k, v in data.items() if k != "sealed"}
    joined = dict(body)
    for name, value in fields.items():
        field, _, key = name.partition(".")
        outer = joined.get(field)
        if key and not isinstance(outer, dict):
            raise SpecError(f"sealed file {sealed_path}: field {name!r} has no object to join")
        joined[field] = {**outer, key: value} if key and isinstance(outer, dict) else value
    whole["body"] = joined
    whole["spec_hash"] = sealed["spec_hash"]  # checked against the rejoined content next
    return canonical_json(whole)


def load_spec(path: str | Path) -> EnvironmentSpec:
    """A spec file, single or sealed (its sealed part read from `sealed/`), fully verified."""
    path = Path(path)
    text = read_spec_text(path, "spec")
    try:
        data = loads_strict(text)
    except JsonLimitError:
        data = None  # spec_from_text reports it
    if isinstance(data, dict) and "sealed" in data:
        text = _unseal(data, text, path)
    return spec_from_text(text, str(path))
