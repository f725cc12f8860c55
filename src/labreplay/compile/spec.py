"""The frozen environment spec shared by every suite.

A spec is canonical JSON with a sha256 over everything except the hash itself. It is written to
disk as that exact canonical text plus the hash, and refuses to load if the bytes were changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labreplay._atomic import atomic_write_text
from labreplay._hashing import HASH_SCHEME_VERSION, canonical_json, sha256_bytes
from labreplay.errors import SpecError


@dataclass(frozen=True)
class EnvironmentSpec:
    """suite/protocol/version identify the rules; body holds roles, budgets, visibility, scoring."""

    suite: str
    protocol: str
    version: str
    spec_id: str
    body: Mapping[str, Any]

    def header(self) -> dict[str, Any]:
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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"spec {origin}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    except RecursionError as exc:
        raise SpecError(f"spec {origin}: JSON nested too deeply") from exc
    if not isinstance(data, dict):
        raise SpecError(f"spec {origin}: expected a JSON object, got {type(data).__name__}")
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


def write_spec(spec: EnvironmentSpec, path: Path) -> None:
    atomic_write_text(path, spec.to_file_text() + "\n")


def load_spec(path: str | Path) -> EnvironmentSpec:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"spec {path}: cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise SpecError(f"spec {path}: not valid UTF-8 (byte offset {exc.start})") from exc
    return spec_from_text(text, str(path))
