"""The typed record model.

A recorded experiment is split in two: `descriptors` (what an agent may see before the result is
known) and the evaluator-private `outcome` and `evidence`. Every field holds a value or a
`Missing(reason)`: a recorded absence is information, so it is kept, typed, and never filled in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

MISSING_TAG = "__missing__"


@dataclass(frozen=True, slots=True)
class Missing:
    """A field the record does not hold, with the reason it does not."""

    reason: str

    def to_json(self) -> dict[str, str]:
        return {MISSING_TAG: self.reason}

    def __bool__(self) -> bool:  # a Missing is never truthy, so `if value:` cannot hide it
        return False


def is_missing(value: object) -> bool:
    return isinstance(value, Missing)


def value_or(value: T | Missing, default: T) -> T:
    return default if isinstance(value, Missing) else value


def to_json(value: object) -> object:
    """Recursively turn Missing into its tagged JSON form."""
    if isinstance(value, Missing):
        return value.to_json()
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def from_json(value: Any) -> Any:
    """Inverse of `to_json`."""
    if isinstance(value, Mapping):
        if set(value) == {MISSING_TAG}:
            return Missing(str(value[MISSING_TAG]))
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


@dataclass(frozen=True)
class Record:
    """One recorded experiment, split by visibility.

    `descriptors` may be shown to an agent at any time. `outcome` and `evidence` are evaluator
    private: evidence items reach an agent only through a paid reveal, the outcome never does.
    """

    record_id: str
    source: str
    descriptors: Mapping[str, Any]
    outcome: Mapping[str, Any]
    evidence: Mapping[str, Any] = field(default_factory=dict)
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "record_id": self.record_id,
            "source": self.source,
            "descriptors": to_json(self.descriptors),
            "outcome": to_json(self.outcome),
            "evidence": to_json(self.evidence),
            "provenance": to_json(self.provenance),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        return cls(
            record_id=str(data["record_id"]),
            source=str(data["source"]),
            descriptors=from_json(data["descriptors"]),
            outcome=from_json(data["outcome"]),
            evidence=from_json(data.get("evidence", {})),
            provenance=from_json(data.get("provenance", {})),
        )
