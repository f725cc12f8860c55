"""The types of a stored event: one envelope for every suite, a payload per event kind.

Every event a run records is the envelope `StoredEvent[Kind, Payload]` (what `Trajectory.append`
returns and `Store.events` reads back): `seq` (0, 1, ... in the run), `kind`, `payload` (the
canonical form that was hashed: floats at the hash scheme's precision, credentials scrubbed),
`prev_hash` (the previous event's hash, `GENESIS` for the first) and `hash`. A suite declares
its events as a discriminated union on `kind` in its own `events` module: one `TypedDict` per
payload, one `Literal` per kind, and a `PAYLOADS` mapping (kind -> payload type) that the
export schema (`labreplay/store/export_schema.json`, `scripts/export_schema.py`) is built
from. The `header` event (what the run is: agent, seed, isolation, ...) is shared by every
suite, so its payload lives here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Generic, Literal, NotRequired, TypeAlias, TypedDict, TypeVar

from labreplay.errors import StoreError

# A JSON value as canonical JSON holds it (no NaN or infinity: canonical form refuses them).
JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
JsonObject: TypeAlias = dict[str, JsonValue]

KindT = TypeVar("KindT", bound=str)
PayloadT = TypeVar("PayloadT")


class StoredEvent(TypedDict, Generic[KindT, PayloadT]):
    """One event of a run's hash chain, `kind` the discriminator of its payload's type."""

    seq: int
    kind: KindT
    payload: PayloadT
    prev_hash: str
    hash: str


class HeaderPayload(TypedDict):
    """What a run is, bound into its own chain (the runs row's fields, re-checkable)."""

    agent: str
    agent_params: JsonObject
    isolation: str  # "in-process" or "subprocess" (--isolate), as the runs row claims it
    sandbox: str  # "bwrap" when an isolated agent ran in the sandbox, else "none"
    # the model the runs row names (None: no model); absent from headers written before it
    model: NotRequired[str | None]
    seed: int
    branch: str
    spec_hash: str
    protocol: str
    labreplay_version: str  # the version that opened the run (kept on resume)


HeaderKind: TypeAlias = Literal["header"]
HeaderEvent: TypeAlias = StoredEvent[HeaderKind, HeaderPayload]

# kind -> payload type: the events every suite's runs may hold besides its own
COMMON_PAYLOADS: Mapping[str, type] = {"header": HeaderPayload}


def checked_kinds(
    rows: Iterable[Mapping[str, object]], payloads: Mapping[str, type], suite: str
) -> list[Mapping[str, object]]:
    """Stored events whose `kind` is one `payloads` declares, with the envelope's fields (a
    suite's `*_events` casts the result to its union). Payloads are not re-validated here:
    the hash chain vouches for what was recorded; the export schema test checks their shape."""
    out = []
    for row in rows:
        missing = [f for f in ("seq", "kind", "payload", "prev_hash", "hash") if f not in row]
        if missing:
            raise StoreError(f"{suite} event: missing field(s) {missing}")
        if row["kind"] not in payloads:
            raise StoreError(
                f"{suite} event seq {row['seq']}: unknown kind {row['kind']!r}; "
                f"known: {sorted(payloads)}"
            )
        out.append(row)
    return out


__all__ = [
    "COMMON_PAYLOADS",
    "HeaderEvent",
    "HeaderKind",
    "HeaderPayload",
    "JsonObject",
    "JsonValue",
    "StoredEvent",
    "checked_kinds",
]
