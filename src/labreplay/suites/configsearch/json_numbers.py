"""Numbers read from JSON this suite did not type (reference files, an optimiser's suggestion):
`float()` and `int()` that a type checker can follow, raising exactly what the builtins raise
on a value that is no number, so a malformed file or suggestion fails as it always did."""

from __future__ import annotations

from typing import SupportsFloat, SupportsIndex, SupportsInt


def as_float(value: object) -> float:
    """float(value), for a value typed `object`."""
    if isinstance(value, int | float | str):  # the JSON numbers first: no protocol check
        return float(value)
    if isinstance(value, bytes | bytearray | SupportsFloat | SupportsIndex):
        return float(value)
    raise TypeError(
        f"float() argument must be a string or a real number, not '{type(value).__name__}'"
    )


def as_int(value: object) -> int:
    """int(value), for a value typed `object`."""
    if isinstance(value, int | float | str):  # the JSON numbers first: no protocol check
        return int(value)
    if isinstance(value, bytes | bytearray | SupportsInt | SupportsIndex):
        return int(value)
    raise TypeError(
        "int() argument must be a string, a bytes-like object or a real number, not "
        f"'{type(value).__name__}'"
    )


__all__ = ["as_float", "as_int"]
