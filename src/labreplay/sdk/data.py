"""Data files for suite authors: where the data directory and cached files are, the pinned
checksums of the sources, and strict JSON loading with size limits.

    from labreplay.sdk.data import data_file, resolve_data_dir, loads_strict

Names are imported from the core on first use (PEP 562), so importing this module is cheap
and a name costs what importing it from its core module did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.records.checked import checked_digests
    from labreplay.records.manifest import sources
    from labreplay.records.sources import ENV_CACHE_DIR, data_file, resolve_data_dir
    from labreplay.safe_json import JsonLimitError, loads_strict

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.records.checked": ("checked_digests",),
    "labreplay.records.manifest": ("sources",),
    "labreplay.records.sources": (
        "ENV_CACHE_DIR",
        "data_file",
        "resolve_data_dir",
    ),
    "labreplay.safe_json": (
        "JsonLimitError",
        "loads_strict",
    ),
}

__all__ = [
    "ENV_CACHE_DIR",
    "JsonLimitError",
    "checked_digests",
    "data_file",
    "loads_strict",
    "resolve_data_dir",
    "sources",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
