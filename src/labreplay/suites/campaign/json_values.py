"""Narrowing for the campaign's JSON (spec bodies, agent replies, stored rows).

Parsed JSON is typed `object` until a reader says what it expects; these helpers check it
and name the expectation when the value is something else (the same malformed value
previously failed on the first index or call, with a less helpful message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def json_object(value: object, what: str = "value") -> Mapping[str, object]:
    """`value` as a JSON object (TypeError when it is not a mapping)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}: expected a JSON object, got {type(value).__name__}")
    return value


def json_list(value: object, what: str = "value") -> Sequence[object]:
    """`value` as a JSON array (TypeError when it is not a list or tuple)."""
    if not isinstance(value, list | tuple):
        raise TypeError(f"{what}: expected a JSON array, got {type(value).__name__}")
    return value


def json_number(value: object, what: str = "value") -> float:
    """`value` as a float (TypeError for a bool, a string or anything not a number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what}: expected a number, got {type(value).__name__}")
    return float(value)


__all__ = ["json_list", "json_number", "json_object"]
