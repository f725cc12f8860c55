"""labreplay: recorded experiments -> frozen, budgeted evaluation environments for AI agents."""

from labreplay._version import __version__
from labreplay.api import compile, run
from labreplay.errors import (
    AgentError,
    DataError,
    LabreplayError,
    SpecError,
    StoreError,
)
from labreplay.runtime.trajectory import Event
from labreplay.suite import list_suites

__all__ = [
    "AgentError",
    "DataError",
    "Event",
    "LabreplayError",
    "SpecError",
    "StoreError",
    "__version__",
    "compile",
    "list_suites",
    "run",
]
