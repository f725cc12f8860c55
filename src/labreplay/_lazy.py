"""Lazy re-exports (PEP 562) for the SDK's facade modules and the core's packages.

A facade module lists, per core module, the names it re-exports; a name's core module is
imported on first access, so `from labreplay.sdk.engine import Store` costs what
`from labreplay.store.sqlite import Store` did, and importing a facade imports nothing else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    module: str, namespace: dict[str, Any], sources: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a facade: `sources` maps core module -> names."""
    where = {name: source for source, names in sources.items() for name in names}

    def __getattr__(name: str) -> Any:
        source = where.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
