"""labreplay: recorded experiments -> frozen, budgeted evaluation environments for AI agents."""

# `labreplay.compile` is the function, not the package of that name: the package is imported
# before the function is bound (it is cheap: its names load on first use), so that importing
# `labreplay.compile.spec` later does not bind the package over the function.
import labreplay.compile as _compile_package  # noqa: F401
from labreplay._version import __version__
from labreplay.agents.contracts import (
    CampaignAgent,
    Configuration,
    Observation,
    Optimizer,
    OptimizerHistory,
    QuestionAgent,
    Snapshot,
    Trial,
)
from labreplay.api import compile, run
from labreplay.errors import (
    AgentError,
    DataError,
    LabreplayError,
    SpecError,
    StoreError,
)
from labreplay.suite import list_suites

__all__ = [
    "AgentError",
    "CampaignAgent",
    "Configuration",
    "DataError",
    "LabreplayError",
    "Observation",
    "Optimizer",
    "OptimizerHistory",
    "QuestionAgent",
    "Snapshot",
    "SpecError",
    "StoreError",
    "Trial",
    "__version__",
    "compile",
    "list_suites",
    "run",
]
