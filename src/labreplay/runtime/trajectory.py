"""A hash-chained, append-only event log.

Each event's hash covers the previous hash, its sequence number, kind, payload and the spec
hash, so any edit, reorder or deletion of a stored event is detectable and two runs are equal
exactly when their final hashes are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from labreplay._hashing import canonical_json, sha256_bytes
from labreplay.errors import StoreError

GENESIS = "0" * 64


def event_hash(
    prev_hash: str, seq: int, kind: str, payload: Mapping[str, Any], spec_hash: str
) -> str:
    body = canonical_json(
        {"prev": prev_hash, "seq": seq, "kind": kind, "payload": payload, "spec": spec_hash}
    )
    return sha256_bytes(body.encode("utf-8"))


class Trajectory:
    def __init__(self, spec_hash: str) -> None:
        self.spec_hash = spec_hash
        self.events: list[dict[str, Any]] = []

    @property
    def head(self) -> str:
        return self.events[-1]["hash"] if self.events else GENESIS

    def append(self, kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        """Append an event. The payload is kept in its canonical form (floats at the hash
        scheme's precision), so metrics computed now equal metrics recomputed from the store."""
        seq = len(self.events)
        prev = self.head
        canonical = json.loads(canonical_json(payload))
        event = {
            "seq": seq,
            "kind": kind,
            "payload": canonical,
            "prev_hash": prev,
            "hash": event_hash(prev, seq, kind, canonical, self.spec_hash),
        }
        self.events.append(event)
        return event

    @staticmethod
    def verify(events: list[dict[str, Any]], spec_hash: str) -> str:
        """Check a stored chain; returns its head hash."""
        prev = GENESIS
        for i, e in enumerate(events):
            if e["seq"] != i or e["prev_hash"] != prev:
                raise StoreError(f"trajectory broken at seq {i}: sequence or link mismatch")
            expected = event_hash(prev, i, e["kind"], e["payload"], spec_hash)
            if expected != e["hash"]:
                raise StoreError(f"trajectory broken at seq {i}: hash mismatch (edited event?)")
            prev = e["hash"]
        return prev
