"""Preserve: typed records loaded from real datasets, and the manifest of every source."""

from labreplay.records._types import Missing, Record, is_missing, value_or

__all__ = ["Missing", "Record", "is_missing", "value_or"]
