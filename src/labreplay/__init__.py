"""labreplay: recorded experiments -> frozen, budgeted evaluation environments for AI agents."""

from labreplay.errors import (
    ActionError,
    AgentError,
    BudgetError,
    DataError,
    LabreplayError,
    SpecError,
    StoreError,
)
from labreplay.suite import list_suites

__version__ = "0.1.0"

__all__ = [
    "ActionError",
    "AgentError",
    "BudgetError",
    "DataError",
    "LabreplayError",
    "SpecError",
    "StoreError",
    "__version__",
    "list_suites",
]
