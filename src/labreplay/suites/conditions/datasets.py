"""The built-in screening datasets: names, loading, and the per-source loader the manifest names.

The declarations (which file, which columns, which `TableRule`) live in `adapters`;
`load_source` returns the tables of every dataset in one manifest source.
"""

from __future__ import annotations

from pathlib import Path

from labreplay.suites.conditions.adapters import ADAPTERS, NOT_COMPILED
from labreplay.suites.conditions.tables import ScreeningTable, TableRule, build_tables

__all__ = ["ADAPTERS", "NOT_COMPILED", "dataset_names", "load_source", "load_tables"]


def dataset_names() -> list[str]:
    return list(ADAPTERS)


def load_tables(
    name: str, data_dir: Path, seed: int = 0, rule: TableRule | None = None
) -> list[ScreeningTable]:
    from labreplay.errors import DataError

    if name not in ADAPTERS:
        raise DataError(f"unknown conditions dataset (known: {', '.join(ADAPTERS)})", value=name)
    adapter = ADAPTERS[name]
    rule = rule or adapter.rule
    return build_tables(adapter.read(data_dir, rule), rule, seed)


def load_source(source: str, data_dir: Path, seed: int = 0) -> list[ScreeningTable]:
    """The tables of one manifest source (the loader the manifest names)."""
    return [
        t
        for a in ADAPTERS.values()
        if a.source == source
        for t in load_tables(a.name, data_dir, seed)
    ]
