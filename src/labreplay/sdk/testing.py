"""Testing helpers a suite's own checks use: the firewall canary and the schema-answering stub
model behind dry runs. (`labreplay.testing` is the kit for agent authors; these are the parts a
suite needs at run time.)

    from labreplay.sdk.testing import CANARY, FINISHING, instance

Names are imported from the core on first use (PEP 562), so importing this module is cheap
and a name costs what importing it from its core module did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.testing.checks import CANARY
    from labreplay.testing.schema_server import FINISHING, instance

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.testing.checks": ("CANARY",),
    "labreplay.testing.schema_server": (
        "FINISHING",
        "instance",
    ),
}

__all__ = [
    "CANARY",
    "FINISHING",
    "instance",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
