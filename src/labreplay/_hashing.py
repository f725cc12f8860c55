"""Canonical JSON and content hashes.

Specs, trajectories and caches are identified by the sha256 of their canonical JSON. The scheme
is versioned: if the canonical form ever changes, HASH_SCHEME_VERSION changes with it so that old
hashes are never silently compared with new ones.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:  # (the runtime package imports this module: no import at run time)
    from labreplay.runtime.event_types import JsonObject, JsonValue

# lr-cjson-2: a non-integer float that rounds to an integer at 12 digits (0.9999999999999999)
# now canonicalises to that integer, as 1.0 does; lr-cjson-1 kept it as a float, so the two hashed
# differently and canonical_json was not idempotent through a JSON round trip.
HASH_SCHEME_VERSION = "lr-cjson-2"

# 12 significant digits survive every float round trip we produce (fractions, losses, energies)
# while hiding last-bit noise from different BLAS / summation orders.
_FLOAT_DIGITS = 12


class Normalised(list["JsonValue"]):
    """A list already in canonical form (`normalised`): canonical_json takes it as it is
    instead of walking it again. A table's context rows, shared by every spec of a seed and
    hashed and written twice each, cost most of a large compile before."""


def normalised(items: Sequence[object]) -> Normalised:
    return Normalised(_normalise(list(items), ""))  # type: ignore[arg-type]


def _normalise(value: object, path: str) -> JsonValue:
    if type(value) is Normalised:  # canonical already (lr-cjson-2 is idempotent)
        return value
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"canonical_json: non-finite float {value!r} at {path or '$'}")
        if value == 0.0:
            return 0  # -0.0 and 0.0 hash alike
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        rounded = float(f"{value:.{_FLOAT_DIGITS}g}")
        # Rounding can land on an integer (last-bit noise around 1.0); print it as the integer
        # an exact 1.0 would give, or a JSON round trip would change the canonical form.
        if rounded.is_integer() and abs(rounded) < 2**53:
            return int(rounded)
        return rounded
    if getattr(value, "ndim", 0) and hasattr(value, "tolist"):
        # numpy (or torch) arrays: `.item()` only works for one element, so go through lists
        return _normalise(value.tolist(), path)
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, Mapping):
        # numpy scalars and 0-d arrays
        return _normalise(value.item(), path)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise ValueError(f"canonical_json: non-string key {key!r} at {path or '$'}")
        # built in sorted key order, so the normalised value iterates like its JSON round trip
        return {key: _normalise(value[key], f"{path}.{key}") for key in sorted(value)}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if hasattr(value, "tolist"):
        return _normalise(value.tolist(), path)
    raise ValueError(f"canonical_json: unsupported type {type(value).__name__} at {path or '$'}")


def canonical_json(value: object) -> str:
    """Sorted keys, no whitespace, stable float formatting, UTF-8 (non-ASCII kept as is)."""
    return json.dumps(
        _normalise(value, ""),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


@overload
def canonical_form(value: Mapping[str, object]) -> tuple[JsonObject, str]: ...


@overload
def canonical_form(value: object) -> tuple[JsonValue, str]: ...


def canonical_form(value: object) -> tuple[JsonValue, str]:
    """The canonical value (what `json.loads(canonical_json(value))` gives) and its text, with
    one normalisation pass (the recorder's fast path)."""
    normal = _normalise(value, "")
    text = json.dumps(
        normal, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return normal, text


def canonical_bytes(value: object) -> bytes:
    return canonical_json(value).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_json(value: object) -> str:
    """Content hash of a JSON-able value under the current hash scheme."""
    return sha256_bytes(canonical_bytes(value))


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def short_hash(value: object, length: int = 16) -> str:
    return sha256_json(value)[:length]
