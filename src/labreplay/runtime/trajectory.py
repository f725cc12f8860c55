"""A hash-chained, append-only event log.

Each event's hash covers the previous hash, its sequence number, kind, payload and the spec
hash, so any edit, reorder or deletion of a stored event is detectable and two runs are equal
exactly when their final hashes are. Every suite's runs use this one chain (through
`labreplay.runtime.recorder`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from labreplay._hashing import canonical_form, canonical_json, sha256_bytes
from labreplay._provenance import scrub_json_value, scrub_text
from labreplay.errors import StoreError

GENESIS = "0" * 64


class Event(TypedDict):
    """One trajectory event as stored: `payload` is in canonical form (floats at the hash
    scheme's precision), `hash` chains it to `prev_hash` and the run's spec hash."""

    seq: int
    kind: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str


def event_hash(prev_hash: str, seq: int, kind: object, payload: object, spec_hash: str) -> str:
    """The hash of one event (`kind` and `payload` as stored: `verify` hashes what it reads)."""
    body = canonical_json(
        {"prev": prev_hash, "seq": seq, "kind": kind, "payload": payload, "spec": spec_hash}
    )
    return sha256_bytes(body.encode("utf-8"))


def _hash_text(prev_hash: str, seq: int, kind: str, payload_text: str, spec_hash: str) -> str:
    """`event_hash` from the payload's canonical text: the canonical form of the whole body is
    these fields in sorted key order, so the bytes are identical without re-normalising."""
    body = (
        f'{{"kind":{json.dumps(kind, ensure_ascii=False)},"payload":{payload_text},'
        f'"prev":"{prev_hash}","seq":{seq},"spec":"{spec_hash}"}}'
    )
    return sha256_bytes(body.encode("utf-8"))


class Trajectory:
    def __init__(self, spec_hash: str) -> None:
        self.spec_hash = spec_hash
        self.events: list[dict[str, Any]] = []
        # canonical payload text of events appended here, by seq (a store can write it as is)
        self.texts: dict[int, str] = {}

    @property
    def head(self) -> str:
        return self.events[-1]["hash"] if self.events else GENESIS

    def append(self, kind: str, payload: Mapping[str, object]) -> dict[str, Any]:
        """Append an event. The payload is kept in its canonical form (floats at the hash
        scheme's precision), so metrics computed now equal metrics recomputed from the store."""
        seq = len(self.events)
        prev = self.head
        canonical, text = canonical_form(payload)
        clean = scrub_text(text)
        if clean != text:
            # A credential in an action, an exception or a reply is removed before the hash,
            # so the stored (scrubbed) event still verifies.
            try:
                value: Mapping[str, object] = json.loads(clean)  # the text of an object
            except ValueError:
                value = canonical
            canonical, text = canonical_form(scrub_json_value(value))
        self.texts[seq] = text
        event: dict[str, Any] = {
            "seq": seq,
            "kind": kind,
            "payload": canonical,
            "prev_hash": prev,
            "hash": _hash_text(prev, seq, kind, text, self.spec_hash),
        }
        self.events.append(event)
        return event

    def extend_verified(self, events: Sequence[Mapping[str, object]]) -> None:
        """Continue from a stored prefix (checked first): later appends chain onto it."""
        if self.events:
            raise StoreError("extend_verified needs an empty trajectory")
        self.verify(events, self.spec_hash)
        self.events = [dict(e) for e in events]

    @staticmethod
    def verify(events: Sequence[Mapping[str, object]], spec_hash: str) -> str:
        """Check a stored chain; returns its head hash."""
        prev = GENESIS
        for i, e in enumerate(events):
            if e["seq"] != i or e["prev_hash"] != prev:
                raise StoreError(f"trajectory broken at seq {i}: sequence or link mismatch")
            expected = event_hash(prev, i, e["kind"], e["payload"], spec_hash)
            if expected != e["hash"]:
                raise StoreError(f"trajectory broken at seq {i}: hash mismatch (edited event?)")
            prev = expected
        return prev
