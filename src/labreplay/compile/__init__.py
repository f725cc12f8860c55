"""Partition + Bind: records -> frozen, content-hashed environment specs.

The names are imported from `labreplay.compile.spec` on first use (PEP 562): `import labreplay`
imports this package (see `labreplay/__init__.py`) and must not pay for pydantic.
"""

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.compile.spec import EnvironmentSpec, load_spec, write_spec

__all__ = ["EnvironmentSpec", "load_spec", "write_spec"]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(
        __name__, globals(), {"labreplay.compile.spec": tuple(__all__)}
    )
